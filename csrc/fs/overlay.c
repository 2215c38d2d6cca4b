/* The userspace overlay (see fs/overlay.h).
 *
 * The kernel's format, written and read the same way: a whiteout is a
 * character device 0/0 in the upper layer, an opaque directory carries the
 * xattr <trusted|user>.overlay.opaque = "y", and a directory of the base is
 * copied up (made in the upper layer with its mode) before anything is
 * made in it. Paths are resolved one component at a time over held
 * directory fds of both layers; no link is ever followed by the kernel
 * (links are read and spliced into the rest of the path, absolute ones are
 * escapes, as the resolver's userspace walk does) and ".." pops the held
 * stack, so nothing outside either layer can be reached (fs/overlay_view.c).
 * What a lookup ends with is also the object's real path in the merged
 * view, which the rules are checked against. This file: the backend's
 * operations over that view. */
#include "fs/overlay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/dirlist.h"
#include "fs/overlay_view.h"
#include "fs/tree.h"

/* ---- shared checks ------------------------------------------------------ */

static sb_code fail(sb_err *e, int neg) { return sb_rt_fail(e, neg); }

static sb_code need_write(const ovl *ov, sb_err *e) {
  return ov->can_write ? SB_OK : sb_fail(e, SB_EACCES, "the sandbox is read-only (mode \"r\")");
}

static int kind_of(const onode *n) { return sb_ovl_is_dir(n) ? SB_KIND_DIR : SB_KIND_FILE; }

/* A lookup for a write: the parent must exist, or with `parents` is made. */
static sb_code lookup_for_write(sb_fs *fs, const sb_path *p, bool parents, onode *n, sb_err *e) {
  ovl *ov = OV(fs);
  sb_ovl_node_init(n);
  sb_code c = need_write(ov, e);
  if (c != SB_OK) return c;
  int r = sb_ovl_lookup(ov, p->buf, p->len, false, n);
  if (r == -ENOENT && n->partial && parents) {
    size_t cut = n->rlen;
    while (cut > 0 && n->rel[cut - 1] != '/') cut--;
    int fd = sb_ovl_ensure_upper(ov, n->rel, cut ? cut - 1 : 0);
    sb_ovl_node_free(n);
    if (fd < 0) return fail(e, fd);
    close(fd);
    r = sb_ovl_lookup(ov, p->buf, p->len, false, n);
  }
  return r == 0 ? SB_OK : fail(e, r);
}

/* ---- disk usage (max_disk_usage counts the upper layer) ----------------- */

static sb_code walk_dir_sum(sb_fs *fs, int fd, uint64_t *used, int depth, sb_err *e);

static sb_code disk_count(sb_fs *fs, uint64_t *used, sb_err *e) {
  return walk_dir_sum(fs, OV(fs)->root[UP], used, 0, e);
}

static sb_code disk_check(sb_fs *fs, int64_t dbytes, sb_err *e) {
  return sb_disk_check(&OV(fs)->disk, fs, disk_count, dbytes, e);
}

static sb_code walk_dir_sum(sb_fs *fs, int fd, uint64_t *used, int depth, sb_err *e) {
  if (depth > SB_WALK_DEPTH_MAX) return SB_OK;
  sb_dirlist dl = {0};
  sb_code c = sb_rt_list(fs, fd, &dl, SB_RT_SIZES, e);
  sb_dirlist_fix_names(&dl, 0);
  for (size_t i = 0; c == SB_OK && i < dl.n; i++) {
    if (dl.v[i].type == SB_T_FILE) *used += dl.v[i].size;
    if (dl.v[i].type != SB_T_DIR) continue;
    int sub = sb_ovl_open_dir(fd, dl.v[i].name);
    if (sub < 0) continue;
    c = walk_dir_sum(fs, sub, used, depth + 1, e);
    close(sub);
  }
  sb_dirlist_free(&fs->mem, &dl);
  return c;
}

/* ---- read side ---------------------------------------------------------- */

static sb_code ov_read(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e) {
  ovl *ov = OV(fs);
  onode n;
  int r = sb_ovl_lookup_path(ov, p, true, &n);
  sb_code c = SB_OK;
  if (r != 0) c = fail(e, r);
  else if (n.where < 0) c = sb_fail(e, SB_ENOENT, NULL);
  else if (!S_ISREG(n.st.st_mode)) c = sb_rt_type_error(&n.st, e);
  else if (!ov->can_read) c = sb_fail(e, SB_EACCES, "the sandbox root is write-only (mode \"w\")");
  else if ((c = sb_ovl_recheck(fs, &n, SB_ACC_READ, SB_KIND_FILE, e)) == SB_OK) {
    int fd = openat(n.parent.fd[n.where], n.name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) c = sb_rt_fail_errno(e);
    else if (fstat(fd, &st) != 0) c = sb_rt_fail_errno(e);
    else if (!S_ISREG(st.st_mode)) c = sb_rt_type_error(&st, e);
    else if ((c = sb_policy_read_size(fs->policy, (uint64_t)st.st_size, e)) == SB_OK)
      c = sb_rt_read_fd(fs, fd, (uint64_t)st.st_size, out, e);
    if (fd >= 0) close(fd);
  }
  sb_ovl_node_free(&n);
  return c;
}

static sb_code ov_stat(sb_fs *fs, const sb_path *p, bool follow, sb_stat *out, sb_err *e) {
  onode n;
  int r = sb_ovl_lookup_path(OV(fs), p, follow, &n);
  sb_code c = r != 0 ? fail(e, r)
      : n.where < 0  ? sb_fail(e, SB_ENOENT, NULL)
                     : sb_ovl_recheck(fs, &n, SB_ACC_LIST, kind_of(&n), e);
  if (c == SB_OK) sb_rt_fill_stat(&n.st, out);
  sb_ovl_node_free(&n);
  return c;
}

static sb_code ov_readlink(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e) {
  if (p->ncomp == 0 || sb_path_names_no_entry(p)) return sb_fail(e, SB_EINVAL, "not a symbolic link");
  onode n;
  int r = sb_ovl_lookup(OV(fs), p->buf, p->len, false, &n);
  sb_code c = SB_OK;
  sb_buf *b = &fs->scratch;
  if (r != 0) c = fail(e, r);
  else if (n.where < 0) c = sb_fail(e, SB_ENOENT, NULL);
  else if (!S_ISLNK(n.st.st_mode) || p->must_dir)
    c = sb_fail(e, SB_EINVAL, "not a symbolic link"); /* "link/" is its target */
  else if ((c = sb_ovl_recheck(fs, &n, SB_ACC_LIST, SB_KIND_FILE, e)) == SB_OK) {
    b->len = 0;
    ssize_t len = -1;
    if (sb_buf_reserve(&fs->mem, b, SB_PATH_MAX + 2) != 0) c = sb_fail_oom(e);
    else if ((len = readlinkat(n.parent.fd[n.where], n.name, b->p, SB_PATH_MAX + 1)) < 0) c = sb_rt_fail_errno(e);
    else if (len > SB_PATH_MAX) c = sb_fail(e, SB_ENAMETOOLONG, "link target too long");
    if (c == SB_OK) {
      b->p[len] = '\0';
      out->p = b->p;
      out->len = (size_t)len;
    }
  }
  sb_ovl_node_free(&n);
  return c;
}

static sb_code ov_realpath(sb_fs *fs, const sb_path *p, bool follow, sb_bytes *out, sb_err *e) {
  onode n;
  int r = sb_ovl_lookup_path(OV(fs), p, follow, &n);
  sb_code c = r != 0 ? fail(e, r) : SB_OK;
  sb_buf *b = &fs->scratch;
  b->len = 0;
  if (c == SB_OK && n.where < 0 && (follow || p->must_dir)) c = sb_fail(e, SB_ENOENT, NULL);
  if (c == SB_OK && sb_buf_reserve(&fs->mem, b, n.rlen + 1) != 0) c = sb_fail_oom(e);
  if (c == SB_OK) {
    memcpy(b->p, n.rel, n.rlen + 1);
    b->len = n.rlen;
    out->p = b->p;
    out->len = b->len;
  }
  sb_ovl_node_free(&n);
  return c;
}

static sb_code ov_readdir(sb_fs *fs, const sb_path *p, sb_dirlist *dl, sb_err *e) {
  onode n;
  int r = sb_ovl_lookup_path(OV(fs), p, true, &n);
  sb_code c = r != 0       ? fail(e, r)
      : n.where < 0        ? sb_fail(e, SB_ENOENT, NULL)
      : !sb_ovl_is_dir(&n) ? sb_fail(e, SB_ENOTDIR, NULL)
                           : sb_ovl_recheck(fs, &n, SB_ACC_LIST, SB_KIND_DIR, e);
  mdir d = {{-1, -1}};
  if (c == SB_OK && (r = sb_ovl_open_node_dir(&n, &d)) != 0) c = fail(e, r);
  if (c == SB_OK) c = sb_ovl_list_merged(fs, &d, dl, SB_RT_SIZES, e);
  sb_ovl_mdir_close(&d);
  sb_ovl_node_free(&n);
  return c;
}

/* Is the merged directory of n empty? */
static sb_code merged_empty(sb_fs *fs, const onode *n, bool *empty, sb_err *e) {
  mdir d = {{-1, -1}};
  int r = sb_ovl_open_node_dir(n, &d);
  sb_dirlist dl = {0};
  sb_code c = r != 0 ? fail(e, r) : sb_ovl_list_merged(fs, &d, &dl, 0, e);
  *empty = dl.n == 0;
  sb_dirlist_free(&fs->mem, &dl);
  sb_ovl_mdir_close(&d);
  return c;
}

/* ---- write side --------------------------------------------------------- */

static sb_code ov_write(sb_fs *fs, const sb_path *p, const char *data, size_t len, const sb_write_opts *o, sb_err *e) {
  ovl *ov = OV(fs);
  if (p->must_dir && ov->can_write) return sb_fail(e, SB_EISDIR, NULL);
  onode n;
  sb_code c = lookup_for_write(fs, p, o->parents, &n, e);
  uint64_t old = n.where == UP && S_ISREG(n.st.st_mode) ? (uint64_t)n.st.st_size : 0;
  if (c != SB_OK) {
  } else if (n.where >= 0 && S_ISDIR(n.st.st_mode)) c = sb_fail(e, SB_EISDIR, NULL);
  else if (n.where >= 0 && S_ISLNK(n.st.st_mode)) c = sb_fail(e, SB_ELOOP, "refusing to write through a symbolic link");
  else if (n.where >= 0 && !S_ISREG(n.st.st_mode)) c = sb_rt_type_error(&n.st, e);
  else if (n.where >= 0 && !o->overwrite) c = sb_fail(e, SB_EEXIST, NULL);
  else if ((c = sb_ovl_recheck(fs, &n, SB_ACC_WRITE, SB_KIND_FILE, e)) == SB_OK)
    c = disk_check(fs, (int64_t)len - (int64_t)old, e);
  int dfd = -1, tfd = -1;
  char tmp[32];
  if (c == SB_OK && (dfd = sb_ovl_upper_parent(ov, &n)) < 0) c = fail(e, dfd);
  if (c == SB_OK) c = sb_rt_write_tmp(&ov->tmp, dfd, tmp, data, len, &tfd, e);
  if (c == SB_OK) {
    mode_t mode = n.where >= 0 ? n.st.st_mode & 07777 : 0644; /* a replaced file keeps its mode */
    if (mode != 0644 && fchmod(tfd, mode) != 0) c = sb_rt_fail_errno(e);
    else if (renameat(dfd, tmp, dfd, n.name) != 0) c = sb_rt_fail_errno(e); /* over a file or a whiteout */
    else sb_disk_apply(&ov->disk, (int64_t)len - (int64_t)old);
    if (c != SB_OK) unlinkat(dfd, tmp, 0);
  }
  if (tfd >= 0) close(tfd);
  if (dfd >= 0) close(dfd);
  sb_ovl_node_free(&n);
  return c;
}

static sb_code ov_mkdir(sb_fs *fs, const sb_path *p, bool parents, sb_err *e) {
  onode n;
  sb_code c = lookup_for_write(fs, p, parents, &n, e);
  if (c == SB_OK && n.where >= 0) c = parents && sb_ovl_is_dir(&n) ? SB_OK : sb_fail(e, SB_EEXIST, NULL);
  else if (c == SB_OK && (c = sb_ovl_recheck(fs, &n, SB_ACC_MODIFY, SB_KIND_DIR, e)) == SB_OK) {
    int fd = sb_ovl_ensure_upper(OV(fs), n.rel, n.rlen);
    if (fd < 0) c = fail(e, fd);
    else close(fd);
  }
  sb_ovl_node_free(&n);
  return c;
}

/* Clear a whiteout the upper layer holds at n's name before making something there. */
static int clear_whiteout(int dfd, const onode *n) {
  return n->whiteout && unlinkat(dfd, n->name, 0) != 0 ? -errno : 0;
}

static sb_code ov_symlink(sb_fs *fs, const char *target, size_t tlen, const sb_path *p, sb_err *e) {
  onode n;
  sb_code c = lookup_for_write(fs, p, false, &n, e);
  if (c == SB_OK && (n.where >= 0 || p->must_dir))
    c = n.where >= 0 ? sb_fail(e, SB_EEXIST, NULL) : sb_fail(e, SB_ENOENT, NULL);
  if (c == SB_OK) c = sb_ovl_recheck(fs, &n, SB_ACC_WRITE, SB_KIND_FILE, e);
  if (c == SB_OK) c = sb_policy_link(fs->policy, n.rel, n.plen, target, tlen, e);
  int dfd = -1, r;
  if (c == SB_OK && (dfd = sb_ovl_upper_parent(OV(fs), &n)) < 0) c = fail(e, dfd);
  if (c == SB_OK && (r = clear_whiteout(dfd, &n)) != 0) c = fail(e, r);
  if (c == SB_OK) {
    char text[SB_PATH_MAX + 1];
    memcpy(text, target, tlen);
    text[tlen] = '\0';
    if (symlinkat(text, dfd, n.name) != 0) c = sb_rt_fail_errno(e);
  }
  if (dfd >= 0) close(dfd);
  sb_ovl_node_free(&n);
  return c;
}

/* Take n's object out of the upper layer (a tree: all of it). */
static int drop_upper(const onode *n, uint64_t *freed) {
  if (n->where != UP) return 0;
  if (S_ISDIR(n->st.st_mode)) return -sb_tree_remove(n->parent.fd[UP], n->name, freed);
  if (unlinkat(n->parent.fd[UP], n->name, 0) != 0) return -errno;
  if (S_ISREG(n->st.st_mode)) *freed += (uint64_t)n->st.st_size;
  return 0;
}

static sb_code ov_remove(sb_fs *fs, const sb_path *p, bool recursive, sb_err *e) {
  ovl *ov = OV(fs);
  onode n;
  sb_code c = lookup_for_write(fs, p, false, &n, e);
  bool empty = true;
  if (c == SB_OK && n.where < 0) c = sb_fail(e, SB_ENOENT, NULL);
  else if (c == SB_OK && p->must_dir && !sb_ovl_is_dir(&n)) c = sb_fail(e, SB_ENOTDIR, NULL);
  else if (c == SB_OK) c = sb_ovl_recheck(fs, &n, SB_ACC_MODIFY, kind_of(&n), e);
  if (c == SB_OK && sb_ovl_is_dir(&n) && (c = merged_empty(fs, &n, &empty, e)) == SB_OK && !empty && !recursive)
    c = sb_fail(e, SB_ENOTEMPTY, "directory not empty (use recursive = true)");
  uint64_t freed = 0;
  int r, dfd = -1;
  if (c == SB_OK && (r = drop_upper(&n, &freed)) != 0)
    c = r == -ELOOP ? sb_fail(e, SB_EIO, "directory tree too deep to remove") : fail(e, r);
  sb_disk_apply(&ov->disk, -(int64_t)freed);
  if (c == SB_OK && n.lower_has) { /* the base has one: hide it */
    if ((dfd = sb_ovl_upper_parent(ov, &n)) < 0) c = fail(e, dfd);
    else if ((r = sb_ovl_make_whiteout(dfd, n.name)) != 0) c = fail(e, r);
  }
  if (dfd >= 0) close(dfd);
  sb_ovl_node_free(&n);
  return c;
}

/* Copy the merged object `name` of d (found as n) to dfd/dname in the upper
 * layer: a file's bytes and mode, a link's text, a directory's merged tree. */
static int copy_merged(sb_fs *fs, const mdir *d, const char *name, const onode *n, int dfd, const char *dname,
                       int depth) {
  if (depth > SB_WALK_DEPTH_MAX) return -ELOOP;
  const struct stat *st = &n->st;
  int src = d->fd[n->where];
  if (S_ISREG(st->st_mode)) return -sb_tree_copy_file(src, name, dfd, dname, st->st_mode);
  if (S_ISLNK(st->st_mode)) {
    char target[SB_PATH_MAX + 1];
    ssize_t len = readlinkat(src, name, target, sizeof target - 1);
    if (len < 0) return -errno;
    target[len] = '\0';
    return symlinkat(target, dfd, dname) == 0 ? 0 : -errno;
  }
  if (!S_ISDIR(st->st_mode)) return 0; /* sockets, fifos, devices: not copied, as sb_tree_copy */
  if (mkdirat(dfd, dname, st->st_mode & 07777) != 0) return -errno;
  if (fchmodat(dfd, dname, st->st_mode & 07777, 0) != 0) return -errno;
  mdir sub = {{-1, -1}};
  int out = sb_ovl_open_dir(dfd, dname), r = sb_ovl_descend(d, name, n, &sub);
  if (out < 0 || r != 0) {
    sb_ovl_mdir_close(&sub);
    if (out >= 0) close(out);
    return out < 0 ? out : r;
  }
  sb_dirlist dl = {0};
  sb_err e;
  r = sb_ovl_list_merged(fs, &sub, &dl, 0, &e) == SB_OK ? 0 : -ENOMEM;
  for (size_t i = 0; r == 0 && i < dl.n; i++) {
    onode cn;
    sb_ovl_node_init(&cn);
    if ((r = sb_ovl_child(&sub, dl.v[i].name, &cn)) == 0 && cn.where >= 0)
      r = copy_merged(fs, &sub, dl.v[i].name, &cn, out, dl.v[i].name, depth + 1);
  }
  sb_dirlist_free(&fs->mem, &dl);
  sb_ovl_mdir_close(&sub);
  close(out);
  return r;
}

static bool inside(const onode *dir, const onode *n) {
  return n->rlen > dir->rlen && memcmp(n->rel, dir->rel, dir->rlen) == 0 && n->rel[dir->rlen] == '/';
}

/* Can from's object move by a rename in the upper layer? Not from the
 * base, nor a directory merged with the base's (the kernel says EXDEV). */
static bool movable(const onode *f) {
  return f->where == UP && !(S_ISDIR(f->st.st_mode) && f->lower_dir && !sb_ovl_upper_opaque(f));
}

/* Put from's object at to's name in the upper layer (tfd is to's upper
 * parent): renamed when it lies wholly in the upper layer, else copied. */
static int place(sb_fs *fs, const onode *f, const onode *t, int tfd, uint64_t *freed) {
  ovl *ov = OV(fs);
  bool dir = S_ISDIR(f->st.st_mode);
  bool whole = movable(f);
  int r = clear_whiteout(tfd, t);
  if (r == 0 && t->where == UP && S_ISDIR(t->st.st_mode))
    r = -sb_tree_remove(tfd, t->name, freed); /* empty in the view */
  if (r != 0) return r;
  if (whole) {
    if (renameat(f->parent.fd[UP], f->name, tfd, t->name) != 0) return -errno;
  } else {
    char tmp[32];
    snprintf(tmp, sizeof tmp, ".fs-tmp-%016llx", (unsigned long long)(ov->tmp.seed + ++ov->tmp.count));
    r = copy_merged(fs, &f->parent, f->name, f, tfd, tmp, 0);
    if (r == 0 && dir && t->lower_has) r = sb_ovl_set_opaque(ov, tfd, tmp);
    if (r == 0 && renameat(tfd, tmp, tfd, t->name) != 0) r = -errno;
    if (r != 0) {
      uint64_t ignored;
      if (dir) sb_tree_remove(tfd, tmp, &ignored); /* no half copy left behind */
      else unlinkat(tfd, tmp, 0);
      return r;
    }
    if ((r = drop_upper(f, freed)) != 0) return r;
    ov->disk.dirty = true; /* bytes came up from the base */
    return 0;
  }
  return dir && t->lower_has ? sb_ovl_set_opaque(ov, tfd, t->name) : 0; /* the base's at to stays hidden */
}

static sb_code ov_rename(sb_fs *fs, const sb_path *from, const sb_path *to, bool overwrite, sb_err *e) {
  ovl *ov = OV(fs);
  onode f, t;
  sb_ovl_node_init(&f);
  sb_ovl_node_init(&t);
  sb_code c = lookup_for_write(fs, from, false, &f, e);
  if (c == SB_OK) c = lookup_for_write(fs, to, false, &t, e);
  bool dir = sb_ovl_is_dir(&f);
  if (c != SB_OK) {
  } else if (f.where < 0) c = sb_fail(e, SB_ENOENT, NULL);
  else if ((from->must_dir || to->must_dir) && !dir) c = sb_fail(e, SB_ENOTDIR, NULL);
  else if ((c = sb_ovl_recheck(fs, &f, SB_ACC_MODIFY, kind_of(&f), e)) != SB_OK ||
           (c = sb_ovl_recheck(fs, &t, SB_ACC_MODIFY, kind_of(&f), e)) != SB_OK) {
  } else if (f.rlen == t.rlen && memcmp(f.rel, t.rel, f.rlen) == 0) {
    goto done; /* the same entry: nothing to do, as rename(2) */
  } else if (dir && inside(&f, &t)) c = sb_fail(e, SB_EINVAL, "cannot move a directory into itself");
  else if (t.where >= 0 && overwrite && inside(&t, &f)) c = sb_fail(e, SB_ENOTEMPTY, NULL); /* an ancestor */
  else if (t.where >= 0 && !overwrite) c = sb_fail(e, SB_EEXIST, NULL);
  else if (t.where >= 0 && dir && !sb_ovl_is_dir(&t)) c = sb_fail(e, SB_ENOTDIR, NULL);
  else if (t.where >= 0 && !dir && sb_ovl_is_dir(&t)) c = sb_fail(e, SB_EISDIR, NULL);
  else if (sb_ovl_is_dir(&t)) {
    bool empty;
    if ((c = merged_empty(fs, &t, &empty, e)) == SB_OK && !empty) c = sb_fail(e, SB_ENOTEMPTY, NULL);
  }
  int tfd = -1, ffd = -1, r = 0;
  uint64_t freed = 0, bytes = 0;
  if (c == SB_OK && ov->disk.max != SB_UNLIMITED && !movable(&f)) { /* a copy: whole before the source goes */
    mdir d = {{-1, -1}};
    if (!dir) bytes = S_ISREG(f.st.st_mode) ? (uint64_t)f.st.st_size : 0;
    else if (sb_ovl_open_node_dir(&f, &d) == 0) sb_ovl_merged_bytes(fs, &d, &bytes, 0);
    sb_ovl_mdir_close(&d);
    c = disk_check(fs, (int64_t)bytes, e);
  }
  if (c == SB_OK && (tfd = sb_ovl_upper_parent(ov, &t)) < 0) c = fail(e, tfd);
  if (c == SB_OK && t.where == UP && !sb_ovl_is_dir(&t) && S_ISREG(t.st.st_mode)) freed += (uint64_t)t.st.st_size;
  if (c == SB_OK && (r = place(fs, &f, &t, tfd, &freed)) != 0) c = fail(e, r);
  sb_disk_apply(&ov->disk, -(int64_t)freed);
  if (c == SB_OK && f.lower_has) { /* the base has one at from: hide it */
    if ((ffd = sb_ovl_upper_parent(ov, &f)) < 0) c = fail(e, ffd);
    else if ((r = sb_ovl_make_whiteout(ffd, f.name)) != 0 && r != -EEXIST) c = fail(e, r);
  }
  if (tfd >= 0) close(tfd);
  if (ffd >= 0) close(ffd);
done:
  sb_ovl_node_free(&f);
  sb_ovl_node_free(&t);
  return c;
}

/* ---- commands, lifecycle ------------------------------------------------ */

static int cmd_open_cwd(sb_fs *fs, const sb_path *p, char *rel, size_t cap, sb_err *e) {
  (void)p;
  (void)rel;
  (void)cap;
  sb_failf(e, SB_ENOTSUP,
           "commands need the kernel's overlayfs, which could not be mounted here (%s); "
           "the file operations work",
           OV(fs)->why);
  return -1;
}

static void cmd_tree(sb_fs *fs, sb_cmd_tree *out) {
  out->root_fd = OV(fs)->root[UP];
  out->ro_fds = NULL;
  out->nro = 0;
}

static void cmd_changed(sb_fs *fs) { (void)fs; }

static const sb_backend_cmd overlay_cmd = {cmd_open_cwd, cmd_tree, cmd_changed};

static void ov_close(sb_fs *fs) {
  ovl *ov = OV(fs);
  if (!ov) return;
  for (int i = 0; i < 2; i++)
    if (ov->root[i] >= 0) close(ov->root[i]);
  sb_free(&fs->mem, ov, sizeof *ov);
  fs->impl = NULL;
}

sb_code sb_overlay_open(sb_fs *fs, const sb_overlay_opts *o, sb_err *e) {
  ovl *ov = sb_malloc(&fs->mem, sizeof *ov);
  if (!ov) {
    close(o->upper_fd);
    close(o->lower_fd);
    return sb_fail_oom(e);
  }
  *ov = (ovl){.root = {o->upper_fd, o->lower_fd},
              .can_read = o->can_read,
              .can_write = o->can_write,
              .opaque_x = o->userxattr ? "user.overlay.opaque" : "trusted.overlay.opaque",
              .disk = {.max = o->max_disk_usage, .dirty = true}};
  snprintf(ov->why, sizeof ov->why, "%s", o->why ? o->why : "no sandbox namespace");
  sb_rt_tmp_init(&ov->tmp, ov);
  fs->be = &sb_overlay_backend;
  fs->impl = ov;
  return SB_OK;
}

const sb_backend sb_overlay_backend = {
    .kind = "overlay",
    .read = ov_read,
    .write = ov_write,
    .stat = ov_stat,
    .symlink = ov_symlink,
    .readlink = ov_readlink,
    .realpath = ov_realpath,
    .readdir = ov_readdir,
    .mkdir = ov_mkdir,
    .remove = ov_remove,
    .rename = ov_rename,
    .walk = sb_ovl_walk,
    .open_ref = sb_ovl_open_ref,
    .close = ov_close,
    .cmd = &overlay_cmd,
};
