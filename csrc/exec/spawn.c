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

#include "exec/spawn_child.h"
#include "exec/zygote.h"
#include "plat/fd.h"
#include "plat/proc.h"

/* The direct spawn: the host's vfork-style child joins the sandbox and takes
 * its layers itself. The failed step travels back through a close-on-exec
 * pipe (EOF = the command runs): it works whether or not the child shares
 * our memory (valgrind, for one, turns a vfork-like clone into a fork). */
#define CHILD SB_CHILD_FN

/* The first child. Joining a PID namespace places only one's children in
 * it: this child joins the sandbox's namespaces (its cgroups first, while
 * it still sees the host's), then makes the command as a child of the host
 * (CLONE_PARENT) inside them, says its pid, and ends. */
CHILD static int child_main(void *arg) {
  sb_spawn_child *c = arg;
  const sb_spawn_req *r = c->req;
  if (c->born_in_cgroup && r->born_unverified) { /* it runs: the kernel let it be born there */
    sb_child_msg born = {0, SB_SP_BORN, 0};
    ssize_t w = write(c->errfd, &born, sizeof born);
    (void)w;
  }
  if (!sb_confine_joins_pid(r->steps)) return sb_spawn_command(arg);
  for (int i = c->born_in_cgroup; i < SB_MAX_CGROUPS; i++)
    if (r->cgroup_procs_fds[i] >= 0 && write(r->cgroup_procs_fds[i], "0", 1) != 1) sb_spawn_child_fail(c, SB_SP_CGROUP);
  int step = sb_confine_join(r->steps);
  if (step != 0) sb_spawn_child_fail(c, SB_SP_CONFINE + step);
  c->join = c->join_cgroups = false; /* done: the command itself only confines */
  pid_t pid = sb_clone_child(sb_spawn_command, c, (char *)r->stack + 2 * SB_SPAWN_STACK, NULL, true);
  if (pid < 0) sb_spawn_child_fail(c, SB_SP_CLONE2);
  sb_child_msg m = {0, SB_SP_COMMAND, pid};
  ssize_t w = write(c->errfd, &m, sizeof m);
  (void)w;
  _exit(0);
}

int sb_spawn(const sb_spawn_req *req, sb_spawn_res *res) {
  res->pid = -1;
  res->pidfd = -1;
  res->err = 0;
  res->step = NULL;
  res->born_in = 0;
  if (req->zygote) {
    int r = sb_zygote_spawn(req->zygote, req, res);
    if (r != SB_ZYGOTE_NOT_TAKEN) return r;
  }
  bool two = sb_confine_joins_pid(req->steps);
  /* Born in its leaf where the kernel lets us; else (no clone3 here, or the
   * leaf refused) the clone before and the join, which reports a refusal.
   * An attempt that fails costs one system call: not remembered. A kernel
   * that remembers a kill of the leaf or of the host's own cgroup (see
   * confine/cgroup.c) kills a child born there before it runs: the first
   * such child of a sandbox says it runs, and one that does not is spawned
   * again, joining by write (res->born_in tells the caller). */
  bool into = req->cgroup_into_fd >= 0 && req->cgroup_procs_fds[0] >= 0 && !req->no_clone3;
  for (;;) {
    sb_spawn_child c = {.req = req,
                        .ppid = two ? 0 : getpid(),
                        .reset_signals = true,
                        .join_cgroups = true,
                        .join = true,
                        .layers = true};
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
    int pidfd = -1, *want_pidfd = req->no_pidfd ? NULL : &pidfd;
    pid_t pid = -1;
    if (into) {
      c.born_in_cgroup = true;
      pid = sb_clone_child_into(child_main, &c, req->stack, SB_SPAWN_STACK, want_pidfd, req->cgroup_into_fd);
      c.born_in_cgroup = pid >= 0;
    }
    if (pid < 0) pid = sb_clone_child(child_main, &c, (char *)req->stack + SB_SPAWN_STACK, want_pidfd, false);
    int cerr = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(ep[1]);
    if (pid < 0) {
      close(ep[0]);
      res->err = cerr;
      res->step = "clone";
      return -1;
    }
    /* messages until EOF: that it runs, a failure, and (in a PID namespace)
     * the command's pid */
    sb_child_msg m, fail = {0, -1, 0};
    pid_t command = -1;
    bool ran = false;
    ssize_t n;
    for (;;) {
      while ((n = read(ep[0], &m, sizeof m)) < 0 && errno == EINTR) {}
      if (n != (ssize_t)sizeof m) break;
      if (m.step == SB_SP_BORN) ran = true;
      else if (m.step == SB_SP_COMMAND) command = m.pid;
      else if (fail.step < 0) fail = m;
    }
    close(ep[0]);
    if (c.born_in_cgroup && req->born_unverified) {
      res->born_in = ran ? 1 : -1;
      if (!ran) { /* killed before its first instruction: nothing of it ran */
        while (waitpid(pid, NULL, SB_WAIT_ALL) < 0 && errno == EINTR) {}
        if (pidfd >= 0) close(pidfd);
        into = false;
        continue;
      }
    }
    if (two) { /* the first child has ended: reap it; the command is ours to watch */
      while (waitpid(pid, NULL, SB_WAIT_ALL) < 0 && errno == EINTR) {}
      if (pidfd >= 0 && !req->no_pidfd) close(pidfd);
      pidfd = -1;
      pid = command;
      if (pid < 0 && fail.step < 0) fail = (sb_child_msg){ECHILD, SB_SP_CLONE2, 0};
    }
    if (fail.step >= 0) { /* a child failed before exec and exited */
      if (pid > 0)
        while (waitpid(pid, NULL, SB_WAIT_ALL) < 0 && errno == EINTR) {}
      if (pidfd >= 0 && !req->no_pidfd) close(pidfd);
      res->err = fail.err;
      res->step = sb_spawn_step_name(fail.step);
      return -1;
    }
    if (two && !req->no_pidfd) pidfd = sb_pidfd_open(pid);
    res->pid = pid;
    res->pidfd = req->no_pidfd ? -1 : pidfd;
    return 0;
  }
}

int sb_spawn_reap(pid_t pid, int pidfd, int *status) {
  if (pidfd >= 0) return sb_pidfd_reap(pidfd, status);
  pid_t r = waitpid(pid, status, WNOHANG | SB_WAIT_ALL);
  return r < 0 ? -1 : r == 0 ? 0 : 1;
}
