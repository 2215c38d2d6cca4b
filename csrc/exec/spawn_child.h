/* The command's side of a spawn, from its first instruction to execve: the
 * same code whether the host spawned it directly (exec/spawn.c) or the
 * sandbox's zygote did (exec/zygote.c). It runs in a vfork-style child:
 * system calls only. */
#ifndef SB_EXEC_SPAWN_CHILD_H
#define SB_EXEC_SPAWN_CHILD_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "exec/spawn.h"

/* Steps a spawn can fail at (what sb_spawn_res.step names). */
enum {
  SB_SP_SETSID,
  SB_SP_CGROUP,
  SB_SP_STDIO,
  SB_SP_CWD,
  SB_SP_PDEATHSIG,
  SB_SP_EXEC,
  SB_SP_CLONE2,
  SB_SP_CLONE,
  SB_SP_ZYGOTE, /* the zygote could not take its layers' setup */
  SB_SP_CONFINE = 100, /* + the confinement's own step (confine/child.h) */
  SB_SP_COMMAND = 1000, /* not a failure: the command's pid */
  SB_SP_BORN /* not a failure: a child born in its leaf runs (the first such of a sandbox says so) */
};

/* What a child says through the error pipe (EOF: the command runs). */
typedef struct sb_child_msg {
  int err, step;
  pid_t pid;
} sb_child_msg;

typedef struct sb_spawn_child {
  const sb_spawn_req *req;
  pid_t ppid; /* the parent the command must see: the host, or 0 from a PID namespace */
  int errfd; /* write end of the error pipe (close-on-exec) */
  bool reset_signals; /* the spawning process has handlers of the host's */
  bool join_cgroups; /* the command joins its cgroups itself */
  bool born_in_cgroup; /* the clone made it in cgroup_procs_fds[0]'s leaf: joins the rest */
  bool join; /* ... and the sandbox's namespaces (setns) */
  bool layers; /* ... and takes the layers (else its spawner holds them) */
  char pathbuf[PATH_MAX + NAME_MAX + 2];
} sb_spawn_child;

/* The clone function: set up, confine as asked, exec. Never returns. */
int sb_spawn_command(void *arg);
/* Report the failed step through the error pipe and _exit(127). */
_Noreturn void sb_spawn_child_fail(sb_spawn_child *c, int step);
/* The name of a step (SB_SP_*, or SB_SP_CONFINE + the confinement's). */
const char *sb_spawn_step_name(int step);

#endif
