#include "fs/virtual.h"
#include "base/clock.h"
#include "fs/dirlist.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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
  char *data;      /* files: `size` bytes and a NUL (NULL when empty) */
  uint64_t size;
  double mtime;
  uint8_t type;     /* SB_T_FILE | SB_T_DIR */
  uint8_t unsorted; /* directories: children no longer in name order */
  uint16_t namelen;
  char name[];
};

typedef struct vtree {
  vnode *root;
} vtree;

#define VT(fs) ((vtree *)(fs)->impl)

static double now(void) { return sb_wall(); }

static size_t node_bytes(size_t namelen) { return sizeof(vnode) + namelen + 1; }

static vnode *node_new(const sb_mem *m, const char *name, size_t len, int type) {
  vnode *n = sb_malloc(m, node_bytes(len));
  if (!n) return NULL;
  memset(n, 0, sizeof *n);
  n->type = (uint8_t)type;
  n->namelen = (uint16_t)len;
  memcpy(n->name, name, len);
  n->name[len] = '\0';
  n->mtime = now();
  return n;
}

static vnode *child_find(vnode *dir, const char *name, size_t len) {
  vnode *c = NULL;
  HASH_FIND(hh, dir->children, name, len, c);
  return c;
}

static int name_cmp(const vnode *a, const vnode *b) {
  size_t n = a->namelen < b->namelen ? a->namelen : b->namelen;
  int r = memcmp(a->name, b->name, n);
  return r ? r : (a->namelen > b->namelen) - (a->namelen < b->namelen);
}

/* Link c under dir; false on OOM (c is then not linked). uthash appends to
 * the iteration order: it stays sorted by name while names come in order
 * (the common case), so listings rarely need to sort. */
static bool child_add(const sb_mem *hmem, vnode *dir, vnode *c) {
  c->parent = dir;
  if (dir->children && !dir->unsorted) {
    UT_hash_table *tbl = dir->children->hh.tbl;
    if (name_cmp(ELMT_FROM_HH(tbl, tbl->tail), c) > 0) dir->unsorted = 1;
  }
  HASH_ADD_KEYPTR(hh, dir->children, c->name, c->namelen, c);
  if (!c->hh.tbl) return false;
  dir->mtime = c->mtime;
  return true;
}

static void child_del(const sb_mem *hmem, vnode *dir, vnode *c) {
  HASH_DELETE(hh, dir->children, c);
  dir->mtime = now();
}

/* Free a subtree that is no longer linked; counts what it held. */
static void subtree_free(const sb_mem *hmem, vnode *n, uint64_t *bytes, uint64_t *nodes) {
  vnode *c, *tmp;
  HASH_ITER(hh, n->children, c, tmp) {
    HASH_DELETE(hh, n->children, c);
    subtree_free(hmem, c, bytes, nodes);
  }
  if (n->type == SB_T_FILE) {
    *bytes += n->size;
    sb_free(hmem, n->data, n->size + 1);
  }
  (*nodes)++;
  sb_free(hmem, n, node_bytes(n->namelen));
}

static sb_code unlink_free(sb_fs *fs, vnode *n) {
  const sb_mem *hmem = &fs->mem;
  uint64_t bytes = 0, nodes = 0;
  child_del(hmem, n->parent, n);
  subtree_free(hmem, n, &bytes, &nodes);
  sb_quota_apply(&fs->quota, -(int64_t)bytes, -(int64_t)nodes);
  return SB_OK;
}

/* Walk components [0, upto). Intermediate components must be directories. */
static sb_code walk_to(vtree *v, const sb_path *p, unsigned upto, vnode **out,
                       unsigned *reached, sb_err *e) {
  vnode *n = v->root;
  for (unsigned i = 0; i < upto; i++) {
    if (n->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
    size_t len;
    const char *c = sb_path_comp(p, i, &len);
    if (sb_path_is_dotdot(c, len)) {
      n = n->parent ? n->parent : n;
      continue;
    }
    vnode *ch = child_find(n, c, len);
    if (!ch) {
      *out = n;
      if (reached) *reached = i;
      return sb_fail(e, SB_ENOENT, NULL);
    }
    n = ch;
  }
  *out = n;
  if (reached) *reached = upto;
  return SB_OK;
}

static sb_code lookup(vtree *v, const sb_path *p, vnode **out, sb_err *e) {
  sb_code c = walk_to(v, p, p->ncomp, out, NULL, e);
  if (c == SB_OK && p->must_dir && (*out)->type != SB_T_DIR)
    return sb_fail(e, SB_ENOTDIR, NULL);
  return c;
}

/* Resolve the parent of the last component. With `create`, report how many
 * directories are missing instead of failing (they are created later, after
 * the quota check). A missing component followed by ".." cannot be created
 * unambiguously: ENOENT. */
static sb_code find_parent(vtree *v, const sb_path *p, bool create, vnode **dir,
                           unsigned *first_missing, sb_err *e) {
  unsigned reached = 0;
  unsigned upto = p->ncomp - 1;
  sb_code c = walk_to(v, p, upto, dir, &reached, e);
  *first_missing = upto;
  if (c == SB_OK) {
    if ((*dir)->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
    return SB_OK;
  }
  if (c != SB_ENOENT || !create) return c;
  for (unsigned i = reached; i < p->ncomp; i++) {
    size_t len;
    const char *c2 = sb_path_comp(p, i, &len);
    if (sb_path_is_dotdot(c2, len)) return sb_fail(e, SB_ENOENT, NULL);
  }
  *first_missing = reached;
  return SB_OK;
}

/* Create directories for components [from, upto) under dir. On OOM, undo. */
static sb_code make_dirs(sb_fs *fs, const sb_path *p, vnode *dir, unsigned from,
                         unsigned upto, vnode **last, sb_err *e) {
  const sb_mem *hmem = &fs->mem;
  vnode *first = NULL, *cur = dir;
  for (unsigned i = from; i < upto; i++) {
    size_t len;
    const char *c = sb_path_comp(p, i, &len);
    vnode *d = node_new(hmem, c, len, SB_T_DIR);
    if (!d || !child_add(hmem, cur, d)) {
      sb_free(hmem, d, d ? node_bytes(len) : 0);
      if (first) unlink_free(fs, first);
      return sb_fail(e, SB_ENOSPC, "out of memory");
    }
    sb_quota_apply(&fs->quota, 0, 1);
    if (!first) first = d;
    cur = d;
  }
  *last = cur;
  return SB_OK;
}

static sb_code vt_read(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e) {
  vnode *n;
  sb_code c = lookup(VT(fs), p, &n, e);
  if (c != SB_OK) return c;
  if (n->type == SB_T_DIR) return sb_fail(e, SB_EISDIR, NULL);
  if ((c = sb_policy_read_size(fs->policy, n->size, e)) != SB_OK) return c;
  out->p = n->data ? n->data : "";
  out->len = n->size;
  return SB_OK;
}

static sb_code vt_write(sb_fs *fs, const sb_path *p, const char *data, size_t len,
                         const sb_write_opts *o, sb_err *e) {
  const sb_mem *hmem = &fs->mem;
  vtree *v = VT(fs);
  if (p->must_dir) return sb_fail(e, SB_EISDIR, NULL);
  vnode *dir, *old = NULL;
  unsigned miss;
  sb_code c = find_parent(v, p, o->parents, &dir, &miss, e);
  if (c != SB_OK) return c;
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  unsigned ndirs = p->ncomp - 1 - miss;
  if (ndirs == 0 && (old = child_find(dir, name, nlen)) != NULL) {
    if (old->type == SB_T_DIR) return sb_fail(e, SB_EISDIR, NULL);
    if (!o->overwrite) return sb_fail(e, SB_EEXIST, NULL);
  }
  int64_t dbytes = (int64_t)len - (int64_t)(old ? old->size : 0);
  int64_t dnodes = old ? 0 : (int64_t)ndirs + 1;
  if ((c = sb_quota_check(&fs->quota, dbytes, dnodes, e)) != SB_OK) return c;

  /* Everything that can fail is allocated before the tree changes. */
  char *copy = NULL;
  if (len) {
    if (!(copy = sb_malloc(hmem, len + 1))) return sb_fail(e, SB_ENOSPC, "out of memory");
    memcpy(copy, data, len);
    copy[len] = '\0';
  }
  if (old) {
    sb_free(hmem, old->data, old->size + 1);
    old->data = copy;
    old->size = len;
    old->mtime = now();
    sb_quota_apply(&fs->quota, dbytes, 0);
    return SB_OK;
  }
  vnode *f = node_new(hmem, name, nlen, SB_T_FILE);
  if (!f) {
    sb_free(hmem, copy, len + 1);
    return sb_fail(e, SB_ENOSPC, "out of memory");
  }
  vnode *target = dir, *first_new = NULL;
  if (ndirs) {
    if ((c = make_dirs(fs, p, dir, miss, p->ncomp - 1, &target, e)) != SB_OK) {
      sb_free(hmem, copy, len + 1);
      sb_free(hmem, f, node_bytes(nlen));
      return c;
    }
    size_t flen;
    const char *fname = sb_path_comp(p, miss, &flen);
    first_new = child_find(dir, fname, flen);
  }
  f->data = copy;
  f->size = len;
  if (!child_add(hmem, target, f)) {
    sb_free(hmem, copy, len + 1);
    sb_free(hmem, f, node_bytes(f->namelen));
    if (first_new) unlink_free(fs, first_new);
    return sb_fail(e, SB_ENOSPC, "out of memory");
  }
  sb_quota_apply(&fs->quota, (int64_t)len, 1);
  return SB_OK;
}

static void fill_stat(const vnode *n, sb_stat *st) {
  st->type = n->type;
  st->size = n->type == SB_T_FILE ? n->size : 0;
  st->mtime = n->mtime;
  st->mode = n->type == SB_T_DIR ? 0755 : 0644;
}

static sb_code vt_stat(sb_fs *fs, const sb_path *p, sb_stat *st, sb_err *e) {
  vnode *n;
  sb_code c = lookup(VT(fs), p, &n, e);
  if (c == SB_OK) fill_stat(n, st);
  return c;
}

static sb_code list_children(sb_fs *fs, vnode *d, sb_dirlist *out, sb_err *e) {
  vnode *c, *tmp;
  if (d->unsorted) { /* in place, no allocation; later listings find it sorted */
    HASH_SRT(hh, d->children, name_cmp);
    d->unsorted = 0;
  }
  HASH_ITER(hh, d->children, c, tmp) {
    sb_dirent ent = {.name = c->name, .namelen = c->namelen, .type = c->type, .size = c->type == SB_T_FILE ? c->size : 0};
    if (sb_dirlist_push(&fs->mem, out, &ent) != 0) return sb_fail(e, SB_ENOSPC, "out of memory");
  }
  return SB_OK;
}

static sb_code vt_readdir(sb_fs *fs, const sb_path *p, sb_dirlist *out, sb_err *e) {
  vnode *n;
  sb_code c = lookup(VT(fs), p, &n, e);
  if (c != SB_OK) return c;
  if (n->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  return list_children(fs, n, out, e);
}

static sb_code vt_mkdir(sb_fs *fs, const sb_path *p, bool parents, sb_err *e) {
  vtree *v = VT(fs);
  vnode *dir;
  unsigned miss;
  sb_code c = find_parent(v, p, parents, &dir, &miss, e);
  if (c != SB_OK) return c;
  unsigned ndirs = p->ncomp - 1 - miss;
  if (ndirs == 0) {
    size_t nlen;
    const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
    vnode *old = child_find(dir, name, nlen);
    if (old) {
      if (old->type == SB_T_DIR && parents) return SB_OK;
      return sb_fail(e, SB_EEXIST, NULL);
    }
  }
  if ((c = sb_quota_check(&fs->quota, 0, (int64_t)ndirs + 1, e)) != SB_OK) return c;
  vnode *last;
  return make_dirs(fs, p, dir, miss, p->ncomp, &last, e);
}

static sb_code vt_remove(sb_fs *fs, const sb_path *p, bool recursive, sb_err *e) {
  vnode *n;
  sb_code c = lookup(VT(fs), p, &n, e);
  if (c != SB_OK) return c;
  if (n == VT(fs)->root) return sb_fail(e, SB_EINVAL, "the sandbox root cannot be removed");
  if (n->type == SB_T_DIR && n->children && !recursive)
    return sb_fail(e, SB_ENOTEMPTY, "directory not empty (use recursive = true)");
  return unlink_free(fs, n);
}

static bool is_ancestor(const vnode *a, const vnode *n) {
  for (; n; n = n->parent)
    if (n == a) return true;
  return false;
}

static sb_code vt_rename(sb_fs *fs, const sb_path *from, const sb_path *to,
                          bool overwrite, sb_err *e) {
  const sb_mem *hmem = &fs->mem;
  vtree *v = VT(fs);
  vnode *src, *sdir, *dir;
  unsigned miss;
  /* as the kernel: both parents first, then the source entry */
  sb_code c = find_parent(v, from, false, &sdir, &miss, e);
  if (c != SB_OK) return c;
  if ((c = find_parent(v, to, false, &dir, &miss, e)) != SB_OK) return c;
  size_t slen;
  const char *sname = sb_path_comp(from, from->ncomp - 1, &slen);
  if (!(src = child_find(sdir, sname, slen))) return sb_fail(e, SB_ENOENT, NULL);
  if (from->must_dir && src->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  if (to->must_dir && src->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  size_t nlen;
  const char *name = sb_path_comp(to, to->ncomp - 1, &nlen);
  vnode *dst = child_find(dir, name, nlen);
  if (dst == src) return SB_OK;
  /* the kernel's order from here: EEXIST, EINVAL, ENOTEMPTY, then types */
  if (dst && !overwrite) return sb_fail(e, SB_EEXIST, NULL);
  if (src->type == SB_T_DIR && is_ancestor(src, dir))
    return sb_fail(e, SB_EINVAL, "cannot move a directory into itself");
  if (dst && is_ancestor(dst, src)) return sb_fail(e, SB_ENOTEMPTY, NULL);
  if (dst) {
    if (src->type == SB_T_DIR && dst->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
    if (src->type != SB_T_DIR && dst->type == SB_T_DIR) return sb_fail(e, SB_EISDIR, NULL);
    if (dst->type == SB_T_DIR && dst->children) return sb_fail(e, SB_ENOTEMPTY, NULL);
  }
  /* The name lives in the node: a new name needs a new node. */
  vnode *moved = src;
  bool renamed = nlen != src->namelen || memcmp(name, src->name, nlen) != 0;
  if (renamed) {
    moved = sb_malloc(hmem, node_bytes(nlen));
    if (!moved) return sb_fail(e, SB_ENOSPC, "out of memory");
  }
  vnode *oldparent = src->parent;
  child_del(hmem, oldparent, src);
  if (renamed) {
    memcpy(moved, src, sizeof *src);
    moved->namelen = (uint16_t)nlen;
    memcpy(moved->name, name, nlen);
    moved->name[nlen] = '\0';
    vnode *ch, *tmp;
    HASH_ITER(hh, moved->children, ch, tmp) ch->parent = moved;
    sb_free(hmem, src, node_bytes(src->namelen));
  }
  if (!child_add(hmem, dir, moved)) {
    /* Put it back where it was; if even that fails, drop it cleanly. */
    uint64_t bytes = 0, nodes = 0;
    if (renamed || !child_add(hmem, oldparent, moved)) {
      subtree_free(hmem, moved, &bytes, &nodes);
      sb_quota_apply(&fs->quota, -(int64_t)bytes, -(int64_t)nodes);
    }
    return sb_fail(e, SB_ENOSPC, "out of memory");
  }
  if (dst) unlink_free(fs, dst);
  return SB_OK;
}

typedef struct walk_state {
  sb_fs *fs;
  sb_walk_fn fn;
  void *ud;
  char rel[SB_PATH_MAX + 1];
} walk_state;

static int cmp_node(const void *a, const void *b) {
  const vnode *x = *(vnode *const *)a, *y = *(vnode *const *)b;
  size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
  int r = memcmp(x->name, y->name, n);
  return r ? r : (x->namelen > y->namelen) - (x->namelen < y->namelen);
}

/* Visit the children of d in name order; rlen = length of d's path. */
static int walk_dir(walk_state *w, vnode *d, size_t rlen, sb_err *e) {
  const sb_mem *m = &w->fs->mem;
  size_t n = HASH_COUNT(d->children);
  if (n == 0) return SB_WALK_CONTINUE;
  vnode **kids = sb_malloc(m, n * sizeof *kids);
  if (!kids) {
    sb_fail(e, SB_ENOSPC, "out of memory");
    return SB_WALK_STOP;
  }
  size_t i = 0;
  vnode *c, *tmp;
  HASH_ITER(hh, d->children, c, tmp) kids[i++] = c;
  qsort(kids, n, sizeof *kids, cmp_node);
  int r = SB_WALK_CONTINUE;
  for (i = 0; i < n && r != SB_WALK_STOP; i++) {
    c = kids[i];
    size_t len = rlen + (rlen ? 1 : 0) + c->namelen;
    if (len > SB_PATH_MAX) continue;
    if (rlen) w->rel[rlen] = '/';
    memcpy(w->rel + len - c->namelen, c->name, c->namelen);
    w->rel[len] = '\0';
    sb_dirent ent = {.name = c->name, .namelen = c->namelen, .type = c->type, .size = c->type == SB_T_FILE ? c->size : 0};
    r = w->fn(w->ud, w->rel, len, &ent, c);
    if (r == SB_WALK_CONTINUE && c->type == SB_T_DIR) r = walk_dir(w, c, len, e);
    else if (r == SB_WALK_SKIP) r = SB_WALK_CONTINUE;
  }
  sb_free(m, kids, n * sizeof *kids);
  return r;
}

static sb_code vt_walk(sb_fs *fs, const sb_path *p, sb_walk_fn fn, void *ud, sb_err *e) {
  vnode *n;
  sb_code c = lookup(VT(fs), p, &n, e);
  if (c != SB_OK) return c;
  walk_state *w = sb_malloc(&fs->mem, sizeof *w);
  if (!w) return sb_fail(e, SB_ENOSPC, "out of memory");
  w->fs = fs;
  w->fn = fn;
  w->ud = ud;
  e->code = SB_OK;
  size_t rlen = sb_path_clean(p, w->rel);
  if (n->type != SB_T_DIR) {
    sb_dirent ent = {.name = n->name, .namelen = n->namelen, .type = n->type, .size = n->size};
    fn(ud, w->rel, rlen, &ent, n);
  } else {
    walk_dir(w, n, rlen, e);
  }
  sb_free(&fs->mem, w, sizeof *w);
  return e->code;
}

static sb_code vt_read_ref(sb_fs *fs, const void *ref, sb_bytes *out, sb_err *e) {
  const vnode *n = ref;
  sb_code c = sb_policy_read_size(fs->policy, n->size, e);
  if (c != SB_OK) return c;
  out->p = n->data ? n->data : "";
  out->len = n->size;
  return SB_OK;
}

static void vt_close(sb_fs *fs) {
  vtree *v = VT(fs);
  if (!v) return;
  uint64_t bytes = 0, nodes = 0;
  subtree_free(&fs->mem, v->root, &bytes, &nodes);
  sb_free(&fs->mem, v, sizeof *v);
  fs->impl = NULL;
}

static size_t tree_bytes(vnode *n) {
  size_t total = node_bytes(n->namelen) + (n->type == SB_T_FILE && n->size ? n->size + 1 : 0);
  if (n->children)
    total += sizeof(UT_hash_table) + n->children->hh.tbl->num_buckets * sizeof(UT_hash_bucket);
  vnode *c, *tmp;
  HASH_ITER(hh, n->children, c, tmp) total += tree_bytes(c);
  return total;
}

size_t sb_virtual_footprint(sb_fs *fs) {
  return VT(fs) ? sizeof(vtree) + tree_bytes(VT(fs)->root) : 0;
}

sb_code sb_virtual_open(sb_fs *fs, sb_err *e) {
  vtree *v = sb_malloc(&fs->mem, sizeof *v);
  if (!v) return sb_fail(e, SB_ENOSPC, "out of memory");
  if (!(v->root = node_new(&fs->mem, "", 0, SB_T_DIR))) {
    sb_free(&fs->mem, v, sizeof *v);
    return sb_fail(e, SB_ENOSPC, "out of memory");
  }
  fs->impl = v;
  return SB_OK;
}

const sb_backend sb_virtual_backend = {
    .kind = "virtual",
    .read = vt_read,
    .write = vt_write,
    .stat = vt_stat,
    .readdir = vt_readdir,
    .mkdir = vt_mkdir,
    .remove = vt_remove,
    .rename = vt_rename,
    .walk = vt_walk,
    .read_ref = vt_read_ref,
    .close = vt_close,
};
