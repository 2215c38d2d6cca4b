/* The overlay backend in userspace: an OverlaySandbox's merged view (its
 * upper layer over base_dir) for file operations where the kernel's
 * overlayfs cannot be mounted. It keeps the layers in the kernel's own
 * format, so the same state directory mounted later shows the same tree.
 * Commands cannot run over it (exec is ENOTSUP, saying why). */
#ifndef SB_FS_OVERLAY_H
#define SB_FS_OVERLAY_H

#include "fs/backend.h"

extern const sb_backend sb_overlay_backend;

typedef struct sb_overlay_opts {
  int upper_fd, lower_fd; /* O_PATH | O_DIRECTORY; ownership passes to the backend */
  bool can_read, can_write;
  bool userxattr; /* opaque directories marked user.overlay.* (else trusted.overlay.*) */
  uint64_t max_disk_usage; /* of the upper layer; SB_UNLIMITED = none */
  const char *why; /* why the kernel's overlay is not there (for exec's ENOTSUP) */
} sb_overlay_opts;

/* Attach the backend to fs. On failure both fds are closed. */
sb_code sb_overlay_open(sb_fs *fs, const sb_overlay_opts *o, sb_err *e);

#endif
