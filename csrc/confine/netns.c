#include "confine/netns.h"
#include "base/file.h"
#include "base/child.h"
#include "plat/fd.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct ns_child {
  int ready_r, ready_w; /* child -> parent: the loopback is up (or an errno) */
  int done_r, done_w; /* parent -> child: you may go (EOF) */
} ns_child;

SB_CHILD_FN int sb_netns_loopback_up(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "lo");
  int r = ioctl(s, SIOCGIFFLAGS, &ifr);
  if (r == 0) {
    ifr.ifr_flags |= IFF_UP;
    r = ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  close(s);
  return r;
}

/* In the new namespaces (a copy of the host, not sharing its memory). */
SB_CHILD_FN static int child_main(void *arg) {
  ns_child *c = arg;
  /* a copy of the host, fds included: keep only our two ends. Any other
   * pipe held open here (the parent's ends, or another thread's) would keep
   * its reader from ever seeing EOF. */
  sb_child_close_fds(c->ready_w, c->done_r);
  int err = sb_netns_loopback_up() == 0 ? 0 : errno;
  if (write(c->ready_w, &err, sizeof err) != sizeof err) _exit(1);
  char b;
  while (read(c->done_r, &b, 1) < 0 && errno == EINTR) {}
  _exit(0);
}

int sb_netns_create(sb_netns *ns, bool with_userns, char *why, size_t whylen) {
  ns->net = ns->user = -1;
  if (!with_userns && (ns->net = sb_netns_new_fd()) >= 0) return 0; /* else the helper below says why */
  int ready[2], done[2];
  if (pipe2(ready, O_CLOEXEC) != 0) goto fail_errno;
  if (pipe2(done, O_CLOEXEC) != 0) {
    close(ready[0]);
    close(ready[1]);
    goto fail_errno;
  }
  ns_child c = {ready[0], ready[1], done[0], done[1]};
  size_t stack_size = 64 * 1024;
  void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  int flags = CLONE_NEWNET | (with_userns ? CLONE_NEWUSER : 0) | SIGCHLD;
  pid_t pid = stack == MAP_FAILED ? -1 : clone(child_main, (char *)stack + stack_size, flags, &c);
  int cerr = errno;
  close(ready[1]);
  close(done[0]);
  int err = 0;
  if (pid < 0) {
    err = cerr;
    snprintf(why, whylen, "cannot create a network namespace%s: %s", with_userns ? " (with a user namespace)" : "",
             strerror(err));
  } else if (read(ready[0], &err, sizeof err) != sizeof err || err) {
    snprintf(why, whylen, "cannot bring up the loopback interface of the network namespace: %s",
             strerror(err ? err : EIO));
    err = err ? err : EIO;
  } else {
    char path[64], map[64];
    if (with_userns) { /* map our uid and gid to themselves inside */
      snprintf(map, sizeof map, "%d %d 1\n", (int)geteuid(), (int)geteuid());
      snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
      int r = sb_write_small(AT_FDCWD, path, map);
      snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
      if (r == 0) r = sb_write_small(AT_FDCWD, path, "deny");
      snprintf(map, sizeof map, "%d %d 1\n", (int)getegid(), (int)getegid());
      snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
      if (r == 0) r = sb_write_small(AT_FDCWD, path, map);
      snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
      if (r == 0) ns->user = open(path, O_RDONLY | O_CLOEXEC);
      if (r != 0 || ns->user < 0) {
        err = errno;
        snprintf(why, whylen, "cannot set up the user namespace: %s", strerror(err));
      }
    }
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
    if (!err && (ns->net = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
      err = errno;
      snprintf(why, whylen, "cannot open the network namespace: %s", strerror(err));
    }
  }
  close(done[1]); /* the child may go */
  close(ready[0]);
  if (pid > 0)
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
  if (stack != MAP_FAILED) munmap(stack, stack_size);
  if (err) {
    sb_netns_close(ns);
    return -1;
  }
  return 0;
fail_errno:
  snprintf(why, whylen, "cannot create a network namespace: %s", strerror(errno));
  return -1;
}

/* In the new network namespace, vfork-like (system calls only): lo up,
 * and the namespace sent to the parent over `sock` (a bare errno when it
 * cannot be). A socket, not our memory or fd table: valgrind makes a fork
 * of this clone, and refuses it outright with CLONE_FILES. */
SB_CHILD_FN static int new_main(void *arg) {
  int sock = *(const int *)arg;
  int err = 0, fd = -1;
  if (sb_netns_loopback_up() != 0 || (fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) err = errno;
  sb_send_fds(sock, &err, sizeof err, &fd, fd >= 0 ? 1 : 0);
  _exit(err != 0);
}

int sb_netns_new_fd(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  size_t stack_size = 64 * 1024;
  void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  pid_t pid = stack == MAP_FAILED
      ? -1
      : clone(new_main, (char *)stack + stack_size, CLONE_VM | CLONE_VFORK | CLONE_NEWNET | SIGCHLD, &sv[1]);
  int err = pid < 0 ? errno : EIO, fd = -1, nfds = 0;
  close(sv[1]); /* the child's end: EOF below if it sent nothing */
  if (pid > 0) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    int sent = EIO;
    if (sb_recv_fds(sv[0], &sent, sizeof sent, &fd, 1, &nfds) == (ssize_t)sizeof sent) err = sent;
    if (nfds && err) close(fd);
  }
  close(sv[0]);
  if (stack != MAP_FAILED) munmap(stack, stack_size);
  if (!nfds || err) return errno = err ? err : EIO, -1;
  return fd;
}

/* sb_netns_new_fd on a thread of its own (see netns.h). */
static void *net_main(void *arg) {
  sb_netns_job *j = arg;
  j->fd = sb_netns_new_fd();
  j->err = errno;
  return NULL;
}

void sb_netns_job_start(sb_netns_job *j) {
  j->fd = -1;
  j->err = 0;
  pthread_attr_t attr;
  sigset_t all, old;
  sigfillset(&all);
  /* the thread takes none of the host's signals: they stay on its own threads */
  pthread_sigmask(SIG_SETMASK, &all, &old);
  j->live = pthread_attr_init(&attr) == 0;
  if (j->live) {
    pthread_attr_setstacksize(&attr, 256 * 1024); /* its clone has a stack of its own */
    j->live = pthread_create(&j->th, &attr, net_main, j) == 0;
    pthread_attr_destroy(&attr);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!j->live) net_main(j);
}

int sb_netns_job_finish(sb_netns_job *j) {
  if (j->live) pthread_join(j->th, NULL);
  j->live = false;
  errno = j->err;
  return j->fd;
}

void sb_netns_close(sb_netns *ns) {
  if (ns->net >= 0) close(ns->net);
  if (ns->user >= 0) close(ns->user);
  ns->net = ns->user = -1;
}
