#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plat/fd.h"

int sb_write_small(int dirfd, const char *path, const char *s) {
  int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = strlen(s);
  ssize_t w = write(fd, s, len);
  int err = errno;
  close(fd);
  errno = err;
  return w == (ssize_t)len ? 0 : -1;
}

ssize_t sb_read_small(int dirfd, const char *path, char *buf, size_t cap) {
  int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, cap - 1);
  int err = errno;
  close(fd);
  errno = err;
  if (n >= 0) buf[n] = '\0';
  return n;
}

int sb_fd_path(int fd, char *out, size_t cap) { return sb_fd_path_of(fd, out, cap) > 0 ? 0 : -1; }
