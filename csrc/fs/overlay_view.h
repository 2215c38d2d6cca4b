/* The userspace overlay's merged view (fs/overlay.c's part that knows the
 * layers): the kernel's on-disk format, the lookup over held directory fds
 * of both layers, copy-up, merged listings. Internal to fs/overlay*.c. */
#ifndef SB_FS_OVERLAY_VIEW_H
#define SB_FS_OVERLAY_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs/backend.h"
#include "fs/rooted.h"

enum { UP = 0, LO = 1 };
#define DEPTH_MAX 512 /* directories a lookup may hold */

typedef struct ovl {
  int root[2]; /* O_PATH | O_DIRECTORY: the upper layer, base_dir */
  bool can_read, can_write;
  const char *opaque_x; /* the xattr this overlay marks opaque directories with */
  sb_tmpnames tmp;
  sb_disk disk; /* max_disk_usage counts the upper layer */
  char why[512];
} ovl;

#define OV(fs) ((ovl *)(fs)->impl)

/* A directory of the merged view: its fd in each layer (-1: not there, or
 * hidden below an opaque directory). */
typedef struct mdir {
  int fd[2];
} mdir;

/* What a lookup found: the parent directory (owned), the final name and
 * what the merged view holds there. */
typedef struct onode {
  mdir parent;
  char name[SB_NAME_MAX + 1]; /* "" = the root itself */
  int where; /* UP, LO, or -1: nothing there */
  bool whiteout; /* the upper layer hides the name */
  bool lower_has; /* the base (where visible) has an entry of that name */
  bool lower_dir; /* ... and it is a directory */
  struct stat st; /* the object (lstat), where >= 0 */
  char rel[SB_WORK_MAX + 1]; /* its real root-relative path in the merged view */
  size_t rlen, plen; /* rel's length; the parent's part of it */
  bool partial; /* ENOENT before the final component: rel is where it was going */
} onode;

/* Close both fds; idempotent. */
void sb_ovl_mdir_close(mdir *d);
void sb_ovl_node_init(onode *n);
void sb_ovl_node_free(onode *n);
bool sb_ovl_is_dir(const onode *n);

/* The kernel's format: is the directory fd opaque (either xattr)? */
bool sb_ovl_opaque(int fd);
/* Mark dirfd/name opaque with this overlay's xattr. 0 or -errno. */
int sb_ovl_set_opaque(const ovl *ov, int dirfd, const char *name);
/* Is n's directory in the upper layer opaque? */
bool sb_ovl_upper_opaque(const onode *n);
/* A whiteout (character device 0/0) at dirfd/name. 0 or -errno. */
int sb_ovl_make_whiteout(int dirfd, const char *name);
/* O_PATH directory fd of dirfd/name, no link followed, or -errno. */
int sb_ovl_open_dir(int dirfd, const char *name);
int sb_ovl_dup_fd(int fd);

/* What the merged directory d holds at name (n: where, st, whiteout,
 * lower_has, lower_dir). 0 or -errno. */
int sb_ovl_child(const mdir *d, const char *name, onode *n);
/* Enter the directory `name` of d, which sb_ovl_child found (in n). */
int sb_ovl_descend(const mdir *d, const char *name, const onode *n, mdir *out);

/* Resolve a root-relative path in the merged view: links followed while
 * inside (a final one too with `follow`, or when the final component ends
 * in "/"). 0 with n filled (the final name may be missing: where = -1), or
 * -errno (-EXDEV: it escapes; -ENOENT with n->partial: a directory on the
 * way is missing, n->rel where the path was going). */
int sb_ovl_lookup(const ovl *ov, const char *path, size_t len, bool follow, onode *n);
/* The same for a front-door path ("x/" must be a directory: ENOTDIR). */
int sb_ovl_lookup_path(const ovl *ov, const sb_path *p, bool follow, onode *n);

/* The upper layer's directory at the merged path rel (no link, no ".."),
 * every directory on the way made there: copied up from the base with its
 * mode, made 0755, or made opaque over a whiteout. An O_PATH fd or -errno. */
int sb_ovl_ensure_upper(const ovl *ov, const char *rel, size_t len);
/* The upper layer's directory holding n's final name (copied up). */
int sb_ovl_upper_parent(const ovl *ov, const onode *n);

/* Append the merged directory d's entries to dl: the upper layer's, then
 * the base's it does not shadow; whiteouts hide and are dropped. */
sb_code sb_ovl_list_merged(sb_fs *fs, const mdir *d, sb_dirlist *dl, unsigned flags, sb_err *e);
/* The merged directory n names (a directory). 0 or -errno. */
int sb_ovl_open_node_dir(const onode *n, mdir *out);
/* Add the bytes of the regular files of the merged tree below d. */
void sb_ovl_merged_bytes(sb_fs *fs, const mdir *d, uint64_t *bytes, int depth);

/* The rules, on where the object n really is in the merged view. */
sb_code sb_ovl_recheck(sb_fs *fs, const onode *n, sb_access acc, int kind, sb_err *e);

/* The backend's walk and its reads on another thread (fs/overlay_walk.c). */
sb_code sb_ovl_walk(sb_fs *fs, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e);
sb_code sb_ovl_open_ref(sb_fs *fs, const void *ref, int *fd, sb_bytes *mem, sb_err *e);

#endif
