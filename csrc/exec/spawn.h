/* Spawning a command: clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD), the
 * mechanism posix_spawn uses (no copy of the host's address space: a host
 * with a 1 GiB heap spawns as fast as a small one), with room for the steps
 * posix_spawn cannot take before execve: joining the command's cgroups (born
 * in the v2 leaf by clone3 where the kernel allows it), the
 * confinement steps (confine/child.h), tying it to the host's life. The child is watched and reaped
 * through its pidfd. (The kernel resets the exit signal to SIGCHLD at execve:
 * a host that sets SIGCHLD to SIG_IGN, or reaps every child with
 * waitpid(-1), takes the exit status away; the exit is still seen.) */
#ifndef SB_EXEC_SPAWN_H
#define SB_EXEC_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "base/child.h"
#include "confine/child.h"

#define SB_MAX_CGROUPS 4

typedef struct sb_spawn_req {
  const char *file; /* argv[0]: with a '/', used as is; else searched in PATH */
  char *const *argv;
  char *const *envp; /* the child's whole environment */
  const char *path; /* PATH for the search (from envp; the binding always gives one) */
  int cwd_fd; /* the child starts here (fchdir), -1 = inherit ... */
  const char *cwd_rel; /* ... or, in a mount view (steps->view_root), at this path beneath the root */
  int stdin_fd, stdout_fd, stderr_fd; /* child ends of the pipes */
  int cgroup_procs_fds[SB_MAX_CGROUPS]; /* write "0" to each to join; -1 = none */
  int cgroup_into_fd; /* the v2 leaf of cgroup_procs_fds[0]: the child is born there where
                         clone3 allows (no write, no migration); -1 = join by write */
  const sb_confine_steps *steps; /* NULL = none */
  void *stack; /* two child stacks, 2 * SB_SPAWN_STACK bytes, reused by the caller */
  bool no_pidfd; /* test switch: spawn without CLONE_PIDFD */
  bool no_close_range; /* test switch: the child closes the host's fds one by one */
  bool no_clone3; /* test switch: clone and join by write, as where clone3 is refused */
  bool born_unverified; /* no child born in a leaf has run yet: the first says it runs (see born_in) */
  struct sb_zygote *zygote; /* spawn through it when it takes the request (exec/zygote.h); NULL = directly */
} sb_spawn_req;

#define SB_SPAWN_STACK (64 * 1024)

typedef struct sb_spawn_res {
  pid_t pid;
  int pidfd; /* -1 when spawned without one */
  int err; /* errno of a failed step (0 = the command runs) */
  const char *step; /* which step failed: "exec", "cwd", "landlock", ... */
  int born_in; /* with born_unverified: 1 the child born in its leaf ran, -1 the kernel killed it at
                  birth (then it was spawned again, joining by write), 0 not tried */
} sb_spawn_res;

/* Returns 0 with res->pid set, or -1 with res->err/step (the child, if one
 * was created, is already reaped). Async-signal-safe in the child. */
int sb_spawn(const sb_spawn_req *req, sb_spawn_res *res);

/* Reap the exited child without blocking: 1 reaped (status as for waitpid),
 * 0 still running, -1 error. */
int sb_spawn_reap(pid_t pid, int pidfd, int *status);

#endif
