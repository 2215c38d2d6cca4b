#ifndef SB_PLAT_DIR_H
#define SB_PLAT_DIR_H
/* A directory's entries ("." and ".." among them) with their d_type, in
 * the file system's order. Linux: getdents64 straight into a buffer (no
 * DIR, no fcntl, no fstat); elsewhere readdir over a duplicate of the fd. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "plat/os.h"
#if !SB_LINUX
#include <fcntl.h>
#endif

/* fn returns false to stop (sb_dir_each then returns 1). */
typedef bool (*sb_dir_fn)(void *ud, const char *name, unsigned char type);

/* Each entry of lfd, a directory open for reading at its start: 0 at the
 * end, 1 when fn stopped, -errno on error. */
static inline int sb_dir_each(int lfd, sb_dir_fn fn, void *ud) {
#if SB_LINUX
  char buf[16384] __attribute__((aligned(8)));
  for (;;) {
    ssize_t n = getdents64(lfd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? -errno : 0;
    for (ssize_t off = 0; off < n;) {
      struct dirent64 *de = (struct dirent64 *)(void *)(buf + off);
      if (!fn(ud, de->d_name, de->d_type)) return 1;
      off += de->d_reclen;
    }
  }
#else
  int fd = fcntl(lfd, F_DUPFD_CLOEXEC, 0);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (!d) {
    int err = errno;
    if (fd >= 0) close(fd);
    return -err;
  }
  int r = 0;
  struct dirent *de;
  for (;;) {
    errno = 0;
    if (!(de = readdir(d))) {
      r = errno ? -errno : 0;
      break;
    }
    if (!fn(ud, de->d_name, de->d_type)) {
      r = 1;
      break;
    }
  }
  closedir(d);
  return r;
#endif
}

#endif
