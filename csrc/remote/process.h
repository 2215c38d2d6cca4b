/* envd's Process service (SPEC §15, reference/remote.md): start a command
 * and follow its events, reattach to one by pid, and the calls that act on
 * a running one (stdin, signals). The remote runner builds the local
 * runner's semantics (timeouts, caps, background handles, tree kill) on
 * these.
 *
 * What E2B's users trip over, here by construction: a start without a
 * deadline sends no Connect-Timeout-Ms (E2B #1074: the SDK's default 60 s
 * kills background processes); a deadline, when given, is the process's
 * whole lifetime on the engine (envd kills it there); every stream asks for
 * keepalives and fails with EIO when it goes quiet past its idle limit
 * (#1128); a process outlives its stream and is reattached with
 * sb_envd_attach. */
#ifndef SB_REMOTE_PROCESS_H
#define SB_REMOTE_PROCESS_H

#include "remote/envd.h"

typedef struct sb_rproc_spec {
  const char *cmd;
  const char *const *args; /* NULL-terminated, or NULL */
  const char *const *env; /* name, value, ..., NULL, or NULL */
  const char *cwd; /* NULL: the user's home */
  const char *tag; /* NULL: none */
  bool stdin_open; /* false: envd gives the process no stdin pipe */
  double deadline; /* seconds the engine lets it live; 0: no deadline */
  double keepalive; /* seconds between envd's keepalives; 0: 1 s */
} sb_rproc_spec;

typedef enum sb_rev_kind { SB_REV_START, SB_REV_STDOUT, SB_REV_STDERR, SB_REV_END, SB_REV_KEEPALIVE } sb_rev_kind;

/* One event; bytes and strings live until the callback returns. */
typedef struct sb_rproc_event {
  sb_rev_kind kind;
  uint32_t pid; /* START */
  const char *data; /* STDOUT, STDERR: the bytes (decoded) */
  size_t len;
  int exit_code; /* END: -1 when it did not exit (a signal) */
  bool exited;
  const char *status; /* END: envd's words ("exit status 3", "signal: killed") */
  const char *error; /* END: why it could not run, or NULL */
  bool timed_out; /* END: the start's deadline ended it (the engine killed it) */
} sb_rproc_event;

typedef sb_code (*sb_rproc_fn)(void *ud, const sb_rproc_event *ev, sb_err *e);

/* Start and follow to the end (or until fn stops it: the process goes on).
 * A stream that the deadline ends before the process's end event (envd
 * kills the process at its deadline and closes the stream) ends with an END
 * event of its own, timed_out set; any other stream that ends before the
 * process's end is EIO. */
sb_code sb_envd_start(const sb_mem *m, const sb_envd *d, const sb_rproc_spec *s, sb_rproc_fn fn, void *ud, sb_err *e);
/* Follow a running process again (its start, then what comes next). */
sb_code sb_envd_attach(const sb_mem *m, const sb_envd *d, uint32_t pid, double keepalive, sb_rproc_fn fn, void *ud,
                       sb_err *e);
sb_code sb_envd_input(const sb_mem *m, const sb_envd *d, uint32_t pid, const char *data, size_t len, sb_err *e);
sb_code sb_envd_close_stdin(const sb_mem *m, const sb_envd *d, uint32_t pid, sb_err *e);
/* sig: 15 (SIGTERM) or 9 (SIGKILL), the two envd knows. */
sb_code sb_envd_signal(const sb_mem *m, const sb_envd *d, uint32_t pid, int sig, sb_err *e);

#endif
