/* Small files of the kernel's interfaces (cgroup settings, uid maps): one
 * write or read of a short text, relative to a directory fd (AT_FDCWD for
 * an absolute path). errno is kept for the caller. */
#ifndef SB_BASE_FILE_H
#define SB_BASE_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Write all of s in one write(2); 0 or -1. */
int sb_write_small(int dirfd, const char *path, const char *s);
/* Read at most cap - 1 bytes, NUL-terminated; the length or -1. */
ssize_t sb_read_small(int dirfd, const char *path, char *buf, size_t cap);
/* The path the kernel names fd by (its /proc/self/fd link), NUL-terminated
 * in out; 0 or -1. */
int sb_fd_path(int fd, char *out, size_t cap);

#endif
