/* ContainerSandbox file backend: a real directory, every operation relative
 * to an opened root fd (or a read root's fd) through the one resolver. */
#ifndef SB_ROOTFS_H
#define SB_ROOTFS_H

#include "fs/backend.h"

extern const sb_backend sb_rootfs_backend;

typedef struct sb_rootfs_opts {
  int rootfd;         /* O_PATH | O_DIRECTORY; ownership passes to the backend */
  const int *roots;   /* read roots' fds, in order; ownership passes too */
  size_t nroots;
  bool can_read;      /* mode "r" / "rw" */
  bool can_write;     /* mode "w" / "rw" */
  const char *resolver; /* "auto" | "openat2" | "fallback" */
  uint64_t max_disk_usage; /* SB_UNLIMITED = none */
} sb_rootfs_opts;

/* Attach the backend to sb. On failure every fd in o is closed. */
sb_code sb_rootfs_open(sb_sandbox *sb, const sb_rootfs_opts *o, sb_err *e);
const char *sb_rootfs_resolver(sb_sandbox *sb);
int sb_rootfs_rootfd(sb_sandbox *sb);
/* The read roots' fds, in order (for the commands' Landlock rules). */
size_t sb_rootfs_read_roots(sb_sandbox *sb, int *fds, size_t max);
/* Commands may have changed the tree: recount disk usage before the next write. */
void sb_rootfs_mark_dirty(sb_sandbox *sb);
/* Open a directory beneath the root for a command's cwd. fd or -1 with e. */
int sb_rootfs_open_dir(sb_sandbox *sb, const sb_path *p, sb_err *e);

#endif
