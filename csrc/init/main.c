/* sandbox-init, the sandbox's init (confine/ns.h): pid 1 of its PID
 * namespace, the builder and keeper of its mount view. A program of its
 * own, run from a memfd (confine/ns.c starts it; the module carries its
 * bytes, confine/init_program.c): a fork of the host would copy the
 * host's page tables at the start (23 ms for a 1 GiB heap) and keep every
 * page the host writes afterwards, and its secrets, for the sandbox's life.
 *
 * It starts in its new namespaces, before the host has mapped its ids,
 * with its capabilities there carried across the exec as ambient ones,
 * and with three fds: the control socket (3), the go pipe (4) and the
 * memfd holding its arguments (5, an init_arg the host filled). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine/netns.h"
#include "confine/ns_impl.h"
#include "plat/fd.h"

/* The host's first request when the network namespace comes after the
 * view: join the one it sends, or make one (none came); answered, then the
 * init serves as usual. -1: the init must end (it is still in the host's
 * network namespace then; the host fails the sandbox). */
static int join_net(init_arg *a) {
  int fd = -1, nfds = 0;
  ssize_t n = sb_recv_fds(a->ctl, &a->msg, sizeof a->msg, &fd, 1, &nfds);
  sb_ns_answer ans = {EPROTO};
  if (n == (ssize_t)sizeof a->msg && a->msg.op == SB_NS_NETJOIN) {
    errno = EIO;
    int r = nfds ? setns(fd, CLONE_NEWNET) : unshare(CLONE_NEWNET) == 0 ? sb_netns_loopback_up() : -1;
    ans.err = r == 0 ? 0 : errno;
  }
  if (nfds) close(fd);
  return send(a->ctl, &ans, sizeof ans, MSG_NOSIGNAL) == (ssize_t)sizeof ans && !ans.err ? 0 : -1;
}

/* The host's requests, one at a time; the answer carries an fd for
 * SB_NS_CLONE. */
static void serve(init_arg *a) {
  ssize_t n = recv(a->ctl, &a->msg, sizeof a->msg, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) { /* the host is gone or done */
    close(a->ctl);
    a->ctl = -1;
    return;
  }
  if (n < 0) return;
  sb_ns_answer ans = {EINVAL};
  int fd = -1;
  if ((size_t)n == sizeof a->msg) {
    a->msg.path[sizeof a->msg.path - 1] = a->msg.target[sizeof a->msg.target - 1] = '\0';
    ans.err = sb_view_request(a, &a->msg, &fd);
  }
  sb_send_fds(a->ctl, &ans, sizeof ans, &fd, fd >= 0 ? 1 : 0);
  if (fd >= 0) close(fd);
}

/* The capabilities came across the exec as ambient ones: none of them is
 * for anything this process might start (it starts nothing; commands join
 * the namespaces from outside). */
static void no_ambient(void) {
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  sb_cap_header h = {SB_CAP_VERSION_3, 0};
  /* zeroed: valgrind's capget marks only the first of the two written */
  sb_cap_data d[2] = {{0}};
  if (syscall(SYS_capget, &h, d) == 0) {
    d[0].inheritable = d[1].inheritable = 0;
    syscall(SYS_capset, &h, d);
  }
}

int main(void) {
  /* a handler cannot have crossed the exec, an ignored signal can */
  for (int sig = 1; sig < _NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_SETMASK, &chld, NULL); /* waited for below */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); /* the namespace dies with the host */
  prctl(PR_SET_NAME, "sandbox-init", 0, 0, 0); /* not "memfd:sandbox-init" */
  no_ambient();
  /* our own copy of the arguments: the host's mapping goes when it is done */
  init_arg *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_PRIVATE, SB_INIT_ARG_FD, 0);
  if (a == MAP_FAILED) _exit(1);
  close(SB_INIT_ARG_FD);
  a->ctl = SB_INIT_CTL_FD;
  a->go_r = SB_INIT_GO_FD;
  for (int t = 0; t < SB_VIEW_TREES; t++) a->tree_fd[t] = a->real_fd[t] = a->skel_fd[t] = -1;
  a->clone_fd = a->upper_fd = -1;
  /* We hold the real trees under the view's masks. No command reaches our
   * fds, root or memory through /proc/1: that takes ptrace access, which a
   * process holding fewer capabilities than we do never has (commands hold
   * none). We stay dumpable: the host joins our namespaces through our
   * pidfd, which needs the same access. */
  char go;
  errno = 0;
  if (read(a->go_r, &go, 1) != 1) sb_view_fail(a, ST_GO, NULL); /* ids mapped (or the host is gone) */
  close(a->go_r);
  if (sethostname("sandbox", 7) != 0) sb_view_fail(a, ST_HOSTNAME, NULL);
  if (a->network && !a->net_later && sb_netns_loopback_up() != 0) sb_view_fail(a, ST_LOOPBACK, "lo");
  sb_view_build(a);
  a->rep.err = 0;
  if (send(a->ctl, &a->rep, sizeof a->rep, MSG_NOSIGNAL) != (ssize_t)sizeof a->rep) _exit(1);
  if (a->net_later && join_net(a) != 0) _exit(1);
  /* pid 1: reap whatever is orphaned into the namespace, at once, and keep
   * the view for the host */
  int sig = (int)syscall(SYS_signalfd4, -1, &chld, sizeof(uint64_t), SFD_CLOEXEC | SFD_NONBLOCK);
  for (;;) {
    while (waitpid(-1, NULL, WNOHANG | __WALL) > 0) {}
    if (sig < 0) { /* no signalfd: no keeper either */
      siginfo_t si;
      sigwaitinfo(&chld, &si);
      continue;
    }
    struct pollfd p[2] = {{.fd = sig, .events = POLLIN}, {.fd = a->ctl, .events = POLLIN}};
    if (poll(p, a->ctl >= 0 ? 2 : 1, -1) < 0) continue;
    if (p[0].revents) {
      struct signalfd_siginfo si;
      while (read(sig, &si, sizeof si) > 0) {}
    }
    if (a->ctl >= 0 && p[1].revents) serve(a);
  }
}
