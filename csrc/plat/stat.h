#ifndef SB_PLAT_STAT_H
#define SB_PLAT_STAT_H
/* struct stat's modification time (POSIX 2008 st_mtim; Apple's
 * st_mtimespec), major/minor (sys/sysmacros.h on glibc), mknodat. */
#include <sys/stat.h>
#include <sys/types.h>
#if defined(__linux__)
#include <sys/sysmacros.h>
#endif

#include <errno.h>
#include <fcntl.h>

#if defined(__APPLE__)
#define SB_ST_MTIM(st) ((st)->st_mtimespec)
#else
#define SB_ST_MTIM(st) ((st)->st_mtim)
#endif

/* mknodat (POSIX 2008; not in the macOS headers at hand: ENOTSUP there). */
static inline int sb_mknodat(int dirfd, const char *name, mode_t mode, dev_t dev) {
#if defined(__APPLE__)
  (void)dirfd;
  (void)name;
  (void)mode;
  (void)dev;
  errno = ENOTSUP;
  return -1;
#else
  return mknodat(dirfd, name, mode, dev);
#endif
}

#endif
