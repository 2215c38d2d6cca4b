#include "exec/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* In a child: close every descriptor above 2 but keep1 and keep2 (-1: none).
 * Also what keeps a child from holding another thread's pipes open. */
SB_CHILD_FN void sb_child_close_fds(int keep1, int keep2) {
  int a = keep1 < keep2 ? keep1 : keep2, b = keep1 < keep2 ? keep2 : keep1;
  unsigned lo = 3;
  bool ok = true;
  for (int k = 0; k < 2 && ok; k++) {
    int keep = k == 0 ? a : b;
    if (keep < 3) continue;
    if ((unsigned)keep > lo) ok = syscall(SYS_close_range, lo, (unsigned)keep - 1, 0) == 0;
    lo = (unsigned)keep + 1;
  }
  if (ok) ok = syscall(SYS_close_range, lo, ~0U, 0) == 0;
  if (!ok) /* kernels before 5.9 */
    for (int fd = 3; fd < 65536; fd++)
      if (fd != keep1 && fd != keep2) close(fd);
}

/* The failed step travels back through a close-on-exec pipe (EOF = the
 * command runs): it works whether or not the child shares our memory
 * (valgrind, for one, turns a vfork-like clone into a fork). */
static const char *const steps_names[] = {"setsid", "cgroup", "stdio", "cwd", "pdeathsig", "exec"};
enum { ST_SETSID, ST_CGROUP, ST_STDIO, ST_CWD, ST_PDEATHSIG, ST_EXEC, ST_CONFINE = 100 };

typedef struct child_ctx {
  const sb_spawn_req *req;
  pid_t host; /* the process spawning it */
  int errfd; /* write end of the error pipe */
  char pathbuf[PATH_MAX + NAME_MAX + 2];
} child_ctx;

/* Everything below runs in the child: raw system calls only (no malloc, no
 * locks, no glibc set*id broadcast: the address space is the host's). It
 * runs on its own small stack (SB_CHILD_FN). */
#define CHILD SB_CHILD_FN

CHILD static _Noreturn void child_fail(child_ctx *c, int step) {
  int msg[2] = {errno, step};
  ssize_t w = write(c->errfd, msg, sizeof msg);
  (void)w;
  _exit(127);
}
#define FAIL(c, what) child_fail(c, what)

CHILD static void exec_search(child_ctx *c, const sb_spawn_req *r) {
  const char *file = r->file;
  if (strchr(file, '/')) {
    execve(file, r->argv, r->envp);
    return;
  }
  const char *p = r->path ? r->path : "";
  size_t flen = strlen(file);
  int seen_eacces = 0;
  while (*p) {
    const char *end = strchr(p, ':');
    size_t dlen = end ? (size_t)(end - p) : strlen(p);
    if (dlen == 0) { /* an empty entry means the current directory */
      p = end ? end + 1 : p + dlen;
      continue;
    }
    if (dlen + 1 + flen < sizeof c->pathbuf) {
      memcpy(c->pathbuf, p, dlen);
      c->pathbuf[dlen] = '/';
      memcpy(c->pathbuf + dlen + 1, file, flen + 1);
      execve(c->pathbuf, r->argv, r->envp);
      if (errno == EACCES) seen_eacces = 1;
      else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) return;
    }
    p = end ? end + 1 : p + dlen;
  }
  errno = seen_eacces ? EACCES : ENOENT;
}

CHILD static int child_main(void *arg) {
  child_ctx *c = arg;
  const sb_spawn_req *r = c->req;
  const sb_confine_steps *s = r->steps;

  /* Handlers of the host must never run here; ignored signals are reset. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < _NSIG; sig++) {
    struct sigaction cur;
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    /* the wrapper converts to the kernel's layout; no lock, no allocation */
    if (sigaction(sig, NULL, &cur) == 0 && cur.sa_handler != SIG_DFL) sigaction(sig, &dfl, NULL);
  }
  if (setsid() < 0) FAIL(c, ST_SETSID);
  for (int i = 0; i < SB_MAX_CGROUPS; i++)
    if (r->cgroup_procs_fds[i] >= 0 && write(r->cgroup_procs_fds[i], "0", 1) != 1) FAIL(c, ST_CGROUP);
  if (dup2(r->stdin_fd, 0) < 0 || dup2(r->stdout_fd, 1) < 0 || dup2(r->stderr_fd, 2) < 0)
    FAIL(c, ST_STDIO);
  if (r->cwd_fd >= 0 && fchdir(r->cwd_fd) != 0) FAIL(c, ST_CWD);
  int step;
  if (s && (step = sb_confine_enter(s)) != 0) FAIL(c, ST_CONFINE + step);
  /* a host that dies without disposing (SIGKILL, a crash) takes the leader
   * with it; the rest of its tree then has no parent to hold on to. After
   * the identity change, which would clear it; checked against the host
   * having died already. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != c->host) FAIL(c, ST_PDEATHSIG);
  if (s && (step = sb_confine_restrict(s)) != 0) FAIL(c, ST_CONFINE + step);
  /* No descriptor of the host survives: Landlock does not cover files
   * opened before it, so this is part of the confinement too. Only the
   * error pipe stays, and it closes itself at exec. */
  sb_child_close_fds(c->errfd, -1);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  exec_search(c, r);
  FAIL(c, ST_EXEC);
}

int sb_spawn(const sb_spawn_req *req, sb_spawn_res *res) {
  child_ctx c;
  c.req = req;
  c.host = getpid();
  res->pid = -1;
  res->pidfd = -1;
  res->err = 0;
  res->step = NULL;
  int ep[2];
  if (pipe2(ep, O_CLOEXEC) != 0) {
    res->err = errno;
    res->step = "pipe";
    return -1;
  }
  c.errfd = ep[1];

  /* Block every signal so nothing is delivered to the child before it has
   * reset the handlers it shares with the host (as glibc posix_spawn). */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int pidfd = -1;
  int flags = CLONE_VM | CLONE_VFORK | (req->no_pidfd ? 0 : CLONE_PIDFD);
  pid_t pid = clone(child_main, (char *)req->stack + SB_SPAWN_STACK, flags, &c, &pidfd);
  int cerr = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  close(ep[1]);
  if (pid < 0) {
    close(ep[0]);
    res->err = cerr;
    res->step = "clone";
    return -1;
  }
  int msg[2];
  ssize_t n;
  while ((n = read(ep[0], msg, sizeof msg)) < 0 && errno == EINTR) {}
  close(ep[0]);
  if (n == (ssize_t)sizeof msg) { /* the child failed before exec and exited */
    int status;
    while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {}
    if (pidfd >= 0 && !req->no_pidfd) close(pidfd);
    res->err = msg[0];
    res->step = msg[1] >= ST_CONFINE ? sb_confine_step_name(msg[1] - ST_CONFINE)
                : (unsigned)msg[1] < sizeof steps_names / sizeof *steps_names ? steps_names[msg[1]] : "spawn";
    return -1;
  }
  res->pid = pid;
  res->pidfd = req->no_pidfd ? -1 : pidfd;
  return 0;
}

int sb_spawn_reap(pid_t pid, int pidfd, int *status) {
  if (pidfd >= 0) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG | __WALL) != 0) return -1;
    if (si.si_pid == 0) return 0;
    if (si.si_code == CLD_EXITED) *status = (si.si_status & 0xff) << 8;
    else *status = (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
    return 1;
  }
  pid_t r = waitpid(pid, status, WNOHANG | __WALL);
  return r < 0 ? -1 : r == 0 ? 0 : 1;
}
