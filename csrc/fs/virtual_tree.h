/* The VirtualSandbox's in-memory tree (fs/virtual_tree.c), shared by its
 * operations (fs/virtual.c). */
#ifndef SB_FS_VIRTUAL_TREE_H
#define SB_FS_VIRTUAL_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "fs/backend.h"

/* uthash allocates through the sandbox allocator and never exits on OOM: a
 * failed add leaves the item out and its hh.tbl NULL. Every function using
 * a HASH_ macro that may allocate or free has `hmem` in scope. */
#define HASH_NONFATAL_OOM 1
#define uthash_malloc(sz) sb_malloc(hmem, sz)
#define uthash_free(ptr, sz) sb_free(hmem, ptr, sz)
#include <uthash.h>

typedef struct vnode vnode;
struct vnode {
  UT_hash_handle hh; /* in the parent's table of children */
  vnode *parent;
  vnode *children; /* directories: head of the children table */
  char *data; /* files: `size` bytes and a NUL (NULL when empty) */
  uint64_t size;
  double mtime;
  uint8_t type; /* SB_T_FILE | SB_T_DIR | SB_T_SYMLINK (data: the target, size: its length) */
  uint8_t unsorted; /* directories: children no longer in name order */
  uint16_t namelen;
  char name[];
};

typedef struct vtree {
  vnode *root;
} vtree;

#define VT(fs) ((vtree *)(fs)->impl)

typedef struct vres {
  vnode *node; /* what the path names */
  bool followed; /* a link was followed on the way (the policy looks again) */
} vres;

static inline double sb_vt_now(void) { return sb_wall(); }
static inline size_t sb_vt_node_bytes(size_t namelen) { return sizeof(vnode) + namelen + 1; }

vnode *sb_vt_node_new(const sb_mem *m, const char *name, size_t len, int type);
vnode *sb_vt_child_find(vnode *dir, const char *name, size_t len);
int sb_vt_name_cmp(const vnode *a, const vnode *b);
/* Link c under dir; false on OOM (c is then not linked). */
bool sb_vt_child_add(const sb_mem *hmem, vnode *dir, vnode *c);
void sb_vt_child_del(const sb_mem *hmem, vnode *dir, vnode *c);
/* Free an unlinked subtree; adds what it held to *bytes and *nodes. */
void sb_vt_subtree_free(const sb_mem *hmem, vnode *n, uint64_t *bytes, uint64_t *nodes);
/* Unlink n, free it and everything below, give the quota back. */
sb_code sb_vt_unlink_free(sb_fs *fs, vnode *n);
/* Resolve a clean root-relative path (SPEC §4): links spliced while inside,
 * a final one followed with `follow`. */
sb_code sb_vt_resolve(vtree *v, const char *path, size_t len, bool follow, vres *out, sb_err *e);
/* The root-relative path of n into out (>= SB_PATH_MAX + 1 bytes). */
size_t sb_vt_node_path(const vnode *n, char *out);
/* p resolved (a trailing "/" must name a directory). */
sb_code sb_vt_lookup(vtree *v, const sb_path *p, bool follow, vres *r, sb_err *e);
/* The directory of p's components [0, k). */
sb_code sb_vt_resolve_dir(vtree *v, const sb_path *p, unsigned k, vres *r, sb_err *e);
/* The parent of p's last component; with `create`, the first missing one. */
sb_code sb_vt_find_parent(vtree *v, const sb_path *p, bool create, vres *dir, unsigned *first_missing, sb_err *e);
/* Directories for p's components [from, upto) under dir (undone on OOM). */
sb_code sb_vt_make_dirs(sb_fs *fs, const sb_path *p, vnode *dir, unsigned from, unsigned upto, vnode **last, sb_err *e);

#endif
