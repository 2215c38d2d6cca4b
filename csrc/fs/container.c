#include "fs/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/tree.h"
#include "fs/resolver.h"

#define TMP_PREFIX ".sb-tmp-"
#define WALK_DEPTH_MAX 256

/* A tree reads may come from: [0] is base_dir, then the read roots. */
typedef struct view {
  sb_resolver res;
  bool content; /* file contents may be read (false: base_dir in mode "w") */
} view;

typedef struct rootfs {
  view *views;
  size_t nviews;
  bool can_write;
  uint64_t max_disk, disk_used;
  bool disk_dirty;
  uint64_t tmp_seed, tmp_count; /* temporary names without a syscall each */
} rootfs;

#define FS(sb) ((rootfs *)(sb)->impl)

/* ---- errors ------------------------------------------------------------- */

static sb_code fail_neg(sb_err *e, int neg) {
  switch (-neg) {
  case EXDEV: return sb_fail(e, SB_EESCAPE, "path escapes the sandbox (through '..' or a symbolic link)");
  case ENXIO: case ENODEV: return sb_fail(e, SB_ENOTSUP, "not a regular file");
  case EMFILE: case ENFILE: return sb_fail(e, SB_EIO, "too many open files");
  default: return sb_fail_errno(e, -neg);
  }
}

static sb_code fail_errno_now(sb_err *e) { return fail_neg(e, -errno); }

static sb_code type_error(const struct stat *st, sb_err *e) {
  if (S_ISDIR(st->st_mode)) return sb_fail(e, SB_EISDIR, NULL);
  return sb_fail(e, SB_ENOTSUP, "not a regular file (a FIFO, socket or device)");
}

/* ---- helpers ------------------------------------------------------------ */

static bool is_tmp(const char *name) {
  return strncmp(name, TMP_PREFIX, sizeof TMP_PREFIX - 1) == 0;
}

/* Bytes of buf naming the first k components. */
static size_t prefix_len(const sb_path *p, unsigned k) {
  return k ? (size_t)p->off[k] - 1 : 0;
}

/* The last component as a NUL-terminated name. */
static const char *last_name(const sb_path *p, char out[SB_NAME_MAX + 1]) {
  size_t n;
  const char *c = sb_path_comp(p, p->ncomp - 1, &n);
  memcpy(out, c, n);
  out[n] = '\0';
  return out;
}

static bool policy_active(const sb_policy *pol) {
  return pol->deny.n || pol->has_allow || pol->has_ext_read || pol->has_ext_write;
}

/* Rules and extensions apply to where a path really leads: a symlink made
 * by a command must not route around them. Check the object's real
 * root-relative path (dirfd + optional name). */
static sb_code recheck(sb_sandbox *sb, const view *v, int fd, const char *name,
                       sb_access acc, int kind, sb_err *e) {
  if (!policy_active(&sb->policy)) return SB_OK;
  char rel[2 * SB_PATH_MAX + 2];
  long n = sb_resolve_relpath(&v->res, fd, rel, sizeof rel - SB_NAME_MAX - 2);
  if (n < 0) return n == -EXDEV ? fail_neg(e, (int)n) : sb_fail(e, SB_EACCES, "cannot verify the path against the sandbox rules");
  size_t len = (size_t)n;
  if (name) {
    if (len) rel[len++] = '/';
    size_t nl = strlen(name);
    memcpy(rel + len, name, nl);
    len += nl;
    rel[len] = '\0';
  }
  return sb_policy_check(&sb->policy, acc, rel, len, kind, e);
}

/* Read an open regular file into sb->scratch (NUL-terminated). */
static sb_code read_fd(sb_sandbox *sb, int fd, uint64_t size_hint, sb_view *out, sb_err *e) {
  sb_buf *b = &sb->scratch;
  uint64_t max = sb->policy.max_read_bytes;
  b->len = 0;
  if (sb_buf_reserve(&sb->mem, b, (size_t)(size_hint < max ? size_hint : max) + 1) != 0)
    return sb_fail(e, SB_ENOSPC, "out of memory");
  for (;;) {
    if (b->cap - b->len < 2 && sb_buf_reserve(&sb->mem, b, b->len + 4096 > max + 2 ? 2 : 4096) != 0)
      return sb_fail(e, SB_ENOSPC, "out of memory");
    ssize_t n = read(fd, b->p + b->len, b->cap - b->len - 1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail_errno_now(e);
    }
    if (n == 0) break;
    b->len += (size_t)n;
    if (b->len > max) return sb_policy_read_size(&sb->policy, b->len, e); /* grew while read */
  }
  b->p[b->len] = '\0';
  out->p = b->p;
  out->len = b->len;
  return SB_OK;
}

static void fill_stat(const struct stat *st, sb_stat *out) {
  out->type = S_ISREG(st->st_mode) ? SB_T_FILE : S_ISDIR(st->st_mode) ? SB_T_DIR
            : S_ISLNK(st->st_mode) ? SB_T_SYMLINK : SB_T_OTHER;
  out->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
  out->mtime = (double)st->st_mtim.tv_sec + st->st_mtim.tv_nsec / 1e9;
  out->mode = st->st_mode & 07777;
}

/* Open the directory of components [0, upto), creating missing ones when
 * `create` (libpathrs mkdir_all: tolerate races, never create after a
 * missing component followed by ".."). Returns an O_PATH fd or -1. */
static int open_dir_chain(const view *v, const sb_path *p, unsigned upto, bool create, sb_err *e) {
  int fd = sb_resolve_dir(&v->res, p->buf, prefix_len(p, upto));
  if (fd >= 0) return fd;
  if (fd != -ENOENT || !create) {
    fail_neg(e, fd);
    return -1;
  }
  unsigned k = upto; /* find the deepest existing ancestor */
  while (k > 0) {
    fd = sb_resolve_dir(&v->res, p->buf, prefix_len(p, --k));
    if (fd >= 0) break;
    if (fd != -ENOENT) {
      fail_neg(e, fd);
      return -1;
    }
  }
  if (fd < 0) {
    fail_neg(e, fd);
    return -1;
  }
  for (unsigned i = k; i < upto; i++) { /* check before creating anything */
    size_t n;
    const char *c = sb_path_comp(p, i, &n);
    if (sb_path_is_dotdot(c, n)) {
      close(fd);
      sb_fail(e, SB_ENOENT, NULL);
      return -1;
    }
  }
  for (unsigned i = k; i < upto; i++) {
    size_t n;
    const char *c = sb_path_comp(p, i, &n);
    char name[SB_NAME_MAX + 1];
    memcpy(name, c, n);
    name[n] = '\0';
    if (mkdirat(fd, name, 0755) != 0 && errno != EEXIST) {
      fail_errno_now(e);
      close(fd);
      return -1;
    }
    close(fd);
    /* re-resolve from the root: whatever raced in is judged by the resolver */
    fd = sb_resolve_dir(&v->res, p->buf, prefix_len(p, i + 1));
    if (fd < 0) {
      fail_neg(e, fd);
      return -1;
    }
  }
  return fd;
}

static int open_parent(const view *v, const sb_path *p, bool create, sb_err *e) {
  return open_dir_chain(v, p, p->ncomp - 1, create, e);
}

static sb_code need_write(rootfs *fs, sb_err *e) {
  return fs->can_write ? SB_OK : sb_fail(e, SB_EACCES, "the sandbox is read-only (mode \"r\")");
}

/* ---- disk usage (max_disk_usage) ---------------------------------------- */

static int usage_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref) {
  (void)rel;
  (void)rlen;
  (void)ref;
  if (ent->type == SB_T_FILE) *(uint64_t *)ud += ent->size;
  return SB_WALK_CONTINUE;
}

static sb_code rf_walk_view(sb_sandbox *sb, size_t vi, const sb_path *p, sb_walk_fn fn,
                            void *ud, sb_err *e);

static sb_code disk_check(sb_sandbox *sb, int64_t dbytes, sb_err *e) {
  rootfs *fs = FS(sb);
  if (fs->max_disk == SB_UNLIMITED) return SB_OK;
  if (fs->disk_dirty) {
    uint64_t used = 0;
    sb_path root;
    sb_path_from_rel(&root, "", 0, e);
    sb_code c = rf_walk_view(sb, 0, &root, usage_cb, &used, e);
    if (c != SB_OK) return c;
    fs->disk_used = used;
    fs->disk_dirty = false;
  }
  sb_quota q = {.max_bytes = fs->max_disk, .used_bytes = fs->disk_used,
                .max_nodes = SB_UNLIMITED};
  sb_code c = sb_quota_check(&q, dbytes, 0, e);
  if (c == SB_ENOSPC) sb_failf(e, SB_ENOSPC, "max_disk_usage (%llu bytes) would be exceeded",
                               (unsigned long long)fs->max_disk);
  return c;
}

static void disk_apply(rootfs *fs, int64_t dbytes) {
  if (fs->max_disk != SB_UNLIMITED && !fs->disk_dirty)
    fs->disk_used = (uint64_t)((int64_t)fs->disk_used + dbytes);
}

/* ---- read side ---------------------------------------------------------- */

/* Try each view in order; the first one where the path exists answers. */
static sb_code read_in(sb_sandbox *sb, const view *v, const sb_path *p, sb_view *out, sb_err *e) {
  int fd = sb_resolve(&v->res, p->buf, p->len,
                      O_RDONLY | O_NONBLOCK | O_NOCTTY | (p->must_dir ? O_DIRECTORY : 0), 0);
  if (fd < 0) return fail_neg(e, fd);
  struct stat st;
  sb_code c = SB_OK;
  if (fstat(fd, &st) != 0) c = fail_errno_now(e);
  else if (!S_ISREG(st.st_mode)) c = type_error(&st, e);
  else if (!v->content) c = sb_fail(e, SB_EACCES, "the sandbox root is write-only (mode \"w\")");
  else if ((c = recheck(sb, v, fd, NULL, SB_ACC_READ, SB_KIND_FILE, e)) == SB_OK &&
           (c = sb_policy_read_size(&sb->policy, (uint64_t)st.st_size, e)) == SB_OK)
    c = read_fd(sb, fd, (uint64_t)st.st_size, out, e);
  close(fd);
  return c;
}

static sb_code rf_read(sb_sandbox *sb, const sb_path *p, sb_view *out, sb_err *e) {
  rootfs *fs = FS(sb);
  sb_code c = SB_ENOENT;
  for (size_t i = 0; i < fs->nviews; i++) {
    c = read_in(sb, &fs->views[i], p, out, e);
    if (c != SB_ENOENT) return c;
  }
  return c;
}

static sb_code stat_in(sb_sandbox *sb, const view *v, const sb_path *p, struct stat *st, sb_err *e) {
  int fd = sb_resolve(&v->res, p->buf, p->len, O_PATH | (p->must_dir ? O_DIRECTORY : 0), 0);
  if (fd < 0) return fail_neg(e, fd);
  sb_code c = fstat(fd, st) == 0 ? SB_OK : fail_errno_now(e);
  if (c == SB_OK) c = recheck(sb, v, fd, NULL, SB_ACC_LIST,
                              S_ISDIR(st->st_mode) ? SB_KIND_DIR : SB_KIND_FILE, e);
  close(fd);
  return c;
}

/* Index of the first view where p exists, with its stat; -1 with e set. */
static long find_view(sb_sandbox *sb, const sb_path *p, struct stat *st, sb_err *e) {
  rootfs *fs = FS(sb);
  for (size_t i = 0; i < fs->nviews; i++) {
    sb_code c = stat_in(sb, &fs->views[i], p, st, e);
    if (c == SB_OK) return (long)i;
    if (c != SB_ENOENT) return -1;
  }
  return -1;
}

static sb_code rf_stat(sb_sandbox *sb, const sb_path *p, sb_stat *out, sb_err *e) {
  struct stat st;
  if (find_view(sb, p, &st, e) < 0) return e->code;
  fill_stat(&st, out);
  return SB_OK;
}

/* List one directory fd into dl (names in dl->names, fixed up by caller). */
static sb_code list_fd(sb_sandbox *sb, int dirfd, sb_dirlist *dl, sb_err *e) {
  int lfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lfd < 0) return fail_errno_now(e);
  DIR *d = fdopendir(lfd);
  if (!d) {
    close(lfd);
    return fail_errno_now(e);
  }
  sb_code c = SB_OK;
  struct dirent *de;
  errno = 0;
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    if ((nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0'))) || is_tmp(nm)) continue;
    sb_dirent ent = {.namelen = strlen(nm), .type = SB_T_DIR, .size = 0};
    if (de->d_type != DT_DIR) {
      struct stat st;
      if (fstatat(dirfd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0) continue; /* vanished */
      sb_stat s;
      fill_stat(&st, &s);
      ent.type = s.type;
      ent.size = s.size;
    }
    /* the offset stands in for the pointer until the arena stops moving */
    ent.name = (const char *)(uintptr_t)dl->names.len;
    if (sb_buf_append(&sb->mem, &dl->names, nm, ent.namelen + 1) != 0 ||
        sb_dirlist_push(sb, dl, &ent) != 0) {
      c = sb_fail(e, SB_ENOSPC, "out of memory");
      break;
    }
    errno = 0;
  }
  if (c == SB_OK && errno) c = fail_errno_now(e);
  closedir(d);
  return c;
}

static void fix_names(sb_dirlist *dl, size_t from) {
  for (size_t i = from; i < dl->n; i++)
    dl->v[i].name = dl->names.p + (uintptr_t)dl->v[i].name;
}

static sb_code rf_readdir(sb_sandbox *sb, const sb_path *p, sb_dirlist *dl, sb_err *e) {
  rootfs *fs = FS(sb);
  size_t found = 0;
  for (size_t i = 0; i < fs->nviews; i++) {
    view *v = &fs->views[i];
    int fd = sb_resolve(&v->res, p->buf, p->len, O_PATH | O_DIRECTORY, 0);
    if (fd == -ENOENT || (fd == -ENOTDIR && found)) continue;
    if (fd < 0) return fail_neg(e, fd);
    sb_code c = recheck(sb, v, fd, NULL, SB_ACC_LIST, SB_KIND_DIR, e);
    if (c == SB_OK) c = list_fd(sb, fd, dl, e);
    close(fd);
    if (c != SB_OK) return c;
    found++;
  }
  if (!found) return sb_fail(e, SB_ENOENT, NULL);
  fix_names(dl, 0);
  /* overlay: a name in an earlier view hides the same name in later ones */
  if (found > 1 && sb_dirlist_unique(sb, dl) != 0) return sb_fail(e, SB_ENOSPC, "out of memory");
  return SB_OK;
}

/* ---- write side --------------------------------------------------------- */

/* splitmix64: tmp names that are unpredictable from outside (seeded once
 * from getrandom) without a system call per write. */
static uint64_t next_tmp(rootfs *fs) {
  uint64_t z = fs->tmp_seed + ++fs->tmp_count * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Creates the temporary file, writes, syncs and gives it mode 0644; the fd
 * stays open (*fdout) so its mode can still be changed without a lookup.
 * On failure nothing is left behind. */
static sb_code write_tmp(rootfs *fs, int dirfd, char tmp[32], const char *data, size_t len,
                         int *fdout, sb_err *e) {
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
    snprintf(tmp, 32, TMP_PREFIX "%016llx", (unsigned long long)next_tmp(fs));
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return fail_errno_now(e);
  }
  if (fd < 0) return sb_fail(e, SB_EIO, "cannot create a temporary file");
  sb_code c = SB_OK;
  for (size_t off = 0; off < len && c == SB_OK;) {
    ssize_t n = write(fd, data + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) c = fail_errno_now(e);
    else off += (size_t)n;
  }
  /* durable before visible: a crash leaves the old or the new file, whole */
  if (c == SB_OK && fsync(fd) != 0) c = fail_errno_now(e);
  if (c == SB_OK && fchmod(fd, 0644) != 0) c = fail_errno_now(e);
  if (c != SB_OK) {
    unlinkat(dirfd, tmp, 0);
    close(fd);
    return c;
  }
  *fdout = fd;
  return SB_OK;
}

/* What stands at the target decides whether and how it is replaced. */
static sb_code check_target(sb_sandbox *sb, int dirfd, const char *name, size_t len,
                            const sb_write_opts *o, struct stat *st, bool *exists, sb_err *e) {
  *exists = fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!*exists && errno != ENOENT) return fail_errno_now(e);
  if (*exists && S_ISDIR(st->st_mode)) return sb_fail(e, SB_EISDIR, NULL);
  if (*exists && S_ISLNK(st->st_mode))
    return sb_fail(e, SB_ELOOP, "refusing to write through a symbolic link");
  if (*exists && !S_ISREG(st->st_mode)) return type_error(st, e);
  if (*exists && !o->overwrite) return sb_fail(e, SB_EEXIST, NULL);
  return disk_check(sb, (int64_t)len - (*exists ? (int64_t)st->st_size : 0), e);
}

/* Atomic replace: the content goes to a temporary file in the same
 * directory, then takes the name with one rename. The common case, a new
 * name, is tried first with RENAME_NOREPLACE and no stat before it; only
 * when something is already there is it examined and, if allowed, replaced
 * with its mode kept. A disk quota needs the size delta first. */
static sb_code rf_write(sb_sandbox *sb, const sb_path *p, const char *data, size_t len,
                        const sb_write_opts *o, sb_err *e) {
  rootfs *fs = FS(sb);
  sb_code c;
  if ((c = need_write(fs, e)) != SB_OK) return c;
  if (p->must_dir) return sb_fail(e, SB_EISDIR, NULL);
  view *v = &fs->views[0];
  int dirfd = open_parent(v, p, o->parents, e);
  if (dirfd < 0) return e->code;
  char name[SB_NAME_MAX + 1], tmp[32];
  last_name(p, name);
  struct stat st = {.st_mode = S_IFREG | 0644};
  bool exists = false, placed = false, plain = false;
  int tfd = -1;
  c = recheck(sb, v, dirfd, name, SB_ACC_WRITE, SB_KIND_FILE, e);
  if (c == SB_OK && fs->max_disk != SB_UNLIMITED)
    c = check_target(sb, dirfd, name, len, o, &st, &exists, e);
  if (c == SB_OK) c = write_tmp(fs, dirfd, tmp, data, len, &tfd, e);
  if (c == SB_OK && !exists) {
    placed = renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0;
    if (placed) {
      disk_apply(fs, (int64_t)len);
    } else if (errno == EEXIST || (errno == EINVAL && o->overwrite)) {
      plain = errno == EINVAL; /* a filesystem without RENAME_NOREPLACE */
      c = check_target(sb, dirfd, name, len, o, &st, &exists, e);
      if (c == SB_OK && !exists && !plain) c = sb_fail(e, SB_EAGAIN, "the target changed during the write");
    } else {
      c = fail_errno_now(e);
    }
  }
  if (c == SB_OK && !placed) { /* a regular file that may be overwritten (or none, plain) */
    if ((st.st_mode & 07777) != 0644 && fchmod(tfd, st.st_mode & 07777) != 0)
      c = fail_errno_now(e);
    else if (renameat(dirfd, tmp, dirfd, name) != 0)
      c = fail_errno_now(e);
    else
      disk_apply(fs, (int64_t)len - (exists ? (int64_t)st.st_size : 0));
  }
  if (tfd >= 0) {
    if (c != SB_OK) unlinkat(dirfd, tmp, 0);
    close(tfd);
  }
  close(dirfd);
  return c;
}

static sb_code rf_mkdir(sb_sandbox *sb, const sb_path *p, bool parents, sb_err *e) {
  rootfs *fs = FS(sb);
  sb_code c;
  if ((c = need_write(fs, e)) != SB_OK) return c;
  view *v = &fs->views[0];
  int dirfd = open_parent(v, p, parents, e);
  if (dirfd < 0) return e->code;
  char name[SB_NAME_MAX + 1];
  last_name(p, name);
  c = recheck(sb, v, dirfd, name, SB_ACC_MODIFY, SB_KIND_DIR, e);
  if (c == SB_OK && mkdirat(dirfd, name, 0755) != 0) {
    struct stat st;
    if (errno == EEXIST && parents && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode))
      c = SB_OK;
    else
      c = fail_errno_now(e);
  }
  close(dirfd);
  return c;
}

static sb_code rf_remove(sb_sandbox *sb, const sb_path *p, bool recursive, sb_err *e) {
  rootfs *fs = FS(sb);
  sb_code c;
  if ((c = need_write(fs, e)) != SB_OK) return c;
  view *v = &fs->views[0];
  int dirfd = open_parent(v, p, false, e);
  if (dirfd < 0) return e->code;
  char name[SB_NAME_MAX + 1];
  last_name(p, name);
  /* Without rules or a disk quota a file needs no stat first: unlink it, and
   * only a directory (EISDIR) takes the long way. */
  if (!policy_active(&sb->policy) && fs->max_disk == SB_UNLIMITED && !p->must_dir) {
    c = unlinkat(dirfd, name, 0) == 0 ? SB_OK : errno == EISDIR ? SB_EISDIR : fail_errno_now(e);
    if (c != SB_EISDIR) {
      close(dirfd);
      return c;
    }
    c = SB_OK;
  }
  struct stat st;
  uint64_t freed = 0;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) c = fail_errno_now(e);
  else if (p->must_dir && !S_ISDIR(st.st_mode)) c = sb_fail(e, SB_ENOTDIR, NULL);
  else c = recheck(sb, v, dirfd, name, SB_ACC_MODIFY,
                   S_ISDIR(st.st_mode) ? SB_KIND_DIR : SB_KIND_FILE, e);
  if (c == SB_OK && S_ISDIR(st.st_mode)) {
    if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0) {
      if ((errno == ENOTEMPTY || errno == EEXIST) && !recursive)
        c = sb_fail(e, SB_ENOTEMPTY, "directory not empty (use recursive = true)");
      else if (errno == ENOTEMPTY || errno == EEXIST) {
        int err = sb_tree_remove(dirfd, name, &freed);
        if (err) c = err == ELOOP ? sb_fail(e, SB_EIO, "directory tree too deep to remove")
                                  : fail_neg(e, -err);
      } else {
        c = fail_errno_now(e);
      }
    }
  } else if (c == SB_OK) {
    if (unlinkat(dirfd, name, 0) != 0) c = fail_errno_now(e);
    else if (S_ISREG(st.st_mode)) freed = (uint64_t)st.st_size;
  }
  disk_apply(fs, -(int64_t)freed);
  close(dirfd);
  return c;
}

static sb_code rf_rename(sb_sandbox *sb, const sb_path *from, const sb_path *to,
                         bool overwrite, sb_err *e) {
  rootfs *fs = FS(sb);
  sb_code c;
  if ((c = need_write(fs, e)) != SB_OK) return c;
  view *v = &fs->views[0];
  int fd1 = open_parent(v, from, false, e);
  if (fd1 < 0) return e->code;
  int fd2 = open_parent(v, to, false, e);
  if (fd2 < 0) {
    close(fd1);
    return e->code;
  }
  char n1[SB_NAME_MAX + 1], n2[SB_NAME_MAX + 1];
  last_name(from, n1);
  last_name(to, n2);
  struct stat s1, s2, d1, d2;
  bool dst = false;
  if (fstatat(fd1, n1, &s1, AT_SYMLINK_NOFOLLOW) != 0) c = fail_errno_now(e);
  else if (from->must_dir && !S_ISDIR(s1.st_mode)) c = sb_fail(e, SB_ENOTDIR, NULL);
  else if (to->must_dir && !S_ISDIR(s1.st_mode)) c = sb_fail(e, SB_ENOTDIR, NULL);
  else if (fstat(fd1, &d1) != 0 || fstat(fd2, &d2) != 0) c = fail_errno_now(e);
  else {
    int kind = S_ISDIR(s1.st_mode) ? SB_KIND_DIR : SB_KIND_FILE;
    c = recheck(sb, v, fd1, n1, SB_ACC_MODIFY, kind, e);
    if (c == SB_OK) c = recheck(sb, v, fd2, n2, SB_ACC_MODIFY, kind, e);
    dst = fstatat(fd2, n2, &s2, AT_SYMLINK_NOFOLLOW) == 0;
  }
  bool same = c == SB_OK && d1.st_dev == d2.st_dev && d1.st_ino == d2.st_ino && strcmp(n1, n2) == 0;
  if (c == SB_OK && !same) {
    int r = overwrite ? renameat(fd1, n1, fd2, n2)
                      : renameat2(fd1, n1, fd2, n2, RENAME_NOREPLACE);
    if (r != 0) {
      if (errno == EINVAL) c = sb_fail(e, SB_EINVAL, "cannot move a directory into itself");
      else if (errno == EEXIST && overwrite) c = sb_fail(e, SB_ENOTEMPTY, NULL);
      else c = fail_errno_now(e);
    } else if (dst && S_ISREG(s2.st_mode)) {
      disk_apply(fs, -(int64_t)s2.st_size);
    }
  }
  close(fd1);
  close(fd2);
  return c;
}

/* ---- walk (glob, grep, snapshot) ---------------------------------------- */

typedef struct rref {
  int dirfd;
  const char *name;
  const view *v;
} rref;

typedef struct rwalk {
  sb_sandbox *sb;
  size_t vi;
  sb_walk_fn fn;
  void *ud;
  sb_err *e;
  char rel[SB_PATH_MAX + 1];
} rwalk;

static bool shadowed(rwalk *w, size_t rlen) {
  rootfs *fs = FS(w->sb);
  for (size_t j = 0; j < w->vi; j++) {
    int fd = sb_resolve(&fs->views[j].res, w->rel, rlen, O_PATH, 0);
    if (fd >= 0) {
      close(fd);
      return true;
    }
  }
  return false;
}

/* Visit the entries of dirfd in name order, descending into directories
 * through O_NOFOLLOW opens from the held parent. */
static int walk_level(rwalk *w, int dirfd, size_t rlen, int depth) {
  rootfs *fs = FS(w->sb);
  if (depth > WALK_DEPTH_MAX) return SB_WALK_CONTINUE;
  sb_dirlist lv = {0};
  if (list_fd(w->sb, dirfd, &lv, w->e) != SB_OK) {
    sb_dirlist_free(w->sb, &lv);
    if (w->e->code == SB_ENOSPC) return SB_WALK_STOP;
    w->e->code = SB_OK; /* an unreadable directory: nothing to visit */
    return SB_WALK_CONTINUE;
  }
  fix_names(&lv, 0);
  sb_dirlist_sort(&lv);
  int r = SB_WALK_CONTINUE;
  for (size_t i = 0; i < lv.n && r != SB_WALK_STOP; i++) {
    const sb_dirent *ent = &lv.v[i];
    size_t len = rlen + (rlen ? 1 : 0) + ent->namelen;
    if (len > SB_PATH_MAX) continue;
    if (rlen) w->rel[rlen] = '/';
    memcpy(w->rel + len - ent->namelen, ent->name, ent->namelen);
    w->rel[len] = '\0';
    bool hide = w->vi > 0 && shadowed(w, len);
    if (hide && ent->type != SB_T_DIR) continue;
    rref ref = {dirfd, ent->name, &fs->views[w->vi]};
    r = hide ? SB_WALK_CONTINUE : w->fn(w->ud, w->rel, len, ent, &ref);
    if (r == SB_WALK_CONTINUE && ent->type == SB_T_DIR) {
      int sub = openat(dirfd, ent->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        r = walk_level(w, sub, len, depth + 1);
        close(sub);
      }
    } else if (r == SB_WALK_SKIP) {
      r = SB_WALK_CONTINUE;
    }
  }
  sb_dirlist_free(w->sb, &lv);
  return r;
}

static sb_code rf_walk_view(sb_sandbox *sb, size_t vi, const sb_path *p, sb_walk_fn fn,
                            void *ud, sb_err *e) {
  rootfs *fs = FS(sb);
  view *v = &fs->views[vi];
  rwalk *w = sb_malloc(&sb->mem, sizeof *w);
  if (!w) return sb_fail(e, SB_ENOSPC, "out of memory");
  *w = (rwalk){.sb = sb, .vi = vi, .fn = fn, .ud = ud, .e = e};
  e->code = SB_OK;
  size_t rlen = sb_path_clean(p, w->rel);
  int fd = sb_resolve(&v->res, p->buf, p->len, O_PATH | (p->must_dir ? O_DIRECTORY : 0), 0);
  struct stat st;
  if (fd >= 0 && policy_active(&sb->policy)) {
    /* The start may lie behind a symlink: name everything below it by
     * where it really is, so rules judge real paths. */
    long n = sb_resolve_relpath(&v->res, fd, w->rel, sizeof w->rel);
    if (n < 0) {
      close(fd);
      fd = n == -EXDEV ? (int)n : -EACCES;
    } else {
      rlen = (size_t)n;
    }
  }
  if (fd < 0) {
    fail_neg(e, fd);
  } else if (fstat(fd, &st) != 0) {
    fail_errno_now(e);
  } else if (S_ISDIR(st.st_mode)) {
    if (recheck(sb, v, fd, NULL, SB_ACC_LIST, SB_KIND_DIR, e) == SB_OK) walk_level(w, fd, rlen, 0);
  } else if (p->ncomp > 0) { /* a single file: visit it through its parent */
    int dirfd = open_parent(v, p, false, e);
    if (dirfd >= 0) {
      char name[SB_NAME_MAX + 1];
      last_name(p, name);
      sb_stat s;
      fill_stat(&st, &s);
      sb_dirent ent = {name, strlen(name), s.type, s.size};
      rref ref = {dirfd, name, v};
      fn(ud, w->rel, rlen, &ent, &ref);
      close(dirfd);
    }
  }
  if (fd >= 0) close(fd);
  sb_free(&sb->mem, w, sizeof *w);
  return e->code;
}

static sb_code rf_walk(sb_sandbox *sb, const sb_path *p, sb_walk_fn fn, void *ud, sb_err *e) {
  rootfs *fs = FS(sb);
  bool found = false;
  sb_code first = SB_ENOENT;
  for (size_t i = 0; i < fs->nviews; i++) {
    sb_code c = rf_walk_view(sb, i, p, fn, ud, e);
    if (c == SB_ENOENT) continue;
    if (c != SB_OK) {
      if (found) continue;
      return c;
    }
    found = true;
  }
  if (!found) return sb_fail(e, first, NULL);
  e->code = SB_OK;
  return SB_OK;
}

static sb_code rf_read_ref(sb_sandbox *sb, const void *ref, sb_view *out, sb_err *e) {
  const rref *r = ref;
  if (!r->v->content) return sb_fail(e, SB_EACCES, "the sandbox root is write-only (mode \"w\")");
  int fd = openat(r->dirfd, r->name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return fail_errno_now(e);
  struct stat st;
  sb_code c = SB_OK;
  if (fstat(fd, &st) != 0) c = fail_errno_now(e);
  else if (!S_ISREG(st.st_mode)) c = type_error(&st, e);
  else if ((c = sb_policy_read_size(&sb->policy, (uint64_t)st.st_size, e)) == SB_OK)
    c = read_fd(sb, fd, (uint64_t)st.st_size, out, e);
  close(fd);
  return c;
}

/* ---- lifecycle ---------------------------------------------------------- */

static void rf_close(sb_sandbox *sb) {
  rootfs *fs = FS(sb);
  if (!fs) return;
  for (size_t i = 0; i < fs->nviews; i++) close(fs->views[i].res.rootfd);
  sb_free(&sb->mem, fs->views, fs->nviews * sizeof *fs->views);
  sb_free(&sb->mem, fs, sizeof *fs);
  sb->impl = NULL;
}

sb_code sb_rootfs_open(sb_sandbox *sb, const sb_rootfs_opts *o, sb_err *e) {
  size_t nviews = 1 + o->nroots;
  rootfs *fs = sb_malloc(&sb->mem, sizeof *fs);
  view *views = sb_malloc(&sb->mem, nviews * sizeof *views);
  if (!fs || !views) {
    sb_free(&sb->mem, fs, sizeof *fs);
    sb_free(&sb->mem, views, nviews * sizeof *views);
    close(o->rootfd);
    for (size_t i = 0; i < o->nroots; i++) close(o->roots[i]);
    return sb_fail(e, SB_ENOSPC, "out of memory");
  }
  *fs = (rootfs){.views = views, .nviews = nviews, .can_write = o->can_write,
                 .max_disk = o->max_disk_usage, .disk_dirty = true};
  if (getrandom(&fs->tmp_seed, sizeof fs->tmp_seed, GRND_NONBLOCK) != sizeof fs->tmp_seed)
    fs->tmp_seed = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)fs; /* still unique per process */
  int rc = 0;
  for (size_t i = 0; i < nviews; i++) {
    int fd = i == 0 ? o->rootfd : o->roots[i - 1];
    if (rc == 0) rc = sb_resolver_init(&views[i].res, fd, o->resolver);
    views[i].res.rootfd = fd;
    views[i].content = i > 0 || o->can_read;
  }
  sb->impl = fs;
  if (rc != 0) {
    rf_close(sb);
    return rc == -ENOSYS ? sb_fail(e, SB_ENOTSUP, "openat2 is not available on this kernel")
                         : sb_fail(e, SB_EINVAL, "resolver must be \"auto\", \"openat2\" or \"fallback\"");
  }
  return SB_OK;
}

const char *sb_rootfs_resolver(sb_sandbox *sb) {
  return FS(sb) ? sb_resolver_name(&FS(sb)->views[0].res) : "closed";
}

int sb_rootfs_rootfd(sb_sandbox *sb) { return FS(sb) ? FS(sb)->views[0].res.rootfd : -1; }

size_t sb_rootfs_read_roots(sb_sandbox *sb, int *fds, size_t max) {
  rootfs *fs = FS(sb);
  size_t n = 0;
  for (size_t i = 1; fs && i < fs->nviews && n < max; i++) fds[n++] = fs->views[i].res.rootfd;
  return n;
}

void sb_rootfs_mark_dirty(sb_sandbox *sb) {
  if (FS(sb)) FS(sb)->disk_dirty = true;
}

int sb_rootfs_open_dir(sb_sandbox *sb, const sb_path *p, sb_err *e) {
  rootfs *fs = FS(sb);
  int fd = sb_resolve(&fs->views[0].res, p->buf, p->len, O_PATH | O_DIRECTORY, 0);
  if (fd < 0) fail_neg(e, fd);
  return fd;
}

const sb_backend sb_rootfs_backend = {
    .kind = "container",
    .read = rf_read,
    .write = rf_write,
    .stat = rf_stat,
    .readdir = rf_readdir,
    .mkdir = rf_mkdir,
    .remove = rf_remove,
    .rename = rf_rename,
    .walk = rf_walk,
    .read_ref = rf_read_ref,
    .close = rf_close,
};
