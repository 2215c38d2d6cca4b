/* The VirtualSandbox's tree: nodes, children in uthash tables kept in name
 * order where cheap, and resolution as SPEC §4 and the container's resolver
 * do it. Quota accounting of what is freed is here; of what is made, with
 * the operations (fs/virtual.c). */
#include "fs/virtual_tree.h"

#include <string.h>

vnode *sb_vt_node_new(const sb_mem *m, const char *name, size_t len, int type) {
  vnode *n = sb_malloc(m, sb_vt_node_bytes(len));
  if (!n) return NULL;
  memset(n, 0, sizeof *n);
  n->type = (uint8_t)type;
  n->namelen = (uint16_t)len;
  memcpy(n->name, name, len);
  n->name[len] = '\0';
  n->mtime = sb_vt_now();
  return n;
}

vnode *sb_vt_child_find(vnode *dir, const char *name, size_t len) {
  vnode *c = NULL;
  HASH_FIND(hh, dir->children, name, len, c);
  return c;
}

int sb_vt_name_cmp(const vnode *a, const vnode *b) {
  size_t n = a->namelen < b->namelen ? a->namelen : b->namelen;
  int r = memcmp(a->name, b->name, n);
  return r ? r : (a->namelen > b->namelen) - (a->namelen < b->namelen);
}

/* Link c under dir; false on OOM (c is then not linked). uthash appends to
 * the iteration order: it stays sorted by name while names come in order
 * (the common case), so listings rarely need to sort. */
bool sb_vt_child_add(const sb_mem *hmem, vnode *dir, vnode *c) {
  c->parent = dir;
  if (dir->children && !dir->unsorted) {
    UT_hash_table *tbl = dir->children->hh.tbl;
    if (sb_vt_name_cmp(ELMT_FROM_HH(tbl, tbl->tail), c) > 0) dir->unsorted = 1;
  }
  HASH_ADD_KEYPTR(hh, dir->children, c->name, c->namelen, c);
  if (!c->hh.tbl) return false;
  dir->mtime = c->mtime;
  return true;
}

void sb_vt_child_del(const sb_mem *hmem, vnode *dir, vnode *c) {
  HASH_DELETE(hh, dir->children, c);
  dir->mtime = sb_vt_now();
}

/* Free a subtree that is no longer linked; counts what it held. */
void sb_vt_subtree_free(const sb_mem *hmem, vnode *n, uint64_t *bytes, uint64_t *nodes) {
  vnode *c, *tmp;
  HASH_ITER(hh, n->children, c, tmp) {
    HASH_DELETE(hh, n->children, c);
    sb_vt_subtree_free(hmem, c, bytes, nodes);
  }
  if (n->type != SB_T_DIR) {
    *bytes += n->size;
    sb_free(hmem, n->data, n->data ? n->size + 1 : 0);
  }
  (*nodes)++;
  sb_free(hmem, n, sb_vt_node_bytes(n->namelen));
}

sb_code sb_vt_unlink_free(sb_fs *fs, vnode *n) {
  const sb_mem *hmem = &fs->mem;
  uint64_t bytes = 0, nodes = 0;
  sb_vt_child_del(hmem, n->parent, n);
  sb_vt_subtree_free(hmem, n, &bytes, &nodes);
  sb_quota_apply(&fs->quota, -(int64_t)bytes, -(int64_t)nodes);
  return SB_OK;
}

/* ---- resolution (SPEC §4), as the container's resolver does it ---------- */

/* Resolve a clean path ("" = the root; ".." kept) beneath the root: ".."
 * climbs to the real parent, links are spliced into what remains (an
 * absolute target, or a ".." above the root, is EESCAPE; more than
 * SB_HOPS_MAX hops ELOOP). A final link is followed when `follow`, or when a
 * spliced target put a "/" after it. */
sb_code sb_vt_resolve(vtree *v, const char *path, size_t len, bool follow, vres *out, sb_err *e) {
  char buf[SB_WORK_MAX + 1];
  size_t pos = 0, end = len;
  int hops = 0;
  vnode *cur = v->root;
  memcpy(buf, path, len);
  buf[end] = '\0';
  out->followed = false;
  for (;;) {
    while (pos < end && buf[pos] == '/') pos++;
    if (pos >= end) break; /* cur itself */
    size_t b = pos;
    while (pos < end && buf[pos] != '/') pos++;
    size_t clen = pos - b;
    if (sb_path_is_dot(buf + b, clen)) continue;
    if (sb_path_is_dotdot(buf + b, clen)) {
      if (cur == v->root) return sb_fail(e, SB_EESCAPE, "path escapes the sandbox (through '..' or a symbolic link)");
      cur = cur->parent;
      continue;
    }
    vnode *ch = sb_vt_child_find(cur, buf + b, clen);
    bool final = !sb_path_more_after(buf, pos, end), slash = final && pos < end;
    if (!ch) return sb_fail(e, SB_ENOENT, NULL);
    if (ch->type == SB_T_SYMLINK && (!final || follow || slash)) {
      if (++hops > SB_HOPS_MAX) return sb_fail(e, SB_ELOOP, NULL);
      if (ch->data[0] == '/')
        return sb_fail(e, SB_EESCAPE, "path escapes the sandbox (through '..' or a symbolic link)");
      size_t n = ch->size, restlen = end - pos;
      if (n + restlen > SB_WORK_MAX) return sb_fail(e, SB_ENAMETOOLONG, NULL);
      memmove(buf + n, buf + pos, restlen);
      memcpy(buf, ch->data, n);
      end = n + restlen;
      buf[end] = '\0';
      pos = 0;
      out->followed = true;
      continue; /* relative to cur, the link's directory */
    }
    if (final) {
      if (slash && ch->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
      cur = ch;
      break;
    }
    if (ch->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
    cur = ch;
  }
  out->node = cur;
  return SB_OK;
}

/* The root-relative path of a node, into out (>= SB_PATH_MAX + 1 bytes;
 * the tree never holds a deeper one). */
size_t sb_vt_node_path(const vnode *n, char *out) {
  const vnode *chain[SB_MAXCOMP + 1];
  size_t k = 0, len = 0;
  for (; n && n->parent; n = n->parent) chain[k++] = n;
  while (k > 0) {
    const vnode *c = chain[--k];
    if (len) out[len++] = '/';
    memcpy(out + len, c->name, c->namelen);
    len += c->namelen;
  }
  out[len] = '\0';
  return len;
}

sb_code sb_vt_lookup(vtree *v, const sb_path *p, bool follow, vres *r, sb_err *e) {
  sb_code c = sb_vt_resolve(v, p->buf, p->len, follow || p->must_dir, r, e);
  if (c == SB_OK && p->must_dir && r->node->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  return c;
}

/* The directory of components [0, k), followed like any intermediate one. */
sb_code sb_vt_resolve_dir(vtree *v, const sb_path *p, unsigned k, vres *r, sb_err *e) {
  sb_code c = sb_vt_resolve(v, p->buf, k ? (size_t)p->off[k] - 1 : 0, true, r, e);
  if (c == SB_OK && r->node->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  return c;
}

/* Resolve the parent of the last component. With `create`, report how many
 * directories are missing instead of failing (they are created later, after
 * the quota check), found as the container finds them: the deepest prefix
 * that resolves. A missing component followed by "..", or one that exists
 * only as a dangling link, cannot be created: ENOENT. */
sb_code sb_vt_find_parent(vtree *v, const sb_path *p, bool create, vres *dir, unsigned *first_missing, sb_err *e) {
  unsigned upto = p->ncomp - 1;
  *first_missing = upto;
  sb_code c = sb_vt_resolve_dir(v, p, upto, dir, e);
  if (c != SB_ENOENT || !create) return c;
  unsigned k = upto;
  while (k > 0 && (c = sb_vt_resolve_dir(v, p, --k, dir, e)) == SB_ENOENT) {}
  if (c != SB_OK) return c;
  for (unsigned i = k; i < p->ncomp; i++) {
    size_t len;
    const char *c2 = sb_path_comp(p, i, &len);
    if (sb_path_is_dotdot(c2, len)) return sb_fail(e, SB_ENOENT, NULL);
  }
  size_t len;
  const char *name = sb_path_comp(p, k, &len);
  if (sb_vt_child_find(dir->node, name, len)) return sb_fail(e, SB_ENOENT, NULL); /* a dangling link */
  *first_missing = k;
  return SB_OK;
}

/* Create directories for components [from, upto) under dir. On OOM, undo. */
sb_code sb_vt_make_dirs(sb_fs *fs, const sb_path *p, vnode *dir, unsigned from, unsigned upto, vnode **last,
                        sb_err *e) {
  const sb_mem *hmem = &fs->mem;
  vnode *first = NULL, *cur = dir;
  for (unsigned i = from; i < upto; i++) {
    size_t len;
    const char *c = sb_path_comp(p, i, &len);
    vnode *d = sb_vt_node_new(hmem, c, len, SB_T_DIR);
    if (!d || !sb_vt_child_add(hmem, cur, d)) {
      sb_free(hmem, d, d ? sb_vt_node_bytes(len) : 0);
      if (first) sb_vt_unlink_free(fs, first);
      return sb_fail_oom(e);
    }
    sb_quota_apply(&fs->quota, 0, 1);
    if (!first) first = d;
    cur = d;
  }
  *last = cur;
  return SB_OK;
}
