/* The remote runner (exec/runner.h): commands run by envd's Process service
 * inside a remote sandbox (SPEC §15), with the local runner's semantics.
 *
 * Each command's event stream is read by a thread of its own (a blocking
 * libcurl stream, with keepalives and the idle limit of remote/client.h);
 * the thread hands events to the loop through a queue and a wake-up fd, and
 * everything the binding sees — output caps, the h:read queues, timeouts
 * (SIGTERM, kill_grace, SIGKILL), results — happens on the loop's thread,
 * exactly as in exec/local.c. A stream that drops while its process runs is
 * reattached (envd's Connect by pid) and resumes; a process lost for good
 * ends with status_lost and the reason in `error`.
 *
 * The whole tree is killed as locally — at a timeout, by kill, at dispose,
 * and whatever is left when the command ends — through the wrapper
 * (remote/tree.h) or the engine-side helper (remote/helper.h) every command
 * runs under, which also answer "not found" and
 * "not executable" before anything runs. A full h:read queue holds the
 * stream's thread in its callback, so the link, envd's pipe and the command
 * wait, as a full pipe makes a local command wait (the idle limit does not
 * count that time). */
#ifndef SB_EXEC_REMOTE_H
#define SB_EXEC_REMOTE_H

#include "exec/runner.h"
#include "fs/backend.h"
#include "remote/envd.h"

#define SB_RR_GUARD_IDLE 600

typedef struct sb_remote_runner_config {
  double grace; /* seconds from SIGTERM to SIGKILL */
  size_t max_output; /* bytes kept per stream (head + tail), and the h:read queue */
  sb_fs *fs; /* the remote backend: working directories resolve there */
  const sb_envd *envd; /* valid while the runner lives */
  const char *root; /* the backend's root, absolute */
  bool login; /* commands read the login profile first (remote/tree.h) */
  double guard_idle; /* seconds the deadline guard lives without a command; 0: SB_RR_GUARD_IDLE */
  bool helper; /* commands run under the engine-side helper once it is uploaded (remote/helper.h) */
} sb_remote_runner_config;

/* A runner; NULL with e when it cannot be made (OOM, no wake-up fd). */
sb_runner *sb_remote_runner(const sb_mem *m, const sb_remote_runner_config *cfg, sb_err *e);

#endif
