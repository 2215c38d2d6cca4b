#include "net/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/child.h"
#include "plat/fd.h"

enum { OP_LISTEN = 1, OP_CONNECT, OP_FREE_PORT };

typedef struct req {
  int op;
  uint16_t port;
} req;
typedef struct rep {
  int err;
  uint16_t port;
} rep;

typedef struct agent_arg {
  int sock;
  const sb_netns *ns;
} agent_arg;

void sb_netagent_init(sb_netagent *a) {
  a->sock = -1;
  a->pid = -1;
  pthread_mutex_init(&a->mu, NULL); /* a default mutex holds no resource */
}

/* ---- the agent (a copy of the host: only system calls from here on) ---- */

SB_CHILD_FN static int loopback_socket(uint16_t port, bool do_bind, struct sockaddr_in *sin) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  memset(sin, 0, sizeof *sin);
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sin->sin_port = htons(port);
  if (do_bind) {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)sin, sizeof *sin) != 0) {
      int e = errno;
      close(fd);
      return -e;
    }
  }
  return fd;
}

SB_CHILD_FN static uint16_t port_of(int fd) {
  struct sockaddr_in sin;
  socklen_t len = sizeof sin;
  return getsockname(fd, (struct sockaddr *)&sin, &len) == 0 ? ntohs(sin.sin_port) : 0;
}

SB_CHILD_FN static void reply(int sock, int err, uint16_t port, int fd) {
  rep r;
  memset(&r, 0, sizeof r); /* no padding byte of ours leaves the process */
  r.err = err;
  r.port = port;
  sb_send_fds(sock, &r, sizeof r, &fd, fd >= 0 ? 1 : 0);
  if (fd >= 0) close(fd);
}

SB_CHILD_FN static int agent_main(void *arg) {
  agent_arg *a = arg;
  /* the owning user namespace first (not root), then the network */
  if (a->ns->user >= 0 && setns(a->ns->user, CLONE_NEWUSER) != 0) _exit(1);
  if (setns(a->ns->net, CLONE_NEWNET) != 0) _exit(1);
  sb_child_close_fds(a->sock, -1); /* nothing of the host's stays open here */
  for (;;) {
    req q;
    ssize_t n = recv(a->sock, &q, sizeof q, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != sizeof q) _exit(0); /* the host closed its end, or died */
    struct sockaddr_in sin;
    int fd = loopback_socket(q.op == OP_CONNECT ? 0 : q.port, q.op != OP_CONNECT, &sin);
    if (fd < 0) {
      reply(a->sock, -fd, 0, -1);
    } else if (q.op == OP_LISTEN) {
      if (listen(fd, 128) != 0) {
        reply(a->sock, errno, 0, -1);
        close(fd);
      } else {
        reply(a->sock, 0, port_of(fd), fd);
      }
    } else if (q.op == OP_CONNECT) {
      sin.sin_port = htons(q.port); /* loopback: completes (or fails) at once */
      if (connect(fd, (struct sockaddr *)&sin, sizeof sin) != 0) {
        reply(a->sock, errno, 0, -1);
        close(fd);
      } else {
        reply(a->sock, 0, q.port, fd);
      }
    } else {
      uint16_t p = port_of(fd);
      close(fd);
      reply(a->sock, 0, p, -1);
    }
  }
}

/* ---- the host side --------------------------------------------------- */

int sb_netagent_start(sb_netagent *a, const sb_netns *ns) {
  if (a->sock >= 0) return 0;
  if (ns->net < 0) return -ENOTSUP;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -errno;
  size_t stack_size = 64 * 1024;
  void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  agent_arg arg = {sv[1], ns};
  /* a copy of the host (no shared memory), reaped by us */
  pid_t pid = stack == MAP_FAILED ? -1 : clone(agent_main, (char *)stack + stack_size, SIGCHLD, &arg);
  int err = errno;
  if (stack != MAP_FAILED) munmap(stack, stack_size);
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return -err;
  }
  a->sock = sv[0];
  a->pid = pid;
  return 0;
}

/* One request, one reply (with maybe an fd). */
static int ask_locked(sb_netagent *a, int op, uint16_t port, uint16_t *port_out) {
  if (a->sock < 0) return -ENOTSUP;
  req q;
  memset(&q, 0, sizeof q);
  q.op = op;
  q.port = port;
  if (send(a->sock, &q, sizeof q, MSG_NOSIGNAL) != sizeof q) return -EPIPE;
  rep r;
  int fd = -1, nfds;
  if (sb_recv_fds(a->sock, &r, sizeof r, &fd, 1, &nfds) != (ssize_t)sizeof r) {
    if (nfds) close(fd);
    return -EPIPE;
  }
  if (port_out) *port_out = r.port;
  if (r.err) {
    if (fd >= 0) close(fd);
    return -r.err;
  }
  if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd >= 0 ? fd : 0;
}

static int ask(sb_netagent *a, int op, uint16_t port, uint16_t *port_out) {
  pthread_mutex_lock(&a->mu);
  int r = ask_locked(a, op, port, port_out);
  pthread_mutex_unlock(&a->mu);
  return r;
}

int sb_netagent_listen(sb_netagent *a, uint16_t port, uint16_t *bound) { return ask(a, OP_LISTEN, port, bound); }

int sb_netagent_connect(sb_netagent *a, uint16_t port) { return ask(a, OP_CONNECT, port, NULL); }

int sb_netagent_free_port(sb_netagent *a, uint16_t *port) {
  int r = ask(a, OP_FREE_PORT, 0, port);
  return r < 0 ? r : 0;
}

void sb_netagent_stop(sb_netagent *a) {
  if (a->sock < 0) return;
  close(a->sock); /* the agent sees EOF and exits */
  a->sock = -1;
  while (waitpid(a->pid, NULL, 0) < 0 && errno == EINTR) {}
  a->pid = -1;
}
