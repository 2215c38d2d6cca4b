#ifndef SB_PLAT_RESOLVE_H
#define SB_PLAT_RESOLVE_H
/* Opening beneath a directory in one call: Linux's openat2 with
 * RESOLVE_BENEATH (and magic links refused). Without it (other systems,
 * `make PORTABLE=1`, a kernel or seccomp filter that refuses it) every call
 * here answers -ENOSYS and the resolver walks held directory fds itself. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "plat/os.h"
#if SB_LINUX
#include <linux/openat2.h>
#include <sys/syscall.h>
#endif
#if defined(__linux__)
#include <sys/statfs.h>
#endif

/* openat2(dirfd, path) beneath dirfd, following no magic link; a final
 * link with `follow` only; no link at all with `no_links`. An fd or
 * -errno (EAGAIN retried as libpathrs does: ~0.1 % residual under a rename
 * storm). */
static inline int sb_openat2(int dirfd, const char *path, int flags, mode_t mode, bool follow, bool no_links) {
#if SB_LINUX
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = (unsigned)(flags | (follow ? 0 : O_NOFOLLOW) | O_CLOEXEC);
  if (flags & O_CREAT) how.mode = mode; /* a mode without O_CREAT is EINVAL */
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (no_links ? RESOLVE_NO_SYMLINKS : 0);
  for (int i = 0; i < 128; i++) {
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (fd >= 0) return fd;
    if (errno != EAGAIN && errno != EINTR) return -errno;
  }
  return -EAGAIN;
#else
  (void)dirfd;
  (void)path;
  (void)flags;
  (void)mode;
  (void)follow;
  (void)no_links;
  return -ENOSYS;
#endif
}

/* openat(dirfd, rel, flags) that never leaves dirfd. Without openat2 a
 * plain openat: the callers pass a path their own resolver already kept
 * beneath. */
static inline int sb_openat_beneath(int dirfd, const char *rel, int flags) {
  int fd = sb_openat2(dirfd, rel, flags, 0, true, false);
  if (fd >= 0 || fd != -ENOSYS) return fd < 0 ? (errno = -fd, -1) : fd;
  return openat(dirfd, rel, flags | O_CLOEXEC);
}

/* Is dirfd in procfs, whose links are magic (Linux)? */
static inline bool sb_on_procfs(int dirfd) {
#if defined(__linux__)
  struct statfs sf;
  return fstatfs(dirfd, &sf) == 0 && sf.f_type == 0x9fa0; /* PROC_SUPER_MAGIC */
#else
  (void)dirfd;
  return false;
#endif
}

#endif
