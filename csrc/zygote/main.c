/* sandbox-spawn, the zygote (exec/zygote.h): a program of its own, so that
 * it holds nothing of the host's memory (a copy of the host would keep
 * every page the host changes later, and its secrets, for the sandbox's
 * life). The module carries it (exec/zygote.c runs it from a memfd).
 *
 * It starts with its socket on fd 3, takes the layers the first message
 * names (confine/child.c, in a command's order), says it is ready, then
 * answers requests one at a time: each command is its vfork-style clone
 * as its parent's child (CLONE_PARENT: the host's), set up by
 * exec/spawn_child.c as a direct spawn's command is, without the layers it
 * inherits. It ends when the socket closes, or with the host. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/child.h"
#include "exec/spawn_child.h"
#include "exec/zygote_proto.h"
#include "plat/fd.h"
#include "plat/proc.h"

#define STACK (128 * 1024)

typedef struct zygote {
  int sock;
  char *area; /* the request area (the host writes it before each request) */
  pid_t host;
  sb_confine_steps steps;
  struct sock_fprog fprog;
  sb_zygote_setup setup;
  char *stack; /* the commands' */
} zygote;

static void answer(int sock, int err, int step, pid_t pid) {
  sb_child_msg m = {err, step, pid};
  while (send(sock, &m, sizeof m, MSG_NOSIGNAL) < 0 && errno == EINTR) {}
}

/* The setup's fd indexes to the fds received. */
static int slot(const int *fds, int nfds, int i) { return i >= 0 && i < nfds ? fds[i] : -1; }

static int setup(zygote *z) {
  int fds[SB_NS_COUNT + 4], nfds;
  ssize_t n = sb_recv_fds(z->sock, &z->setup, sizeof z->setup, fds, SB_NS_COUNT + 4, &nfds);
  if (n != (ssize_t)sizeof z->setup || nfds < 1 || z->setup.nfilter > SB_SECCOMP_MAX) return errno = EPROTO, -1;
  z->host = z->setup.host;
  z->steps = z->setup.steps;
  sb_confine_steps *s = &z->steps;
  s->view_root[sizeof s->view_root - 1] = '\0';
  for (int i = 0; i < SB_NS_COUNT; i++) s->ns_fds[i] = slot(fds, nfds, s->ns_fds[i]);
  s->ns_pidfd = slot(fds, nfds, s->ns_pidfd);
  s->landlock_ruleset_fd = slot(fds, nfds, s->landlock_ruleset_fd);
  z->fprog.len = (unsigned short)z->setup.nfilter;
  z->fprog.filter = z->setup.filter;
  s->seccomp = z->setup.nfilter ? &z->fprog : NULL;
  z->area = mmap(NULL, SB_ZYGOTE_REGION, PROT_READ, MAP_SHARED, fds[0], 0);
  if (z->area == MAP_FAILED) return -1;
  z->stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  return z->stack == MAP_FAILED ? -1 : 0;
}

/* The layers, in a command's order; the parent-death signal again after
 * the identity change, which clears it. 0, or the failed step. */
static int confine(zygote *z) {
  const sb_confine_steps *s = &z->steps;
  int r;
  if (sb_die_with_parent() != 0 || getppid() != z->host) return SB_SP_PDEATHSIG;
  if ((r = sb_confine_join(s)) != 0) return SB_SP_CONFINE + r;
  if ((r = sb_confine_enter(s)) != 0) return SB_SP_CONFINE + r;
  if (sb_die_with_parent() != 0 || getppid() != z->host) return SB_SP_PDEATHSIG;
  if ((r = sb_confine_restrict(s)) != 0) return SB_SP_CONFINE + r;
  return 0;
}

/* A string of the area at offset off, or NULL (0, or out of it). */
static const char *str(const zygote *z, uint32_t off) {
  if (off == 0 || off >= SB_ZYGOTE_REGION || !memchr(z->area + off, '\0', SB_ZYGOTE_REGION - off)) return NULL;
  return z->area + off;
}

static void serve(zygote *z, const sb_zygote_req *rq, const int *fds, int nfds) {
  int fd[SB_ZFD_COUNT], k = 0;
  for (int i = 0; i < SB_ZFD_COUNT; i++) fd[i] = (rq->mask >> i) & 1 ? (k < nfds ? fds[k++] : -2) : -1;
  uint64_t n = (uint64_t)rq->argc + rq->envc;
  const uint32_t *off = (const uint32_t *)(const void *)z->area;
  if (k != nfds || __builtin_popcount(rq->mask) != nfds || fd[SB_ZFD_STDIN] < 0 || fd[SB_ZFD_STDOUT] < 0 ||
      fd[SB_ZFD_STDERR] < 0 || rq->argc == 0 || n * sizeof *off >= SB_ZYGOTE_REGION) {
    answer(z->sock, EINVAL, SB_SP_STDIO, -1);
    return;
  }
  char **argv = calloc(n + 2, sizeof *argv); /* before the clone: the child must not allocate */
  if (!argv) {
    answer(z->sock, ENOMEM, SB_SP_CLONE, -1);
    return;
  }
  char **envp = argv + rq->argc + 1;
  for (uint64_t i = 0; i < n; i++) {
    const char *a = str(z, off[i]);
    if (!a) {
      free(argv);
      answer(z->sock, EINVAL, SB_SP_EXEC, -1);
      return;
    }
    *(i < rq->argc ? &argv[i] : &envp[i - rq->argc]) = (char *)a;
  }
  sb_spawn_req q = {.file = str(z, rq->file),
                    .argv = argv,
                    .envp = envp,
                    .path = str(z, rq->path),
                    .cwd_fd = fd[SB_ZFD_CWD],
                    .cwd_rel = str(z, rq->cwd_rel),
                    .stdin_fd = fd[SB_ZFD_STDIN],
                    .stdout_fd = fd[SB_ZFD_STDOUT],
                    .stderr_fd = fd[SB_ZFD_STDERR],
                    .steps = &z->steps};
  if (!q.file) q.file = argv[0];
  for (int i = 0; i < SB_MAX_CGROUPS; i++) q.cgroup_procs_fds[i] = fd[SB_ZFD_CGROUP + i];
  int ep[2];
  if (pipe2(ep, O_CLOEXEC) != 0) {
    free(argv);
    answer(z->sock, errno, SB_SP_CLONE, -1);
    return;
  }
  /* the child shares our memory until it execs: it writes nothing we read */
  sb_spawn_child c = {
      .req = &q, .ppid = sb_confine_joins_pid(&z->steps) ? 0 : z->host, .errfd = ep[1], .join_cgroups = true};
  pid_t pid = sb_clone_child(sb_spawn_command, &c, z->stack + STACK, NULL, true);
  int cerr = errno;
  close(ep[1]);
  sb_child_msg m = {0, SB_SP_COMMAND, pid}, got;
  if (pid < 0) m = (sb_child_msg){cerr, SB_SP_CLONE, -1};
  else
    while (read(ep[0], &got, sizeof got) == (ssize_t)sizeof got) /* EOF: it exec'd */
      if (m.step == SB_SP_COMMAND) m = (sb_child_msg){got.err, got.step, pid};
  close(ep[0]);
  free(argv);
  answer(z->sock, m.err, m.step, m.pid);
}

int main(void) {
  static zygote z; /* the setup's filter is large for a stack */
  z.sock = SB_ZYGOTE_SOCK;
  /* a handler cannot have crossed the exec, an ignored signal can: every
   * one back to its default, and all blocked (a command unblocks them
   * before its exec) */
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  prctl(PR_SET_NAME, "sandbox-spawn", 0, 0, 0); /* not "memfd:sandbox-spawn" */
  int step = SB_SP_ZYGOTE;
  if (setup(&z) == 0) step = confine(&z);
  int err = errno;
  /* nothing but the socket and the standard streams (as the init) */
  sb_child_close_fds(z.sock, -1);
  if (step != 0) {
    answer(z.sock, err, step, 0);
    return 1;
  }
  answer(z.sock, 0, SB_SP_COMMAND, 0); /* ready */
  for (;;) {
    sb_zygote_req rq;
    int fds[SB_ZFD_COUNT], nfds;
    ssize_t n = sb_recv_fds(z.sock, &rq, sizeof rq, fds, SB_ZFD_COUNT, &nfds);
    if (n == 0 || (n < 0 && errno != EMSGSIZE)) return 0; /* the host closed it, or is gone */
    if (n == (ssize_t)sizeof rq) serve(&z, &rq, fds, nfds);
    else answer(z.sock, EINVAL, SB_SP_STDIO, -1);
    for (int i = 0; i < nfds; i++) close(fds[i]);
  }
}
