#ifndef SB_PLAT_XATTR_H
#define SB_PLAT_XATTR_H
/* Extended attributes through an fd (the overlay format's opaque marks):
 * Linux reads them through /proc/self/fd (an O_PATH fd takes no
 * fgetxattr), Apple's calls take a position and options; elsewhere none
 * (-1, ENOTSUP). */
#include <errno.h>
#include <stdio.h>
#include <sys/types.h>

#if defined(__linux__)
#include <sys/xattr.h>
#elif defined(__APPLE__)
#if __has_include(<sys/xattr.h>)
#include <sys/xattr.h>
#else /* Zig's macOS headers leave it out: the calls as xattr(2) gives them */
#include <stdint.h>
ssize_t fgetxattr(int fd, const char *name, void *value, size_t size, uint32_t position, int options);
int fsetxattr(int fd, const char *name, const void *value, size_t size, uint32_t position, int options);
#endif
#endif

static inline ssize_t sb_fgetxattr(int fd, const char *name, void *buf, size_t len) {
#if defined(__linux__)
  char lnk[48];
  snprintf(lnk, sizeof lnk, "/proc/self/fd/%d", fd);
  return getxattr(lnk, name, buf, len);
#elif defined(__APPLE__)
  return fgetxattr(fd, name, buf, len, 0, 0);
#else
  (void)fd;
  (void)name;
  (void)buf;
  (void)len;
  errno = ENOTSUP;
  return -1;
#endif
}

static inline int sb_fsetxattr(int fd, const char *name, const void *val, size_t len) {
#if defined(__linux__)
  return fsetxattr(fd, name, val, len, 0);
#elif defined(__APPLE__)
  return fsetxattr(fd, name, val, len, 0, 0);
#else
  (void)fd;
  (void)name;
  (void)val;
  (void)len;
  errno = ENOTSUP;
  return -1;
#endif
}

#endif
