#include "remote/fs_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/dirlist.h"
#include "remote/process.h"

/* Read the file at the real root-relative path rel (sb_rm_read_abs). */
static sb_code fetch(sb_fs *fs, const char *rel, size_t rlen, sb_buf *b, sb_err *e) {
  const char *path = sb_rm_abs(RF(fs), 1, rel, rlen);
  if (!path) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  return sb_rm_read_abs(fs, path, b, e);
}

static sb_code rm_read(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e) {
  rnode *n = &RF(fs)->n[0];
  sb_code c = sb_rm_lookup(fs, p, true, n, e);
  if (c != SB_OK) return c;
  if (n->type == SB_T_DIR) return sb_fail(e, SB_EISDIR, NULL);
  if ((c = sb_rm_recheck(fs, n, NULL, 0, SB_ACC_READ, SB_KIND_FILE, e)) != SB_OK ||
      (c = sb_policy_read_size(fs->policy, n->size, e)) != SB_OK ||
      (c = fetch(fs, n->rel, n->rlen, &fs->scratch, e)) != SB_OK)
    return c;
  out->p = fs->scratch.p;
  out->len = fs->scratch.len;
  return SB_OK;
}

/* The real path of p's components [from, ncomp) below dir, into out. */
static sb_code below(const rnode *dir, const sb_path *p, unsigned from, rnode *out, sb_err *e) {
  size_t len = dir->rlen;
  memmove(out->rel, dir->rel, len);
  for (unsigned i = from; i < p->ncomp; i++) {
    size_t cl;
    const char *ci = sb_path_comp(p, i, &cl);
    if (!sb_rm_join(out->rel, &len, out->rel, len, ci, cl)) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  }
  out->rel[len] = '\0';
  out->rlen = len;
  return SB_OK;
}

#define NEW_FILE_MODE 0644 /* what envd gives a file it makes (umask 022) */

static sb_code rm_write(sb_fs *fs, const sb_path *p, const char *data, size_t len, const sb_write_opts *o, sb_err *e) {
  rfs *r = RF(fs);
  if (p->must_dir) return sb_fail(e, SB_EISDIR, NULL);
  rnode *dir = &r->n[0], *old = &r->n[1];
  bool existed = false;
  unsigned miss;
  sb_code c = sb_rm_find_parent(fs, p, o->parents, dir, &miss, e);
  if (c != SB_OK) return c;
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  if ((c = sb_rm_recheck(fs, dir, name, nlen, SB_ACC_WRITE, SB_KIND_FILE, e)) != SB_OK) return c;
  if (miss == p->ncomp - 1) {
    size_t rl;
    if (!sb_rm_join(old->rel, &rl, dir->rel, dir->rlen, name, nlen)) return sb_fail(e, SB_ENAMETOOLONG, NULL);
    c = sb_rm_stat(fs, old->rel, rl, old, e);
    existed = c == SB_OK;
    if (c == SB_OK) {
      if (old->type == SB_T_DIR) return sb_fail(e, SB_EISDIR, NULL);
      if (old->type == SB_T_SYMLINK) return sb_fail(e, SB_ELOOP, "refusing to write through a symbolic link");
      if (!o->overwrite) return sb_fail(e, SB_EEXIST, NULL);
    } else if (c != SB_ENOENT) {
      return c;
    }
  }
  if ((c = below(dir, p, miss, old, e)) != SB_OK) return c;
  /* Atomic replace, as on every backend: the bytes go to a new name beside
   * the file, then Move (a rename there) puts them in its place. */
  const char *path = sb_rm_abs(r, 1, old->rel, old->rlen);
  char tmp[sizeof r->abs[0] + 40];
  const char *slash = path ? strrchr(path, '/') : NULL;
  if (!path ||
      snprintf(tmp, sizeof tmp, "%.*s/.sandbox-%08x%08x.tmp", (int)(slash - path), path, (unsigned)random(),
               (unsigned)random()) >= (int)sizeof tmp)
    return sb_fail(e, SB_ENAMETOOLONG, NULL);
  if ((c = sb_rm_plain(sb_envd_write(&fs->mem, &r->d, tmp, data, len, e), e)) != SB_OK)
    return c; /* envd makes the parents */
  /* the replaced file's mode goes to the new bytes before they take its
   * place (an edited script keeps +x, as on the local backends); envd has
   * no chmod call: a command does it, only for a mode a new file lacks */
  if (existed && (old->mode & 0777) != NEW_FILE_MODE) c = sb_rm_chmod(fs, tmp, old->mode & 0777, e);
  if (c != SB_OK || (c = sb_rm_plain(sb_envd_move(&fs->mem, &r->d, tmp, path, e), e)) != SB_OK) {
    sb_err ignore;
    sb_envd_remove(&fs->mem, &r->d, tmp, &ignore);
  }
  return c;
}

static void fill_stat(const rnode *n, sb_stat *st) {
  st->type = n->type;
  st->size = n->size;
  st->mtime = n->mtime;
  st->mode = n->mode;
}

static sb_code rm_stat(sb_fs *fs, const sb_path *p, bool follow, sb_stat *st, sb_err *e) {
  rnode *n = &RF(fs)->n[0];
  sb_code c = sb_rm_lookup(fs, p, follow, n, e);
  if (c == SB_OK) c = sb_rm_recheck(fs, n, NULL, 0, SB_ACC_LIST, sb_rm_kind(n->type), e);
  if (c == SB_OK) fill_stat(n, st);
  return c;
}

static sb_code rm_symlink(sb_fs *fs, const char *target, size_t tlen, const sb_path *p, sb_err *e) {
  rfs *r = RF(fs);
  rnode *dir = &r->n[0], *old = &r->n[1];
  sb_code c = sb_rm_find_entry(fs, p, dir, old, e);
  if (c != SB_OK) return c;
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  if ((c = sb_rm_recheck(fs, dir, name, nlen, SB_ACC_WRITE, SB_KIND_FILE, e)) != SB_OK ||
      (c = sb_policy_link(fs->policy, dir->rel, dir->rlen, target, tlen, e)) != SB_OK)
    return c;
  if (old->type) return sb_fail(e, SB_EEXIST, NULL);
  if (p->must_dir) return sb_fail(e, SB_ENOENT, NULL); /* "new/": a link cannot be a directory */
  /* envd has no call that makes a link: ln does, as the sandbox's user */
  char *text = sb_memdup(&fs->mem, target, tlen);
  const char *dpath = sb_rm_abs(r, 1, dir->rel, dir->rlen);
  if (!text) return sb_fail_oom(e);
  c = dpath ? sb_rm_ln(fs, text, dpath, name, nlen, e) : sb_fail(e, SB_ENAMETOOLONG, NULL);
  sb_free(&fs->mem, text, tlen + 1);
  return c;
}

static sb_code rm_readlink(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e) {
  if (p->ncomp == 0 || sb_path_names_no_entry(p)) return sb_fail(e, SB_EINVAL, "not a symbolic link");
  rnode *dir = &RF(fs)->n[0], *n = &RF(fs)->n[1];
  sb_code c = sb_rm_find_entry(fs, p, dir, n, e);
  if (c != SB_OK) return c;
  if (!n->type) return sb_fail(e, SB_ENOENT, NULL);
  if (n->type != SB_T_SYMLINK || p->must_dir) return sb_fail(e, SB_EINVAL, "not a symbolic link");
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  if ((c = sb_rm_recheck(fs, dir, name, nlen, SB_ACC_LIST, SB_KIND_FILE, e)) != SB_OK ||
      (c = sb_rm_link_text(fs, n, e)) != SB_OK)
    return c;
  fs->scratch.len = 0;
  if (sb_buf_append(&fs->mem, &fs->scratch, n->target, n->tlen + 1) != 0) return sb_fail_oom(e);
  out->p = fs->scratch.p;
  out->len = n->tlen;
  return SB_OK;
}

static sb_code rm_realpath(sb_fs *fs, const sb_path *p, bool follow, sb_bytes *out, sb_err *e) {
  rnode *dir = &RF(fs)->n[0], *n = &RF(fs)->n[1];
  sb_code c;
  if (follow || p->ncomp == 0 || sb_path_names_no_entry(p)) {
    if ((c = sb_rm_lookup(fs, p, true, n, e)) != SB_OK) return c;
  } else if ((c = sb_rm_find_entry(fs, p, dir, n, e)) != SB_OK) {
    return c;
  }
  fs->scratch.len = 0;
  if (sb_buf_append(&fs->mem, &fs->scratch, n->rel, n->rlen + 1) != 0) return sb_fail_oom(e);
  out->p = fs->scratch.p;
  out->len = n->rlen;
  return SB_OK;
}

/* ---- listings ------------------------------------------------------------ */

static bool empty_dir(sb_fs *fs, const char *rel, size_t rlen, sb_code *c, sb_err *e);

typedef struct listing {
  sb_fs *fs;
  sb_dirlist *out;
  size_t strip; /* bytes of each entry's path before its name */
  bool any;
  bool count_only;
} listing;

/* An entry of the listing (find's, or envd's through list_cb). */
static sb_code found_cb(void *ud, const char *name, size_t len, int type, uint64_t size, sb_err *e) {
  listing *l = ud;
  l->any = true;
  if (l->count_only) return SB_OK;
  sb_dirent d = {.name_off = l->out->names.len, .namelen = len, .type = type, .size = size};
  if (sb_buf_append(&l->fs->mem, &l->out->names, name, len) != 0 ||
      sb_buf_append(&l->fs->mem, &l->out->names, "", 1) != 0 || sb_dirlist_push(&l->fs->mem, l->out, &d) != 0)
    return sb_fail_oom(e);
  return SB_OK;
}

static sb_code list_cb(void *ud, const sb_rentry *en, sb_err *e) {
  return found_cb(ud, en->name, en->nlen, sb_rm_type(en->type), en->type == SB_RDIR ? 0 : en->size, e);
}

/* The directory at the absolute path, one level. */
static sb_code list_one(sb_fs *fs, const char *path, listing *l, sb_err *e) {
  size_t from = l->out ? l->out->n : 0, names = l->out ? l->out->names.len : 0;
  sb_code c = sb_envd_list(&fs->mem, &RF(fs)->d, path, 1, list_cb, l, e);
  if (sb_rm_list_failed_over(c, e)) { /* a name envd's JSON cannot carry: find's listing */
    if (l->out) {
      l->out->n = from;
      l->out->names.len = names;
    }
    l->any = false;
    e->code = SB_OK;
    c = sb_rm_find(fs, path, 1, found_cb, l, e);
  }
  return c;
}

static sb_code rm_readdir(sb_fs *fs, const sb_path *p, sb_dirlist *out, sb_err *e) {
  rnode *n = &RF(fs)->n[0];
  sb_code c = sb_rm_lookup(fs, p, true, n, e);
  if (c != SB_OK) return c;
  if (n->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  if ((c = sb_rm_recheck(fs, n, NULL, 0, SB_ACC_LIST, SB_KIND_DIR, e)) != SB_OK) return c;
  const char *path = sb_rm_abs(RF(fs), 1, n->rel, n->rlen);
  if (!path) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  size_t from = out->n;
  listing l = {.fs = fs, .out = out};
  if ((c = list_one(fs, path, &l, e)) != SB_OK) return c;
  sb_dirlist_fix_names(out, from);
  sb_dirlist_sort(out);
  return SB_OK;
}

static bool empty_dir(sb_fs *fs, const char *rel, size_t rlen, sb_code *c, sb_err *e) {
  const char *path = sb_rm_abs(RF(fs), 1, rel, rlen);
  if (!path) {
    *c = sb_fail(e, SB_ENAMETOOLONG, NULL);
    return false;
  }
  listing l = {.fs = fs, .count_only = true};
  *c = list_one(fs, path, &l, e);
  return !l.any;
}

static sb_code rm_mkdir(sb_fs *fs, const sb_path *p, bool parents, sb_err *e) {
  rfs *r = RF(fs);
  rnode *dir = &r->n[0], *old = &r->n[1];
  unsigned miss;
  sb_code c = sb_rm_find_parent(fs, p, parents, dir, &miss, e);
  if (c != SB_OK) return c;
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  if ((c = sb_rm_recheck(fs, dir, name, nlen, SB_ACC_MODIFY, SB_KIND_DIR, e)) != SB_OK) return c;
  if (miss == p->ncomp - 1) {
    size_t rl;
    if (!sb_rm_join(old->rel, &rl, dir->rel, dir->rlen, name, nlen)) return sb_fail(e, SB_ENAMETOOLONG, NULL);
    c = sb_rm_stat(fs, old->rel, rl, old, e);
    if (c == SB_OK) return old->type == SB_T_DIR && parents ? SB_OK : sb_fail(e, SB_EEXIST, NULL);
    if (c != SB_ENOENT) return c;
  }
  if ((c = below(dir, p, miss, old, e)) != SB_OK) return c;
  const char *path = sb_rm_abs(r, 1, old->rel, old->rlen);
  if (!path) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  return sb_rm_plain(sb_envd_mkdir(&fs->mem, &r->d, path, e), e);
}

/* The entry itself, never a link's target. */
static sb_code rm_remove(sb_fs *fs, const sb_path *p, bool recursive, sb_err *e) {
  if (p->ncomp == 0 || sb_path_names_no_entry(p)) return sb_fail(e, SB_EINVAL, "the sandbox root cannot be removed");
  rfs *r = RF(fs);
  rnode *dir = &r->n[0], *n = &r->n[1];
  sb_code c = sb_rm_find_entry(fs, p, dir, n, e);
  if (c != SB_OK) return c;
  if (!n->type) return sb_fail(e, SB_ENOENT, NULL);
  if (p->must_dir && n->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  size_t nlen;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  if ((c = sb_rm_recheck(fs, dir, name, nlen, SB_ACC_MODIFY, sb_rm_kind(n->type), e)) != SB_OK) return c;
  if (n->type == SB_T_DIR && !recursive) {
    bool empty = empty_dir(fs, n->rel, n->rlen, &c, e);
    if (c != SB_OK) return c;
    if (!empty) return sb_fail(e, SB_ENOTEMPTY, "directory not empty (use recursive = true)");
  }
  const char *path = sb_rm_abs(r, 1, n->rel, n->rlen);
  return path ? sb_rm_plain(sb_envd_remove(&fs->mem, &r->d, path, e), e) : sb_fail(e, SB_ENAMETOOLONG, NULL);
}

/* Is the real path a the same as b, or above it? */
static bool is_ancestor(const rnode *a, const char *b, size_t blen) {
  if (a->rlen == 0) return true;
  return blen >= a->rlen && memcmp(a->rel, b, a->rlen) == 0 && (blen == a->rlen || b[a->rlen] == '/');
}

static sb_code rm_rename(sb_fs *fs, const sb_path *from, const sb_path *to, bool overwrite, sb_err *e) {
  rfs *r = RF(fs);
  rnode *sdir = &r->n[0], *src = &r->n[1], *dir = &r->n[2], *dst = &r->n[3];
  unsigned miss;
  /* as the kernel: both parents first, then the source entry */
  sb_code c = sb_rm_find_parent(fs, from, false, sdir, &miss, e);
  if (c != SB_OK || (c = sb_rm_find_parent(fs, to, false, dir, &miss, e)) != SB_OK) return c;
  size_t slen, nlen, rl;
  const char *sname = sb_path_comp(from, from->ncomp - 1, &slen);
  const char *name = sb_path_comp(to, to->ncomp - 1, &nlen);
  if (!sb_rm_join(src->rel, &rl, sdir->rel, sdir->rlen, sname, slen)) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  if ((c = sb_rm_stat(fs, src->rel, rl, src, e)) != SB_OK) return c;
  if ((from->must_dir || to->must_dir) && src->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  int kind = sb_rm_kind(src->type);
  if ((c = sb_rm_recheck(fs, sdir, sname, slen, SB_ACC_MODIFY, kind, e)) != SB_OK ||
      (c = sb_rm_recheck(fs, dir, name, nlen, SB_ACC_MODIFY, kind, e)) != SB_OK)
    return c;
  /* dir is done with: its real path is compared below, dst gets its own */
  if (!sb_rm_join(dst->rel, &rl, dir->rel, dir->rlen, name, nlen)) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  c = sb_rm_stat(fs, dst->rel, rl, dst, e);
  if (c == SB_ENOENT) dst->type = 0, dst->rlen = rl, dst->rel[rl] = '\0';
  else if (c != SB_OK) return c;
  if (dst->rlen == src->rlen && memcmp(dst->rel, src->rel, src->rlen) == 0) return SB_OK;
  /* the kernel's order from here: EEXIST, EINVAL, ENOTEMPTY, then types */
  if (dst->type && !overwrite) return sb_fail(e, SB_EEXIST, NULL);
  if (src->type == SB_T_DIR && is_ancestor(src, dir->rel, dir->rlen))
    return sb_fail(e, SB_EINVAL, "cannot move a directory into itself");
  if (dst->type && is_ancestor(dst, src->rel, src->rlen)) return sb_fail(e, SB_ENOTEMPTY, NULL);
  if (dst->type) {
    if (src->type == SB_T_DIR && dst->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
    if (src->type != SB_T_DIR && dst->type == SB_T_DIR) return sb_fail(e, SB_EISDIR, NULL);
    if (dst->type == SB_T_DIR) {
      bool empty = empty_dir(fs, dst->rel, dst->rlen, &c, e);
      if (c != SB_OK) return c;
      if (!empty) return sb_fail(e, SB_ENOTEMPTY, NULL);
    }
  }
  const char *a = sb_rm_abs(r, 0, src->rel, src->rlen), *b = sb_rm_abs(r, 1, dst->rel, dst->rlen);
  if (!a || !b) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  return sb_rm_plain(sb_envd_move(&fs->mem, &r->d, a, b, e), e);
}

static void rm_close(sb_fs *fs) {
  rfs *r = RF(fs);
  if (!r) return;
  sb_buf_free(&fs->mem, &r->ref);
  sb_rm_want_free(fs);
  sb_rpool_free(r->d.t.pool);
  sb_free(&fs->mem, r, sizeof *r);
  fs->impl = NULL;
}

/* In a forked copy: the kept connections are the host's (a TLS stream's
 * state, a request half sent); the copy opens its own, one per call. */
static void rm_forked(sb_fs *fs) {
  if (RF(fs)) RF(fs)->d.t.pool = NULL;
}

static bool copy_str(char *dst, size_t cap, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n >= cap) return false;
  memcpy(dst, s ? s : "", n + 1);
  return true;
}

sb_code sb_remote_fs_open(sb_fs *fs, const sb_envd *d, const char *root, sb_err *e) {
  rfs *r = sb_malloc(&fs->mem, sizeof *r);
  if (!r) return sb_fail_oom(e);
  memset(r, 0, sizeof *r);
  if (!copy_str(r->url, sizeof r->url, d->url) || !copy_str(r->token, sizeof r->token, d->token) ||
      !copy_str(r->id, sizeof r->id, d->sandbox_id) || !copy_str(r->user, sizeof r->user, d->user) ||
      !copy_str(r->root, sizeof r->root, root) || root[0] != '/') {
    sb_free(&fs->mem, r, sizeof *r);
    return sb_fail(e, SB_EINVAL,
                   "remote: the envd URL, token, sandbox id, user or root is too long (or root not absolute)");
  }
  r->rootlen = strlen(r->root);
  r->d = *d;
  r->d.url = r->url;
  r->d.token = r->token;
  r->d.sandbox_id = r->id;
  r->d.user = d->user ? r->user : NULL;
  fs->impl = r;
  /* every call of this sandbox (and its commands' threads) keeps and reuses
   * its connections; closed with the backend, after the runner */
  if (!(r->d.t.pool = sb_rpool_new())) {
    rm_close(fs);
    return sb_fail_oom(e);
  }
  rnode *n = &r->n[0];
  sb_code c = sb_rm_stat(fs, "", 0, n, e);
  if (c == SB_OK && n->type != SB_T_DIR) c = sb_failf(e, SB_ENOTDIR, "remote: the root %s is not a directory", r->root);
  if (c != SB_OK) rm_close(fs);
  return c;
}

const sb_envd *sb_remote_fs_envd(sb_fs *fs) { return RF(fs) ? &RF(fs)->d : NULL; }

const sb_backend sb_remote_backend = {
    .kind = "remote",
    .read = rm_read,
    .write = rm_write,
    .stat = rm_stat,
    .symlink = rm_symlink,
    .readlink = rm_readlink,
    .realpath = rm_realpath,
    .readdir = rm_readdir,
    .mkdir = rm_mkdir,
    .remove = rm_remove,
    .rename = rm_rename,
    .walk = sb_rm_walk,
    .open_ref = sb_rm_open_ref,
    .want_ref = sb_rm_want_ref,
    .fetch_wanted = sb_rm_fetch_wanted,
    .close = rm_close,
    .forked = rm_forked,
};
