#include "fs/virtual.h"
#include "fs/virtual_tree.h"
#include "base/clock.h"
#include "fs/dirlist.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Where a link was followed, the rules judge the real path (dir's, plus
 * name when given), as the container judges every path. */
static sb_code recheck(sb_fs *fs, const vres *r, const vnode *dir, const char *name, size_t nlen, sb_access acc,
                       int kind, sb_err *e) {
  const sb_policy *pol = fs->policy;
  if (!r->followed || !sb_policy_judges_entries(pol)) return SB_OK;
  char real[SB_PATH_MAX + SB_NAME_MAX + 2];
  size_t len = sb_vt_node_path(dir, real);
  if (name) {
    if (len) real[len++] = '/';
    memcpy(real + len, name, nlen);
    len += nlen;
    real[len] = '\0';
  }
  return sb_policy_check(pol, acc, real, len, kind, e);
}

static sb_code vt_read(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e) {
  vres r;
  sb_code c = sb_vt_lookup(VT(fs), p, true, &r, e);
  if (c != SB_OK) return c;
  vnode *n = r.node;
  if (n->type == SB_T_DIR) return sb_fail(e, SB_EISDIR, NULL);
  if ((c = recheck(fs, &r, n, NULL, 0, SB_ACC_READ, SB_KIND_FILE, e)) != SB_OK) return c;
  if ((c = sb_policy_read_size(fs->policy, n->size, e)) != SB_OK) return c;
  out->p = n->data ? n->data : "";
  out->len = n->size;
  return SB_OK;
}

static sb_code vt_write(sb_fs *fs, const sb_path *p, const char *data, size_t len, const sb_write_opts *o, sb_err *e) {
  const sb_mem *hmem = &fs->mem;
  vtree *v = VT(fs);
  if (p->must_dir) return sb_fail(e, SB_EISDIR, NULL);
  vnode *old = NULL;
  vres pr;
  unsigned miss;
  sb_code c = sb_vt_find_parent(v, p, o->parents, &pr, &miss, e);
  if (c != SB_OK) return c;
  vnode *dir = pr.node;
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  unsigned ndirs = p->ncomp - 1 - miss;
  if ((c = recheck(fs, &pr, dir, name, nlen, SB_ACC_WRITE, SB_KIND_FILE, e)) != SB_OK) return c;
  if (ndirs == 0 && (old = sb_vt_child_find(dir, name, nlen)) != NULL) {
    if (old->type == SB_T_DIR) return sb_fail(e, SB_EISDIR, NULL);
    if (old->type == SB_T_SYMLINK) return sb_fail(e, SB_ELOOP, "refusing to write through a symbolic link");
    if (!o->overwrite) return sb_fail(e, SB_EEXIST, NULL);
  }
  int64_t dbytes = (int64_t)len - (int64_t)(old ? old->size : 0);
  int64_t dnodes = old ? 0 : (int64_t)ndirs + 1;
  if ((c = sb_quota_check(&fs->quota, dbytes, dnodes, e)) != SB_OK) return c;

  /* Everything that can fail is allocated before the tree changes. */
  char *copy = NULL;
  if (len) {
    if (!(copy = sb_malloc(hmem, len + 1))) return sb_fail_oom(e);
    memcpy(copy, data, len);
    copy[len] = '\0';
  }
  if (old) {
    sb_free(hmem, old->data, old->size + 1);
    old->data = copy;
    old->size = len;
    old->mtime = sb_vt_now();
    sb_quota_apply(&fs->quota, dbytes, 0);
    return SB_OK;
  }
  vnode *f = sb_vt_node_new(hmem, name, nlen, SB_T_FILE);
  if (!f) {
    sb_free(hmem, copy, len + 1);
    return sb_fail_oom(e);
  }
  vnode *target = dir, *first_new = NULL;
  if (ndirs) {
    if ((c = sb_vt_make_dirs(fs, p, dir, miss, p->ncomp - 1, &target, e)) != SB_OK) {
      sb_free(hmem, copy, len + 1);
      sb_free(hmem, f, sb_vt_node_bytes(nlen));
      return c;
    }
    size_t flen;
    const char *fname = sb_path_comp(p, miss, &flen);
    first_new = sb_vt_child_find(dir, fname, flen);
  }
  f->data = copy;
  f->size = len;
  if (!sb_vt_child_add(hmem, target, f)) {
    sb_free(hmem, copy, len + 1);
    sb_free(hmem, f, sb_vt_node_bytes(f->namelen));
    if (first_new) sb_vt_unlink_free(fs, first_new);
    return sb_fail_oom(e);
  }
  sb_quota_apply(&fs->quota, (int64_t)len, 1);
  return SB_OK;
}

/* Sizes as lstat gives them: a file's bytes, a link's text, 0 for a directory. */
static uint64_t entry_size(const vnode *n) { return n->type == SB_T_DIR ? 0 : n->size; }

static void fill_stat(const vnode *n, sb_stat *st) {
  st->type = n->type;
  st->size = entry_size(n);
  st->mtime = n->mtime;
  st->mode = n->type == SB_T_DIR ? 0755 : n->type == SB_T_SYMLINK ? 0777 : 0644;
}

static sb_code vt_stat(sb_fs *fs, const sb_path *p, bool follow, sb_stat *st, sb_err *e) {
  vres r;
  sb_code c = sb_vt_lookup(VT(fs), p, follow, &r, e);
  if (c == SB_OK)
    c = recheck(fs, &r, r.node, NULL, 0, SB_ACC_LIST, r.node->type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE, e);
  if (c == SB_OK) fill_stat(r.node, st);
  return c;
}

/* The parent of p's last component and that entry (NULL: none), links in
 * the parent followed, the entry itself not. */
static sb_code find_entry(vtree *v, const sb_path *p, vres *dir, vnode **ent, sb_err *e) {
  unsigned miss;
  sb_code c = sb_vt_find_parent(v, p, false, dir, &miss, e);
  if (c != SB_OK) return c;
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  *ent = sb_vt_child_find(dir->node, name, nlen);
  return SB_OK;
}

static sb_code vt_symlink(sb_fs *fs, const char *target, size_t tlen, const sb_path *p, sb_err *e) {
  const sb_mem *hmem = &fs->mem;
  vres dir;
  vnode *old;
  sb_code c = find_entry(VT(fs), p, &dir, &old, e);
  if (c != SB_OK) return c;
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  char real[SB_PATH_MAX + 1];
  size_t rlen = sb_vt_node_path(dir.node, real);
  if ((c = recheck(fs, &dir, dir.node, name, nlen, SB_ACC_WRITE, SB_KIND_FILE, e)) != SB_OK ||
      (c = sb_policy_link(fs->policy, real, rlen, target, tlen, e)) != SB_OK)
    return c;
  if (old) return sb_fail(e, SB_EEXIST, NULL);
  if (p->must_dir) return sb_fail(e, SB_ENOENT, NULL); /* "new/": a link cannot be a directory */
  if ((c = sb_quota_check(&fs->quota, (int64_t)tlen, 1, e)) != SB_OK) return c;
  vnode *l = sb_vt_node_new(hmem, name, nlen, SB_T_SYMLINK);
  char *text = sb_malloc(hmem, tlen + 1);
  if (!l || !text ||
      (memcpy(text, target, tlen), text[tlen] = '\0', l->data = text, l->size = tlen,
       !sb_vt_child_add(hmem, dir.node, l))) {
    sb_free(hmem, text, text ? tlen + 1 : 0);
    sb_free(hmem, l, l ? sb_vt_node_bytes(nlen) : 0);
    return sb_fail_oom(e);
  }
  sb_quota_apply(&fs->quota, (int64_t)tlen, 1);
  return SB_OK;
}

static sb_code vt_readlink(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e) {
  if (p->ncomp == 0 || sb_path_names_no_entry(p)) return sb_fail(e, SB_EINVAL, "not a symbolic link");
  vres dir;
  vnode *n;
  sb_code c = find_entry(VT(fs), p, &dir, &n, e);
  if (c != SB_OK) return c;
  if (!n) return sb_fail(e, SB_ENOENT, NULL);
  if (n->type != SB_T_SYMLINK || p->must_dir) return sb_fail(e, SB_EINVAL, "not a symbolic link");
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  if ((c = recheck(fs, &dir, dir.node, name, nlen, SB_ACC_LIST, SB_KIND_FILE, e)) != SB_OK) return c;
  out->p = n->data;
  out->len = n->size;
  return SB_OK;
}

static sb_code vt_realpath(sb_fs *fs, const sb_path *p, bool follow, sb_bytes *out, sb_err *e) {
  sb_buf *b = &fs->scratch;
  b->len = 0;
  if (sb_buf_reserve(&fs->mem, b, SB_PATH_MAX + SB_NAME_MAX + 2) != 0) return sb_fail_oom(e);
  vres r;
  sb_code c;
  if (follow || p->ncomp == 0 || sb_path_names_no_entry(p)) {
    if ((c = sb_vt_lookup(VT(fs), p, true, &r, e)) != SB_OK) return c;
    b->len = sb_vt_node_path(r.node, b->p);
  } else {
    vnode *n;
    if ((c = find_entry(VT(fs), p, &r, &n, e)) != SB_OK) return c;
    size_t len = sb_vt_node_path(r.node, b->p), nlen;
    const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
    if (len) b->p[len++] = '/';
    memcpy(b->p + len, name, nlen);
    b->len = len + nlen;
    b->p[b->len] = '\0';
  }
  out->p = b->p;
  out->len = b->len;
  return SB_OK;
}

static sb_code list_children(sb_fs *fs, vnode *d, sb_dirlist *out, sb_err *e) {
  vnode *c, *tmp;
  if (d->unsorted) { /* in place, no allocation; later listings find it sorted */
    HASH_SRT(hh, d->children, sb_vt_name_cmp);
    d->unsorted = 0;
  }
  HASH_ITER(hh, d->children, c, tmp) {
    sb_dirent ent = {.name = c->name, .namelen = c->namelen, .type = c->type, .size = entry_size(c)};
    if (sb_dirlist_push(&fs->mem, out, &ent) != 0) return sb_fail_oom(e);
  }
  return SB_OK;
}

static sb_code vt_readdir(sb_fs *fs, const sb_path *p, sb_dirlist *out, sb_err *e) {
  vres r;
  sb_code c = sb_vt_lookup(VT(fs), p, true, &r, e);
  if (c != SB_OK) return c;
  if (r.node->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  if ((c = recheck(fs, &r, r.node, NULL, 0, SB_ACC_LIST, SB_KIND_DIR, e)) != SB_OK) return c;
  return list_children(fs, r.node, out, e);
}

static sb_code vt_mkdir(sb_fs *fs, const sb_path *p, bool parents, sb_err *e) {
  vtree *v = VT(fs);
  vres pr;
  unsigned miss;
  sb_code c = sb_vt_find_parent(v, p, parents, &pr, &miss, e);
  if (c != SB_OK) return c;
  vnode *dir = pr.node;
  unsigned ndirs = p->ncomp - 1 - miss;
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  if ((c = recheck(fs, &pr, dir, name, nlen, SB_ACC_MODIFY, SB_KIND_DIR, e)) != SB_OK) return c;
  if (ndirs == 0) {
    vnode *old = sb_vt_child_find(dir, name, nlen);
    if (old) {
      if (old->type == SB_T_DIR && parents) return SB_OK;
      return sb_fail(e, SB_EEXIST, NULL);
    }
  }
  if ((c = sb_quota_check(&fs->quota, 0, (int64_t)ndirs + 1, e)) != SB_OK) return c;
  vnode *last;
  return sb_vt_make_dirs(fs, p, dir, miss, p->ncomp, &last, e);
}

/* The entry itself, never a link's target ("link/" must then be a
 * directory, and a link is not one: ENOTDIR, as the kernel says). */
static sb_code vt_remove(sb_fs *fs, const sb_path *p, bool recursive, sb_err *e) {
  if (p->ncomp == 0 || sb_path_names_no_entry(p)) return sb_fail(e, SB_EINVAL, "the sandbox root cannot be removed");
  vres dir;
  vnode *n;
  sb_code c = find_entry(VT(fs), p, &dir, &n, e);
  if (c != SB_OK) return c;
  if (!n) return sb_fail(e, SB_ENOENT, NULL);
  if (p->must_dir && n->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  if ((c = recheck(fs, &dir, dir.node, name, nlen, SB_ACC_MODIFY, n->type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE,
                   e)) != SB_OK)
    return c;
  if (n->type == SB_T_DIR && n->children && !recursive)
    return sb_fail(e, SB_ENOTEMPTY, "directory not empty (use recursive = true)");
  return sb_vt_unlink_free(fs, n);
}

static bool is_ancestor(const vnode *a, const vnode *n) {
  for (; n; n = n->parent)
    if (n == a) return true;
  return false;
}

static sb_code vt_rename(sb_fs *fs, const sb_path *from, const sb_path *to, bool overwrite, sb_err *e) {
  const sb_mem *hmem = &fs->mem;
  vtree *v = VT(fs);
  vnode *src, *sdir, *dir;
  vres sr, dr;
  unsigned miss;
  /* as the kernel: both parents first, then the source entry */
  sb_code c = sb_vt_find_parent(v, from, false, &sr, &miss, e);
  if (c != SB_OK) return c;
  if ((c = sb_vt_find_parent(v, to, false, &dr, &miss, e)) != SB_OK) return c;
  sdir = sr.node;
  dir = dr.node;
  size_t slen;
  const char *sname = sb_path_comp(from, from->ncomp - 1, &slen);
  if (!(src = sb_vt_child_find(sdir, sname, slen))) return sb_fail(e, SB_ENOENT, NULL);
  if (from->must_dir && src->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  if (to->must_dir && src->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  size_t nlen;
  const char *name = sb_path_comp(to, to->ncomp - 1, &nlen);
  int kind = src->type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE;
  if ((c = recheck(fs, &sr, sdir, sname, slen, SB_ACC_MODIFY, kind, e)) != SB_OK ||
      (c = recheck(fs, &dr, dir, name, nlen, SB_ACC_MODIFY, kind, e)) != SB_OK)
    return c;
  vnode *dst = sb_vt_child_find(dir, name, nlen);
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
    moved = sb_malloc(hmem, sb_vt_node_bytes(nlen));
    if (!moved) return sb_fail_oom(e);
  }
  vnode *oldparent = src->parent;
  sb_vt_child_del(hmem, oldparent, src);
  if (renamed) {
    memcpy(moved, src, sizeof *src);
    moved->namelen = (uint16_t)nlen;
    memcpy(moved->name, name, nlen);
    moved->name[nlen] = '\0';
    vnode *ch, *tmp;
    HASH_ITER(hh, moved->children, ch, tmp) ch->parent = moved;
    sb_free(hmem, src, sb_vt_node_bytes(src->namelen));
  }
  if (!sb_vt_child_add(hmem, dir, moved)) {
    /* Put it back where it was; if even that fails, drop it cleanly. */
    uint64_t bytes = 0, nodes = 0;
    if (renamed || !sb_vt_child_add(hmem, oldparent, moved)) {
      sb_vt_subtree_free(hmem, moved, &bytes, &nodes);
      sb_quota_apply(&fs->quota, -(int64_t)bytes, -(int64_t)nodes);
    }
    return sb_fail_oom(e);
  }
  if (dst) sb_vt_unlink_free(fs, dst);
  return SB_OK;
}

typedef struct walk_state {
  sb_fs *fs;
  unsigned flags;
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
    sb_fail_oom(e);
    return SB_WALK_STOP;
  }
  size_t i = 0;
  vnode *c, *tmp;
  HASH_ITER(hh, d->children, c, tmp) kids[i++] = c;
  qsort(kids, n, sizeof *kids, cmp_node);
  int r = SB_WALK_CONTINUE;
  if (w->flags & SB_WALK_ENTER) {
    /* the entries, as a listing for the callback */
    sb_dirlist dl = {.v = sb_malloc(m, n * sizeof *dl.v), .n = n};
    if (!dl.v) {
      sb_free(m, kids, n * sizeof *kids);
      sb_fail_oom(e);
      return SB_WALK_STOP;
    }
    for (i = 0; i < n; i++)
      dl.v[i] = (sb_dirent){.name = kids[i]->name, .namelen = kids[i]->namelen, .type = kids[i]->type};
    sb_dirent enter = {.type = SB_T_ENTER};
    w->rel[rlen] = '\0';
    if (w->fn(w->ud, w->rel, rlen, &enter, &dl) == SB_WALK_STOP) r = SB_WALK_STOP;
    sb_free(m, dl.v, n * sizeof *dl.v);
  }
  for (i = 0; i < n && r != SB_WALK_STOP; i++) {
    c = kids[i];
    size_t len = rlen + (rlen ? 1 : 0) + c->namelen;
    if (len > SB_PATH_MAX) continue;
    if (rlen) w->rel[rlen] = '/';
    memcpy(w->rel + len - c->namelen, c->name, c->namelen);
    w->rel[len] = '\0';
    sb_dirent ent = {.name = c->name, .namelen = c->namelen, .type = c->type, .size = entry_size(c)};
    r = w->fn(w->ud, w->rel, len, &ent, c);
    if (r == SB_WALK_CONTINUE && c->type == SB_T_DIR) r = walk_dir(w, c, len, e);
    else if (r == SB_WALK_SKIP) r = SB_WALK_CONTINUE;
  }
  sb_free(m, kids, n * sizeof *kids);
  return r;
}

static sb_code vt_walk(sb_fs *fs, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e) {
  vres r;
  sb_code c = sb_vt_lookup(VT(fs), p, true, &r, e); /* a named start is followed: grep{path = "link"} */
  if (c != SB_OK) return c;
  vnode *n = r.node;
  walk_state *w = sb_malloc(&fs->mem, sizeof *w);
  if (!w) return sb_fail_oom(e);
  w->fs = fs;
  w->flags = flags; /* sizes are at hand: only SB_WALK_ENTER matters */
  w->fn = fn;
  w->ud = ud;
  e->code = SB_OK;
  /* below a followed link, entries are named by where they really are, so
   * rules judge real paths (as the container does) */
  size_t rlen =
      r.followed && sb_policy_judges_entries(fs->policy) ? sb_vt_node_path(n, w->rel) : sb_path_clean(p, w->rel);
  if ((c = recheck(fs, &r, n, NULL, 0, SB_ACC_LIST, n->type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE, e)) != SB_OK) {
    sb_free(&fs->mem, w, sizeof *w);
    return c;
  }
  if (n->type != SB_T_DIR) {
    sb_dirent ent = {.name = n->name, .namelen = n->namelen, .type = n->type, .size = n->size};
    fn(ud, w->rel, rlen, &ent, n);
  } else {
    walk_dir(w, n, rlen, e);
  }
  sb_free(&fs->mem, w, sizeof *w);
  return e->code;
}

static sb_code vt_open_ref(sb_fs *fs, const void *ref, int *fd, sb_bytes *mem, sb_err *e) {
  const vnode *n = ref;
  sb_code c = sb_policy_read_size(fs->policy, n->size, e);
  if (c != SB_OK) return c;
  *fd = -1;
  mem->p = n->data ? n->data : "";
  mem->len = n->size;
  return SB_OK;
}

static void vt_close(sb_fs *fs) {
  vtree *v = VT(fs);
  if (!v) return;
  uint64_t bytes = 0, nodes = 0;
  sb_vt_subtree_free(&fs->mem, v->root, &bytes, &nodes);
  sb_free(&fs->mem, v, sizeof *v);
  fs->impl = NULL;
}

static size_t tree_bytes(vnode *n) {
  size_t total = sb_vt_node_bytes(n->namelen) + (n->type != SB_T_DIR && n->data ? n->size + 1 : 0);
  if (n->children) total += sizeof(UT_hash_table) + n->children->hh.tbl->num_buckets * sizeof(UT_hash_bucket);
  vnode *c, *tmp;
  HASH_ITER(hh, n->children, c, tmp) total += tree_bytes(c);
  return total;
}

size_t sb_virtual_footprint(sb_fs *fs) { return VT(fs) ? sizeof(vtree) + tree_bytes(VT(fs)->root) : 0; }

sb_code sb_virtual_open(sb_fs *fs, sb_err *e) {
  vtree *v = sb_malloc(&fs->mem, sizeof *v);
  if (!v) return sb_fail_oom(e);
  if (!(v->root = sb_vt_node_new(&fs->mem, "", 0, SB_T_DIR))) {
    sb_free(&fs->mem, v, sizeof *v);
    return sb_fail_oom(e);
  }
  fs->impl = v;
  return SB_OK;
}

const sb_backend sb_virtual_backend = {
    .kind = "virtual",
    .read = vt_read,
    .symlink = vt_symlink,
    .readlink = vt_readlink,
    .realpath = vt_realpath,
    .write = vt_write,
    .stat = vt_stat,
    .readdir = vt_readdir,
    .mkdir = vt_mkdir,
    .remove = vt_remove,
    .rename = vt_rename,
    .walk = vt_walk,
    .open_ref = vt_open_ref,
    .close = vt_close,
};
