#ifndef SB_PLAT_FD_H
#define SB_PLAT_FD_H
/* File descriptors: pipes and sockets born close-on-exec, an anonymous
 * file, a counter another thread wakes a loop with, and an open kept
 * beneath a directory. Linux has a call for each; elsewhere POSIX does it
 * in two steps (the close-on-exec flag set right after: every spawn of
 * this library closes what it does not pass anyway). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plat/os.h"
#if SB_LINUX
#include <sys/eventfd.h>
#include <sys/mman.h>
#endif

/* An fd that names a file to work on through it, not to read it. Linux's
 * O_PATH needs no read permission and, with O_NOFOLLOW, opens a final link
 * as itself. Elsewhere a read-only open that never blocks (a FIFO): it
 * needs read permission, and a final link answers ELOOP, so what works on a
 * link itself goes through its parent (fstatat, readlinkat). */
#if SB_LINUX
#define SB_O_PATH O_PATH
#define SB_O_DIR (O_PATH | O_DIRECTORY)
#define SB_OPENS_LINK(flags) (((flags)&O_PATH) != 0)
#else
#define SB_O_PATH (O_RDONLY | O_NONBLOCK)
#define SB_O_DIR (O_RDONLY | O_DIRECTORY)
#define SB_OPENS_LINK(flags) 0
#endif

static inline int sb_fd_cloexec(int fd, bool nonblock) {
  if (fd < 0) return fd;
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || (nonblock && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

static inline int sb_pipe_cloexec(int fds[2]) {
#if SB_LINUX
  return pipe2(fds, O_CLOEXEC);
#else
  if (pipe(fds) != 0) return -1;
  if (sb_fd_cloexec(fds[0], false) < 0) {
    close(fds[1]);
    return -1;
  }
  if (sb_fd_cloexec(fds[1], false) < 0) {
    close(fds[0]);
    return -1;
  }
  return 0;
#endif
}

/* socket(domain, type) close-on-exec and, with `nonblock`, non-blocking. */
static inline int sb_socket_cloexec(int domain, int type, bool nonblock) {
#if SB_LINUX
  return socket(domain, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
#else
  return sb_fd_cloexec(socket(domain, type, 0), nonblock);
#endif
}

/* An anonymous read-write file, gone when its last fd closes. */
static inline int sb_anon_file(const char *name) {
#if SB_LINUX
  return memfd_create(name, MFD_CLOEXEC);
#else
  const char *dir = getenv("TMPDIR");
  char path[512];
  snprintf(path, sizeof path, "%s/%s-XXXXXX", dir && dir[0] == '/' ? dir : "/tmp", name);
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  unlink(path);
  return sb_fd_cloexec(fd, false);
#endif
}

#if SB_LINUX
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
/* A program carried as bytes (the zygote, the init), in a memfd to run
 * with fexecve: executable (vm.memfd_noexec may say no; kernels before 6.3
 * know no MFD_EXEC and make every memfd executable). */
static inline int sb_program_file(const char *name, const unsigned char *bytes, size_t len) {
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_EXEC);
  if (fd < 0 && errno == EINVAL) fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, bytes + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = w < 0 ? errno : EIO;
      close(fd);
      errno = err;
      return -1;
    }
    off += (size_t)w;
  }
  return fd;
}
#endif

/* A wake-up counter: its fd turns readable after sb_notify_post. */
typedef struct sb_notify {
  int rfd, wfd; /* the same eventfd on Linux; a pipe's ends elsewhere */
} sb_notify;

static inline int sb_notify_open(sb_notify *n) {
#if SB_LINUX
  n->rfd = n->wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return n->rfd < 0 ? -1 : 0;
#else
  int p[2];
  n->rfd = n->wfd = -1;
  if (sb_pipe_cloexec(p) != 0) return -1;
  if (fcntl(p[0], F_SETFL, O_NONBLOCK) != 0 || fcntl(p[1], F_SETFL, O_NONBLOCK) != 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  n->rfd = p[0];
  n->wfd = p[1];
  return 0;
#endif
}

/* True when the reader will wake (a full pipe wakes it as well). */
static inline bool sb_notify_post(const sb_notify *n) {
#if SB_LINUX
  uint64_t one = 1;
  return write(n->wfd, &one, sizeof one) == sizeof one;
#else
  char b = 1;
  return write(n->wfd, &b, 1) == 1 || errno == EAGAIN;
#endif
}

/* Consume every post so far; how many (at least 1 when any). */
static inline uint64_t sb_notify_drain(const sb_notify *n) {
#if SB_LINUX
  uint64_t v = 0;
  if (read(n->rfd, &v, sizeof v) != sizeof v) v = 0;
  return v;
#else
  char b[256];
  uint64_t total = 0;
  ssize_t k;
  while ((k = read(n->rfd, b, sizeof b)) > 0) total += (uint64_t)k;
  return total;
#endif
}

static inline void sb_notify_close(sb_notify *n) {
  if (n->rfd >= 0) close(n->rfd);
  if (n->wfd >= 0 && n->wfd != n->rfd) close(n->wfd);
  n->rfd = n->wfd = -1;
}

/* The path fd names now (length, or -errno): Linux's /proc/self/fd,
 * Apple's F_GETPATH. */
static inline long sb_fd_path_of(int fd, char *out, size_t cap) {
#if defined(__APPLE__)
  char buf[1024]; /* MAXPATHLEN */
  if (fcntl(fd, F_GETPATH, buf) != 0) return -errno;
  size_t n = strlen(buf);
  if (n >= cap) return -ENAMETOOLONG;
  memcpy(out, buf, n + 1);
  return (long)n;
#elif defined(__linux__)
  char lnk[48];
  snprintf(lnk, sizeof lnk, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(lnk, out, cap - 1);
  if (n < 0) return -errno;
  if ((size_t)n >= cap - 1) return -ENAMETOOLONG;
  out[n] = '\0';
  return n;
#else
  (void)fd;
  (void)out;
  (void)cap;
  return -ENOSYS;
#endif
}

/* Passing fds over a Unix socket (SCM_RIGHTS), one message at a time: at
 * most SB_PASS_FDS a message. Async-signal-safe (the init, the network
 * agent and the zygote call them). */
#define SB_PASS_FDS 16

/* buf (len bytes) and fds[0..n): 0 when the whole message went, else -1. */
static inline int sb_send_fds(int sock, const void *buf, size_t len, const int *fds, int n) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * SB_PASS_FDS)];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u); /* no byte of ours but the fds leaves */
  struct iovec iov = {(void *)buf, len};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (n > SB_PASS_FDS) return errno = EINVAL, -1;
  if (n > 0) {
    mh.msg_control = u.buf;
    mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(c), fds, n * sizeof(int));
  }
  ssize_t w;
  while ((w = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
  return w == (ssize_t)len ? 0 : -1;
}

/* One message into buf and the fds it carries, close-on-exec, into
 * fds[0..max) (*nfds of them; any more are closed). recvmsg's result; a
 * message or fds cut short: -1, EMSGSIZE (the fds that came are in fds). */
static inline ssize_t sb_recv_fds(int sock, void *buf, size_t len, int *fds, int max, int *nfds) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * SB_PASS_FDS)];
    struct cmsghdr align;
  } u;
  struct iovec iov = {buf, len};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
  ssize_t n;
#if SB_LINUX
  int flags = MSG_CMSG_CLOEXEC;
#else
  int flags = 0;
#endif
  while ((n = recvmsg(sock, &mh, flags)) < 0 && errno == EINTR) {}
  *nfds = 0;
  if (n < 0) return n;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int cnt = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (int i = 0; i < cnt; i++) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        if (!SB_LINUX) fcntl(fd, F_SETFD, FD_CLOEXEC);
        if (*nfds < max) fds[(*nfds)++] = fd;
        else close(fd);
      }
    }
  if (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) return errno = EMSGSIZE, -1;
  return n;
}

#endif
