/* The ContainerSandbox's state and the helpers its files share
 * (container.c: writes, life and commands; container_read.c: reads;
 * container_walk.c: the walk; container_layer.c: below them all). Private
 * to them: everything else goes through fs/container.h. */
#ifndef SB_FS_CONTAINER_IMPL_H
#define SB_FS_CONTAINER_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "fs/backend.h"
#include "fs/resolver.h"
#include "fs/rooted.h"

/* A tree reads may come from: [0] is base_dir, then the read roots. */
typedef struct layer {
  sb_resolver res;
  bool content; /* file contents may be read (false: base_dir in mode "w") */
} layer;

/* Names the root of an overlay's upper layer is known not to hold (its
 * untouched reads skip their look-up): kept only while nothing outside
 * this sandbox's own calls can change the layer (sb_fs.outside is 0), and
 * forgotten at every change of the tree. */
#define SB_CT_ABSENT_MAX 8
typedef struct sb_ct_absent {
  unsigned n, next;
  char name[SB_CT_ABSENT_MAX][SB_NAME_MAX + 1];
} sb_ct_absent;

typedef struct container {
  layer *layers;
  size_t nlayers;
  bool can_write;
  sb_disk disk;
  sb_tmpnames tmp;
  int *ro_fds; /* the read roots' fds, for commands */
  int usage_fd; /* what max_disk_usage counts when it is not the root (an overlay's upper layer), or -1 */
  int base_fd; /* an overlay's base_dir itself (the root is then the merged view), or -1 */
  sb_ct_absent absent;
} container;

#define CT(fs) ((container *)(fs)->impl)

/* The read side (fs/container_read.c): the backend's operations. */
sb_code sb_ct_read(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e);
sb_code sb_ct_stat(sb_fs *fs, const sb_path *p, bool follow, sb_stat *out, sb_err *e);
sb_code sb_ct_realpath(sb_fs *fs, const sb_path *p, bool follow, sb_bytes *out, sb_err *e);
sb_code sb_ct_readlink(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e);
sb_code sb_ct_readdir(sb_fs *fs, const sb_path *p, sb_dirlist *dl, sb_err *e);

/* The last component of p as a NUL-terminated name in out. */
const char *sb_ct_last_name(const sb_path *p, char out[SB_NAME_MAX + 1]);
/* The policy on where fd (+ name) really is beneath the root. */
sb_code sb_ct_recheck(sb_fs *fs, const layer *v, int fd, const char *name, sb_access acc, int kind, sb_err *e);
/* p's parent directory in layer v (made with `create`), or -1 with e. */
int sb_ct_open_parent(const layer *v, const sb_path *p, bool create, sb_err *e);
/* p in layer v, links followed while inside (the final one with `follow`
 * or a trailing "/"); an fd or -errno. */
int sb_ct_open_in(const layer *v, const sb_path *p, int flags, bool follow);
/* Each layer in turn, merged as listings and walks merge them. */
typedef sb_code (*sb_ct_layer_each)(sb_fs *fs, size_t i, void *ud, sb_err *e);
sb_code sb_ct_merge_layers(sb_fs *fs, sb_ct_layer_each each, void *ud, bool skip_later, size_t *found, sb_err *e);

/* container_walk.c */
int sb_ct_count_bytes(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref);
sb_code sb_ct_walk_layer(sb_fs *fs, size_t vi, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e);
sb_code sb_ct_usage_walk(sb_fs *fs, int fd, uint64_t *used, sb_err *e);
sb_code sb_ct_walk(sb_fs *fs, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e);
sb_code sb_ct_open_ref(sb_fs *fs, const void *ref, int *fd, sb_bytes *mem, sb_err *e);

#endif
