/* The container backend: a real directory, every operation relative to an
 * opened root fd (or a read root's fd) through the one resolver. */
#ifndef SB_FS_CONTAINER_H
#define SB_FS_CONTAINER_H

#include "fs/backend.h"

extern const sb_backend sb_container_backend;

typedef struct sb_container_opts {
  int rootfd; /* O_PATH | O_DIRECTORY; ownership passes to the backend */
  const int *roots; /* read roots' fds, in order; ownership passes too */
  size_t nroots;
  bool can_read; /* mode "r" / "rw" */
  bool can_write; /* mode "w" / "rw" */
  const char *resolver; /* "auto" | "openat2" | "fallback" */
  uint64_t max_disk_usage; /* SB_UNLIMITED = none */
} sb_container_opts;

/* Attach the backend to fs. On failure every fd in o is closed. */
sb_code sb_container_open(sb_fs *fs, const sb_container_opts *o, sb_err *e);
const char *sb_container_resolver(sb_fs *fs);
/* base_dir's fd (still the backend's) and how many read roots there are. */
int sb_container_base(sb_fs *fs, size_t *nroots);
/* Work in another tree from now on (an overlay's merged view of the same
 * root), max_disk_usage counting usage_fd's tree (its upper layer; -1 =
 * the root); takes both fds, closes the old root. */
void sb_container_set_root(sb_fs *fs, int fd, int usage_fd);

#endif
