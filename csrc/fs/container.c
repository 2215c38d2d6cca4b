#include "fs/container.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/tree.h"
#include "fs/resolver.h"
#include "fs/rooted.h"
#include "fs/container_impl.h"
#include "plat/rename.h"
#include "plat/fd.h"

static sb_code need_write(container *ct, sb_err *e) {
  return ct->can_write ? SB_OK : sb_fail(e, SB_EACCES, "the sandbox is read-only (mode \"r\")");
}

/* The first steps of every write-side operation: the tree is writable, the
 * parent of p's last component is open in the root layer (created with
 * `parents`), and its name is in `name`. The parent fd, or -1 with e. */
static int open_final(sb_fs *fs, const sb_path *p, bool parents, char name[SB_NAME_MAX + 1], sb_err *e) {
  container *ct = CT(fs);
  if (need_write(ct, e) != SB_OK) return -1;
  ct->absent.n = 0; /* the tree changes from here: nothing known of the upper layer holds */
  int dirfd = sb_ct_open_parent(&ct->layers[0], p, parents, e);
  if (dirfd >= 0) sb_ct_last_name(p, name);
  return dirfd;
}

/* ---- disk usage (max_disk_usage) ---------------------------------------- */

/* the root's regular files, or usage_fd's tree (an overlay's upper layer) */
static sb_code disk_count(sb_fs *fs, uint64_t *used, sb_err *e) {
  container *ct = CT(fs);
  sb_path root;
  sb_path_from_rel(&root, "", 0, e);
  return ct->usage_fd >= 0 ? sb_ct_usage_walk(fs, ct->usage_fd, used, e)
                           : sb_ct_walk_layer(fs, 0, &root, SB_WALK_SIZES, sb_ct_count_bytes, used, e);
}

static sb_code disk_check(sb_fs *fs, int64_t dbytes, sb_err *e) {
  return sb_disk_check(&CT(fs)->disk, fs, disk_count, dbytes, e);
}

/* ---- write side --------------------------------------------------------- */

/* What stands at the target decides whether and how it is replaced. */
static sb_code check_target(sb_fs *fs, int dirfd, const char *name, size_t len, const sb_write_opts *o, struct stat *st,
                            bool *exists, sb_err *e) {
  *exists = fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!*exists && errno != ENOENT) return sb_rt_fail_errno(e);
  if (*exists && S_ISDIR(st->st_mode)) return sb_fail(e, SB_EISDIR, NULL);
  if (*exists && S_ISLNK(st->st_mode)) return sb_fail(e, SB_ELOOP, "refusing to write through a symbolic link");
  if (*exists && !S_ISREG(st->st_mode)) return sb_rt_type_error(st, e);
  if (*exists && !o->overwrite) return sb_fail(e, SB_EEXIST, NULL);
  return disk_check(fs, (int64_t)len - (*exists ? (int64_t)st->st_size : 0), e);
}

/* Atomic replace: the content goes to a temporary file in the same
 * directory, then takes the name with one rename. The common case, a new
 * name, is tried first with RENAME_NOREPLACE and no stat before it; only
 * when something is already there is it examined and, if allowed, replaced
 * with its mode kept. A disk quota needs the size delta first. */
static sb_code ct_write(sb_fs *fs, const sb_path *p, const char *data, size_t len, const sb_write_opts *o, sb_err *e) {
  container *ct = CT(fs);
  sb_code c;
  if (p->must_dir && ct->can_write) return sb_fail(e, SB_EISDIR, NULL);
  layer *v = &ct->layers[0];
  char name[SB_NAME_MAX + 1], tmp[32];
  int dirfd = open_final(fs, p, o->parents, name, e);
  if (dirfd < 0) return e->code;
  struct stat st = {.st_mode = S_IFREG | 0644};
  bool exists = false, placed = false, plain = false;
  int tfd = -1;
  c = sb_ct_recheck(fs, v, dirfd, name, SB_ACC_WRITE, SB_KIND_FILE, e);
  if (c == SB_OK && ct->disk.max != SB_UNLIMITED) c = check_target(fs, dirfd, name, len, o, &st, &exists, e);
  if (c == SB_OK) c = sb_rt_write_tmp(&ct->tmp, dirfd, tmp, data, len, &tfd, e);
  if (c == SB_OK && !exists) {
    placed = sb_rename_noreplace(dirfd, tmp, dirfd, name) == 0;
    if (placed) {
      sb_disk_apply(&ct->disk, (int64_t)len);
    } else if (errno == EEXIST || (errno == EINVAL && o->overwrite)) {
      plain = errno == EINVAL; /* a filesystem without RENAME_NOREPLACE */
      c = check_target(fs, dirfd, name, len, o, &st, &exists, e);
      if (c == SB_OK && !exists && !plain) c = sb_fail(e, SB_EAGAIN, "the target changed during the write");
    } else {
      c = sb_rt_fail_errno(e);
    }
  }
  if (c == SB_OK && !placed) { /* a regular file that may be overwritten (or none, plain) */
    if ((st.st_mode & 07777) != 0644 && fchmod(tfd, st.st_mode & 07777) != 0) c = sb_rt_fail_errno(e);
    else if (renameat(dirfd, tmp, dirfd, name) != 0) c = sb_rt_fail_errno(e);
    else sb_disk_apply(&ct->disk, (int64_t)len - (exists ? (int64_t)st.st_size : 0));
  }
  if (tfd >= 0) {
    if (c != SB_OK) unlinkat(dirfd, tmp, 0);
    close(tfd);
  }
  close(dirfd);
  return c;
}

static sb_code ct_mkdir(sb_fs *fs, const sb_path *p, bool parents, sb_err *e) {
  layer *v = &CT(fs)->layers[0];
  char name[SB_NAME_MAX + 1];
  int dirfd = open_final(fs, p, parents, name, e);
  if (dirfd < 0) return e->code;
  sb_code c = sb_ct_recheck(fs, v, dirfd, name, SB_ACC_MODIFY, SB_KIND_DIR, e);
  if (c == SB_OK && mkdirat(dirfd, name, 0755) != 0) {
    struct stat st;
    if (errno == EEXIST && parents && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
      c = SB_OK;
    else c = sb_rt_fail_errno(e);
  }
  close(dirfd);
  return c;
}

static sb_code ct_symlink(sb_fs *fs, const char *target, size_t tlen, const sb_path *p, sb_err *e) {
  layer *v = &CT(fs)->layers[0];
  char name[SB_NAME_MAX + 1], dir[2 * SB_PATH_MAX + 2], text[SB_PATH_MAX + 1];
  int dirfd = open_final(fs, p, false, name, e);
  if (dirfd < 0) return e->code;
  long n = sb_resolve_relpath(&v->res, dirfd, dir, sizeof dir);
  sb_code c = n < 0 ? sb_rt_fail(e, (int)n) : sb_ct_recheck(fs, v, dirfd, name, SB_ACC_WRITE, SB_KIND_FILE, e);
  if (c == SB_OK) c = sb_policy_link(fs->policy, dir, (size_t)n, target, tlen, e);
  if (c == SB_OK) {
    memcpy(text, target, tlen);
    text[tlen] = '\0';
    struct stat st;
    if (p->must_dir) /* "new/": a link cannot be a directory, as the kernel says */
      c = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? sb_fail(e, SB_EEXIST, NULL)
                                                              : sb_fail(e, SB_ENOENT, NULL);
    else if (symlinkat(text, dirfd, name) != 0) c = sb_rt_fail_errno(e);
  }
  close(dirfd);
  return c;
}

static sb_code ct_remove(sb_fs *fs, const sb_path *p, bool recursive, sb_err *e) {
  container *ct = CT(fs);
  sb_code c = SB_OK;
  layer *v = &ct->layers[0];
  char name[SB_NAME_MAX + 1];
  int dirfd = open_final(fs, p, false, name, e);
  if (dirfd < 0) return e->code;
  /* Without rules or a disk quota a file needs no stat first: unlink it, and
   * only a directory (EISDIR) takes the long way. */
  if (!sb_policy_judges_entries(fs->policy) && ct->disk.max == SB_UNLIMITED && !p->must_dir) {
    c = unlinkat(dirfd, name, 0) == 0 ? SB_OK : errno == EISDIR ? SB_EISDIR : sb_rt_fail_errno(e);
    if (c != SB_EISDIR) {
      close(dirfd);
      return c;
    }
    c = SB_OK;
  }
  struct stat st;
  uint64_t freed = 0;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) c = sb_rt_fail_errno(e);
  else if (p->must_dir && !S_ISDIR(st.st_mode)) c = sb_fail(e, SB_ENOTDIR, NULL);
  else c = sb_ct_recheck(fs, v, dirfd, name, SB_ACC_MODIFY, S_ISDIR(st.st_mode) ? SB_KIND_DIR : SB_KIND_FILE, e);
  if (c == SB_OK && S_ISDIR(st.st_mode)) {
    if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0) {
      if ((errno == ENOTEMPTY || errno == EEXIST) && !recursive)
        c = sb_fail(e, SB_ENOTEMPTY, "directory not empty (use recursive = true)");
      else if (errno == ENOTEMPTY || errno == EEXIST) {
        int err = sb_tree_remove(dirfd, name, &freed);
        if (err) c = err == ELOOP ? sb_fail(e, SB_EIO, "directory tree too deep to remove") : sb_rt_fail(e, -err);
      } else {
        c = sb_rt_fail_errno(e);
      }
    }
  } else if (c == SB_OK) {
    if (unlinkat(dirfd, name, 0) != 0) c = sb_rt_fail_errno(e);
    else if (S_ISREG(st.st_mode)) freed = (uint64_t)st.st_size;
  }
  sb_disk_apply(&ct->disk, -(int64_t)freed);
  close(dirfd);
  return c;
}

/* A directory rename the file system refuses with EXDEV — an overlay
 * (without redirects) cannot rename a directory of its lower layer — done
 * as mv does it: copy, then remove. A destination must be an empty
 * directory, as for rename. -1 with errno as rename would set it. */
static int move_dir(int fd1, const char *n1, int fd2, const char *n2, const struct stat *dst, bool overwrite) {
  if (dst) {
    if (!overwrite) return errno = EEXIST, -1;
    if (!S_ISDIR(dst->st_mode)) return errno = ENOTDIR, -1;
    if (unlinkat(fd2, n2, AT_REMOVEDIR) != 0) return -1; /* ENOTEMPTY, as rename says */
  }
  int err = sb_tree_copy(fd1, n1, fd2, n2);
  uint64_t freed;
  if (err) {
    sb_tree_remove(fd2, n2, &freed); /* no half copy left behind */
    return errno = err, -1;
  }
  err = sb_tree_remove(fd1, n1, &freed);
  return err ? (errno = err, -1) : 0;
}

/* Does an overlay's upper layer hold dirfd/name already (then renaming it
 * copies nothing up)? True off an overlay or without a disk quota. */
static bool in_upper(sb_fs *fs, const layer *v, int dirfd, const char *name) {
  container *ct = CT(fs);
  if (ct->usage_fd < 0 || ct->disk.max == SB_UNLIMITED) return true;
  char rel[2 * SB_PATH_MAX + 2];
  long n = sb_resolve_relpath(&v->res, dirfd, rel, sizeof rel - SB_NAME_MAX - 2);
  if (n < 0) return false;
  size_t len = (size_t)n, nl = strlen(name);
  if (len) rel[len++] = '/';
  memcpy(rel + len, name, nl + 1);
  int fd = sb_resolve_nolinks(&v->res, ct->usage_fd, rel, len + nl, SB_O_PATH);
  struct stat st;
  bool there = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (fd >= 0) close(fd);
  return there; /* not known (no openat2): counted as a copy */
}

static sb_code ct_rename(sb_fs *fs, const sb_path *from, const sb_path *to, bool overwrite, sb_err *e) {
  container *ct = CT(fs);
  sb_code c = SB_OK;
  layer *v = &ct->layers[0];
  char n1[SB_NAME_MAX + 1], n2[SB_NAME_MAX + 1];
  int fd1 = open_final(fs, from, false, n1, e);
  if (fd1 < 0) return e->code;
  int fd2 = open_final(fs, to, false, n2, e);
  if (fd2 < 0) {
    close(fd1);
    return e->code;
  }
  struct stat s1, s2, d1, d2;
  bool dst = false;
  if (fstatat(fd1, n1, &s1, AT_SYMLINK_NOFOLLOW) != 0) c = sb_rt_fail_errno(e);
  else if (from->must_dir && !S_ISDIR(s1.st_mode)) c = sb_fail(e, SB_ENOTDIR, NULL);
  else if (to->must_dir && !S_ISDIR(s1.st_mode)) c = sb_fail(e, SB_ENOTDIR, NULL);
  else if (fstat(fd1, &d1) != 0 || fstat(fd2, &d2) != 0) c = sb_rt_fail_errno(e);
  else {
    int kind = S_ISDIR(s1.st_mode) ? SB_KIND_DIR : SB_KIND_FILE;
    c = sb_ct_recheck(fs, v, fd1, n1, SB_ACC_MODIFY, kind, e);
    if (c == SB_OK) c = sb_ct_recheck(fs, v, fd2, n2, SB_ACC_MODIFY, kind, e);
    dst = fstatat(fd2, n2, &s2, AT_SYMLINK_NOFOLLOW) == 0;
  }
  bool same = c == SB_OK && d1.st_dev == d2.st_dev && d1.st_ino == d2.st_ino && strcmp(n1, n2) == 0;
  /* on an overlay, a base file is copied up to be renamed: its bytes count */
  if (c == SB_OK && !same && S_ISREG(s1.st_mode) && !in_upper(fs, v, fd1, n1))
    c = disk_check(fs, (int64_t)s1.st_size, e);
  if (c == SB_OK && !same) {
    int r = overwrite ? renameat(fd1, n1, fd2, n2) : sb_rename_noreplace(fd1, n1, fd2, n2);
    if (r != 0 && errno == EXDEV && S_ISDIR(s1.st_mode)) {
      uint64_t bytes = 0; /* the copy is whole before the source goes */
      c = ct->disk.max == SB_UNLIMITED ? SB_OK
                                       : sb_ct_walk_layer(fs, 0, from, SB_WALK_SIZES, sb_ct_count_bytes, &bytes, e);
      if (c == SB_OK) c = disk_check(fs, (int64_t)bytes, e);
      if (c != SB_OK) {
        close(fd1);
        close(fd2);
        return c;
      }
      r = move_dir(fd1, n1, fd2, n2, dst ? &s2 : NULL, overwrite);
      ct->disk.dirty = true; /* copied: the bytes moved layers */
    }
    if (r != 0) {
      if (errno == EINVAL) c = sb_fail(e, SB_EINVAL, "cannot move a directory into itself");
      else if (errno == EEXIST && overwrite) c = sb_fail(e, SB_ENOTEMPTY, NULL);
      else c = sb_rt_fail_errno(e);
    } else if (dst && S_ISREG(s2.st_mode)) {
      sb_disk_apply(&ct->disk, -(int64_t)s2.st_size);
    }
  }
  close(fd1);
  close(fd2);
  return c;
}

/* ---- lifecycle ---------------------------------------------------------- */

static void ct_close(sb_fs *fs) {
  container *ct = CT(fs);
  if (!ct) return;
  for (size_t i = 0; i < ct->nlayers; i++) close(ct->layers[i].res.rootfd);
  if (ct->usage_fd >= 0) close(ct->usage_fd);
  if (ct->base_fd >= 0) close(ct->base_fd);
  sb_free(&fs->mem, ct->layers, ct->nlayers * sizeof *ct->layers);
  sb_free(&fs->mem, ct->ro_fds, ct->nlayers * sizeof *ct->ro_fds);
  sb_free(&fs->mem, ct, sizeof *ct);
  fs->impl = NULL;
}

sb_code sb_container_open(sb_fs *fs, const sb_container_opts *o, sb_err *e) {
  size_t nlayers = 1 + o->nroots;
  container *ct = sb_malloc(&fs->mem, sizeof *ct);
  layer *layers = sb_malloc(&fs->mem, nlayers * sizeof *layers);
  int *ro = sb_malloc(&fs->mem, nlayers * sizeof *ro);
  if (!ct || !layers || !ro) {
    sb_free(&fs->mem, ct, sizeof *ct);
    sb_free(&fs->mem, layers, nlayers * sizeof *layers);
    sb_free(&fs->mem, ro, nlayers * sizeof *ro);
    close(o->rootfd);
    for (size_t i = 0; i < o->nroots; i++) close(o->roots[i]);
    return sb_fail_oom(e);
  }
  *ct = (container){.layers = layers,
                    .nlayers = nlayers,
                    .can_write = o->can_write,
                    .disk = {.max = o->max_disk_usage, .dirty = true},
                    .ro_fds = ro,
                    .usage_fd = -1,
                    .base_fd = -1};
  sb_rt_tmp_init(&ct->tmp, ct);
  int rc = 0;
  for (size_t i = 0; i < nlayers; i++) {
    int fd = i == 0 ? o->rootfd : o->roots[i - 1];
    if (rc == 0) rc = sb_resolver_init(&layers[i].res, fd, o->resolver);
    layers[i].res.rootfd = fd;
    layers[i].content = i > 0 || o->can_read;
    if (i > 0) ro[i - 1] = fd;
  }
  fs->impl = ct;
  if (rc != 0) {
    ct_close(fs);
    return rc == -ENOSYS ? sb_fail(e, SB_ENOTSUP, "openat2 is not available on this kernel")
                         : sb_fail(e, SB_EINVAL, "resolver must be \"auto\", \"openat2\" or \"fallback\"");
  }
  return SB_OK;
}

void sb_container_set_root(sb_fs *fs, int fd, int usage_fd) {
  container *ct = CT(fs);
  if (ct->base_fd >= 0) close(ct->base_fd);
  ct->base_fd = ct->layers[0].res.rootfd; /* kept for untouched reads */
  ct->layers[0].res.rootfd = fd;
  if (ct->usage_fd >= 0) close(ct->usage_fd);
  ct->usage_fd = usage_fd;
  ct->disk.dirty = true;
  ct->absent.n = 0;
}

int sb_container_base(sb_fs *fs, size_t *nroots) {
  *nroots = CT(fs)->nlayers - 1;
  return CT(fs)->layers[0].res.rootfd;
}

/* The same layers through fds of its own, read-only (backend.h: open_copy). */
static sb_code ct_open_copy(sb_fs *to, sb_fs *from, sb_err *e) {
  const container *ct = CT(from);
  if (!ct) return sb_fail(e, SB_EINVAL, "the sandbox is disposed");
  size_t n = ct->nlayers;
  int *fds = sb_malloc(&to->mem, n * sizeof *fds);
  if (!fds) return sb_fail_oom(e);
  for (size_t i = 0; i < n; i++) {
    fds[i] = fcntl(ct->layers[i].res.rootfd, F_DUPFD_CLOEXEC, 3);
    if (fds[i] < 0) {
      int err = errno;
      while (i > 0) close(fds[--i]);
      sb_free(&to->mem, fds, n * sizeof *fds);
      return sb_fail_errno(e, err);
    }
  }
  sb_container_opts o = {.rootfd = fds[0],
                         .roots = fds + 1,
                         .nroots = n - 1,
                         .can_read = ct->layers[0].content,
                         .can_write = false,
                         .resolver = sb_resolver_name(&ct->layers[0].res),
                         .max_disk_usage = SB_UNLIMITED};
  sb_code c = sb_container_open(to, &o, e); /* takes the fds */
  sb_free(&to->mem, fds, n * sizeof *fds);
  return c;
}

const char *sb_container_resolver(sb_fs *fs) { return CT(fs) ? sb_resolver_name(&CT(fs)->layers[0].res) : "closed"; }

/* ---- commands over the tree ------------------------------------------------ */

static int cmd_open_cwd(sb_fs *fs, const sb_path *p, char *rel, size_t cap, sb_err *e) {
  container *ct = CT(fs);
  int fd = sb_resolve_dir(&ct->layers[0].res, p->buf, p->len);
  if (fd < 0) {
    sb_rt_fail(e, fd);
    return -1;
  }
  if (p->len == 0) { /* the root itself (the usual case): no path to read back */
    if (cap) rel[0] = '\0';
    return fd;
  }
  long n = sb_resolve_relpath(&ct->layers[0].res, fd, rel, cap);
  if (n < 0) {
    close(fd);
    sb_rt_fail(e, (int)n);
    return -1;
  }
  return fd;
}

static void cmd_tree(sb_fs *fs, sb_cmd_tree *out) {
  container *ct = CT(fs);
  out->root_fd = ct->layers[0].res.rootfd;
  out->ro_fds = ct->ro_fds;
  out->nro = ct->nlayers - 1;
}

static void cmd_changed(sb_fs *fs) {
  container *ct = CT(fs);
  if (!ct) return; /* closed */
  ct->disk.dirty = true; /* recount disk usage before the next write */
  ct->absent.n = 0;
}

static const sb_backend_cmd container_cmd = {.open_cwd = cmd_open_cwd, .tree = cmd_tree, .changed = cmd_changed};

const sb_backend sb_container_backend = {
    .kind = "container",
    .read = sb_ct_read,
    .symlink = ct_symlink,
    .readlink = sb_ct_readlink,
    .realpath = sb_ct_realpath,
    .write = ct_write,
    .stat = sb_ct_stat,
    .readdir = sb_ct_readdir,
    .mkdir = ct_mkdir,
    .remove = ct_remove,
    .rename = ct_rename,
    .walk = sb_ct_walk,
    .open_ref = sb_ct_open_ref,
    .close = ct_close,
    .open_copy = ct_open_copy,
    .cmd = &container_cmd,
};
