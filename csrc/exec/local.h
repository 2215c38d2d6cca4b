/* The local runner (exec/runner.h): commands spawned on this host, one
 * libuv loop per sandbox driving their pipes, timers and exit
 * notifications. It works over any backend with a command tree
 * (sb_backend_cmd): the backend gives the working directory's fd and learns
 * when a command ran. Confinement and limits are decided elsewhere
 * (confine/) and handed in; the runner applies them per command. */
#ifndef SB_EXEC_LOCAL_H
#define SB_EXEC_LOCAL_H

#include "confine/child.h"
#include "confine/limits.h"
#include "exec/runner.h"
#include "fs/backend.h"

typedef struct sb_local_config {
  double grace; /* seconds from SIGTERM to SIGKILL */
  double drain; /* seconds to drain output after the leader exits */
  size_t max_output; /* bytes kept per stream (head + tail), and the h:read queue */
  sb_fs *fs; /* the tree commands run over (its backend has `cmd`) */
  const sb_confine_steps *steps; /* applied by every child; NULL = none */
  sb_limits *limits; /* cgroups for tree kill and limits; NULL = process group only */
  bool no_pidfd; /* test switch: watch exits by polling */
  bool no_close_range; /* test switch: children close the host's fds one by one */
  bool no_zygote; /* test switch: every confined command spawned directly */
  bool no_clone3; /* test switch: children join their cgroup leaf by a write */
} sb_local_config;

/* A runner (the loop is created at the first command). NULL with e on OOM. */
sb_runner *sb_local_runner(const sb_mem *m, const sb_local_config *cfg, sb_err *e);
/* Does this kernel give pidfds? */
bool sb_local_have_pidfd(void);

#endif
