#include "exec/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plat/fd.h"
#include "plat/resolve.h"
#include "plat/proc.h"

/* The failed step travels back through a close-on-exec pipe (EOF = the
 * command runs): it works whether or not the child shares our memory
 * (valgrind, for one, turns a vfork-like clone into a fork). */
static const char *const steps_names[] = {
    "setsid", "cgroup", "stdio", "cwd", "pdeathsig", "exec", "entering the PID namespace"};
enum {
  ST_SETSID,
  ST_CGROUP,
  ST_STDIO,
  ST_CWD,
  ST_PDEATHSIG,
  ST_EXEC,
  ST_CLONE2,
  ST_CONFINE = 100,
  ST_COMMAND = 1000 /* not a failure: the command's pid, from the first child */
};

typedef struct child_ctx {
  const sb_spawn_req *req;
  pid_t host; /* the process spawning it */
  int errfd; /* write end of the error pipe */
  char pathbuf[PATH_MAX + NAME_MAX + 2];
} child_ctx;

/* What a child says through the error pipe. */
typedef struct child_msg {
  int err, step;
  pid_t pid;
} child_msg;

/* Everything below runs in the child: raw system calls only (no malloc, no
 * locks, no glibc set*id broadcast: the address space is the host's). It
 * runs on its own small stack (SB_CHILD_FN). */
#define CHILD SB_CHILD_FN

CHILD static _Noreturn void child_fail(child_ctx *c, int step) {
  child_msg m = {errno, step, 0};
  ssize_t w = write(c->errfd, &m, sizeof m);
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

/* The working directory in the command's mount view: the root's path
 * there, then the path beneath it the host resolved (still beneath). */
CHILD static int view_cwd(const sb_confine_steps *s, const char *rel) {
  int root = open(s->view_root, SB_O_DIR | O_CLOEXEC);
  if (root < 0) return -1;
  int fd = rel && rel[0] ? sb_openat_beneath(root, rel, SB_O_DIR) : root;
  int r = fd < 0 ? -1 : fchdir(fd);
  if (fd >= 0 && fd != root) close(fd);
  close(root);
  return r;
}

/* The command itself: set up, confine, exec. */
CHILD static int command_main(void *arg) {
  child_ctx *c = arg;
  const sb_spawn_req *r = c->req;
  const sb_confine_steps *s = r->steps;
  bool in_pidns = sb_confine_joins_pid(s);

  /* Handlers of the host must never run here; ignored signals are reset. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction cur;
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    /* the wrapper converts to the kernel's layout; no lock, no allocation */
    if (sigaction(sig, NULL, &cur) == 0 && cur.sa_handler != SIG_DFL) sigaction(sig, &dfl, NULL);
  }
  if (setsid() < 0) FAIL(c, ST_SETSID);
  for (int i = 0; !in_pidns && i < SB_MAX_CGROUPS; i++) /* else joined by the first child */
    if (r->cgroup_procs_fds[i] >= 0 && write(r->cgroup_procs_fds[i], "0", 1) != 1) FAIL(c, ST_CGROUP);
  if (dup2(r->stdin_fd, 0) < 0 || dup2(r->stdout_fd, 1) < 0 || dup2(r->stderr_fd, 2) < 0) FAIL(c, ST_STDIO);
  int step;
  if (!in_pidns && s && (step = sb_confine_join(s)) != 0) FAIL(c, ST_CONFINE + step);
  if (s && s->view_root[0]) {
    if (view_cwd(s, r->cwd_rel) != 0) FAIL(c, ST_CWD);
  } else if (r->cwd_fd >= 0 && fchdir(r->cwd_fd) != 0) {
    FAIL(c, ST_CWD);
  }
  if (s && (step = sb_confine_enter(s)) != 0) FAIL(c, ST_CONFINE + step);
  /* a host that dies without disposing (SIGKILL, a crash) takes the leader
   * with it; the rest of its tree then has no parent to hold on to. After
   * the identity change, which would clear it; checked against the host
   * having died already (in a PID namespace the parent outside shows as 0,
   * and the namespace's init dies with the host anyway). */
  if (sb_die_with_parent() != 0 || getppid() != (in_pidns ? 0 : c->host)) FAIL(c, ST_PDEATHSIG);
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

/* The first child. Joining a PID namespace places only one's children in
 * it: this child joins the sandbox's namespaces (its cgroups first, while
 * it still sees the host's), then makes the command as a child of the host
 * (CLONE_PARENT) inside them, says its pid, and ends. */
CHILD static int child_main(void *arg) {
  child_ctx *c = arg;
  const sb_spawn_req *r = c->req;
  if (!sb_confine_joins_pid(r->steps)) return command_main(arg);
  for (int i = 0; i < SB_MAX_CGROUPS; i++)
    if (r->cgroup_procs_fds[i] >= 0 && write(r->cgroup_procs_fds[i], "0", 1) != 1) FAIL(c, ST_CGROUP);
  int step = sb_confine_join(r->steps);
  if (step != 0) FAIL(c, ST_CONFINE + step);
  pid_t pid = sb_clone_child(command_main, c, (char *)r->stack + 2 * SB_SPAWN_STACK, NULL, true);
  if (pid < 0) FAIL(c, ST_CLONE2);
  child_msg m = {0, ST_COMMAND, pid};
  ssize_t w = write(c->errfd, &m, sizeof m);
  (void)w;
  _exit(0);
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
  if (sb_pipe_cloexec(ep) != 0) {
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
  pid_t pid = sb_clone_child(child_main, &c, (char *)req->stack + SB_SPAWN_STACK, req->no_pidfd ? NULL : &pidfd, false);
  int cerr = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  close(ep[1]);
  if (pid < 0) {
    close(ep[0]);
    res->err = cerr;
    res->step = "clone";
    return -1;
  }
  /* messages until EOF: a failure, and (in a PID namespace) the command's pid */
  child_msg m, fail = {0, -1, 0};
  pid_t command = -1;
  ssize_t n;
  for (;;) {
    while ((n = read(ep[0], &m, sizeof m)) < 0 && errno == EINTR) {}
    if (n != (ssize_t)sizeof m) break;
    if (m.step == ST_COMMAND) command = m.pid;
    else if (fail.step < 0) fail = m;
  }
  close(ep[0]);
  bool two = sb_confine_joins_pid(req->steps);
  if (two) { /* the first child has ended: reap it; the command is ours to watch */
    while (waitpid(pid, NULL, SB_WAIT_ALL) < 0 && errno == EINTR) {}
    if (pidfd >= 0 && !req->no_pidfd) close(pidfd);
    pidfd = -1;
    pid = command;
    if (pid < 0 && fail.step < 0) fail = (child_msg){ECHILD, ST_CLONE2, 0};
  }
  if (fail.step >= 0) { /* a child failed before exec and exited */
    if (pid > 0)
      while (waitpid(pid, NULL, SB_WAIT_ALL) < 0 && errno == EINTR) {}
    if (pidfd >= 0 && !req->no_pidfd) close(pidfd);
    res->err = fail.err;
    res->step = fail.step >= ST_CONFINE                                  ? sb_confine_step_name(fail.step - ST_CONFINE)
        : (unsigned)fail.step < sizeof steps_names / sizeof *steps_names ? steps_names[fail.step]
                                                                         : "spawn";
    return -1;
  }
  if (two && !req->no_pidfd) pidfd = sb_pidfd_open(pid);
  res->pid = pid;
  res->pidfd = req->no_pidfd ? -1 : pidfd;
  return 0;
}

int sb_spawn_reap(pid_t pid, int pidfd, int *status) {
  if (pidfd >= 0) return sb_pidfd_reap(pidfd, status);
  pid_t r = waitpid(pid, status, WNOHANG | SB_WAIT_ALL);
  return r < 0 ? -1 : r == 0 ? 0 : 1;
}
