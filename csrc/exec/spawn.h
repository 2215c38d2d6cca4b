/* Spawning a command: clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD), the
 * mechanism posix_spawn uses (no copy of the host's address space: a host
 * with a 1 GiB heap spawns as fast as a small one), with room for the steps
 * posix_spawn cannot take before execve: joining a cgroup, resource limits,
 * namespaces, Landlock, dropping privileges. The child is watched and reaped
 * through its pidfd. (The kernel resets the exit signal to SIGCHLD at execve:
 * a host that sets SIGCHLD to SIG_IGN, or reaps every child with
 * waitpid(-1), takes the exit status away; the exit is still seen.) */
#ifndef SB_EXEC_SPAWN_H
#define SB_EXEC_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

/* Steps the child applies to itself, in this order, before execve. Filled by
 * the confinement layer; all optional. */
#define SB_MAX_CGROUPS 4

typedef struct sb_confine_steps {
  int cgroup_procs_fds[SB_MAX_CGROUPS]; /* write "0" to each to join; -1 = none */
  int nrlimits;
  struct {
    int resource;
    struct rlimit lim;
  } rlimits[8];
  int join_userns_fd;    /* setns() into these (the sandbox's network), -1 = stay */
  int join_netns_fd;
  bool drop_user;        /* setgroups(0), setgid, setuid */
  uid_t uid;
  gid_t gid;
  bool no_new_privs;
  int landlock_ruleset_fd; /* landlock_restrict_self(fd, flags); -1 = none */
  unsigned landlock_flags;
} sb_confine_steps;

typedef struct sb_spawn_req {
  const char *file;  /* argv[0]: with a '/', used as is; else searched in PATH */
  char *const *argv;
  char *const *envp; /* the child's whole environment */
  const char *path;  /* PATH for the search (from envp), NULL = default */
  int cwd_fd;        /* the child starts here (fchdir), -1 = inherit */
  int stdin_fd, stdout_fd, stderr_fd; /* child ends of the pipes */
  const sb_confine_steps *steps;      /* NULL = none */
  void *stack;       /* child stack, SB_SPAWN_STACK bytes, reused by the caller */
  bool no_pidfd;     /* test switch: spawn without CLONE_PIDFD */
} sb_spawn_req;

#define SB_SPAWN_STACK (64 * 1024)

/* For functions that run in a child on a stack of our own (a clone child):
 * sanitizer runtimes do not know that stack, keep their instrumentation out. */
#if defined(__GNUC__)
#define SB_CHILD_FN __attribute__((no_sanitize_address, no_sanitize("undefined"), noinline))
#else
#define SB_CHILD_FN
#endif

/* In a child before exec (or _exit): close every fd above 2 but keep1 and
 * keep2 (-1: none). */
void sb_child_close_fds(int keep1, int keep2);

typedef struct sb_spawn_res {
  pid_t pid;
  int pidfd;       /* -1 when spawned without one */
  int err;         /* errno of a failed step (0 = the command runs) */
  const char *step; /* which step failed: "exec", "cwd", "landlock", ... */
} sb_spawn_res;

/* Returns 0 with res->pid set, or -1 with res->err/step (the child, if one
 * was created, is already reaped). Async-signal-safe in the child. */
int sb_spawn(const sb_spawn_req *req, sb_spawn_res *res);

/* Reap the exited child without blocking: 1 reaped (status as for waitpid),
 * 0 still running, -1 error. */
int sb_spawn_reap(pid_t pid, int pidfd, int *status);

#endif
