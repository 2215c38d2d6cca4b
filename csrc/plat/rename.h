#ifndef SB_PLAT_RENAME_H
#define SB_PLAT_RENAME_H
/* A rename that never replaces what the new name holds (EEXIST instead):
 * Linux's renameat2(RENAME_NOREPLACE), Apple's renameatx_np(RENAME_EXCL).
 * Elsewhere a file is linked under the new name (which fails atomically
 * when the name exists) and then unlinked from the old one; a directory,
 * which cannot be linked, is checked first: a name made between the check
 * and the rename is replaced if it is an empty directory (a window the
 * native calls do not have). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plat/os.h"

static inline int sb_rename_noreplace(int fd1, const char *n1, int fd2, const char *n2) {
#if SB_LINUX
  return renameat2(fd1, n1, fd2, n2, RENAME_NOREPLACE);
#elif defined(__APPLE__)
  return renameatx_np(fd1, n1, fd2, n2, RENAME_EXCL);
#else
  if (linkat(fd1, n1, fd2, n2, 0) == 0) {
    if (unlinkat(fd1, n1, 0) == 0) return 0;
    int err = errno;
    unlinkat(fd2, n2, 0);
    errno = err;
    return -1;
  }
  if (errno != EPERM && errno != EMLINK && errno != ENOTSUP) return -1; /* EEXIST, EXDEV, ENOENT, ... */
  struct stat st;
  if (fstatat(fd2, n2, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    errno = EEXIST;
    return -1;
  }
  if (errno != ENOENT) return -1;
  return renameat(fd1, n1, fd2, n2);
#endif
}

#endif
