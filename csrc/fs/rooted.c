#include "fs/rooted.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/dirlist.h"
#include "plat/dir.h"
#include "plat/random.h"
#include "plat/stat.h"

#define TMP_PREFIX ".fs-tmp-"

sb_code sb_rt_fail(sb_err *e, int neg) {
  switch (-neg) {
  case EXDEV: return sb_fail(e, SB_EESCAPE, "path escapes the sandbox (through '..' or a symbolic link)");
  case ENXIO:
  case ENODEV: return sb_fail(e, SB_ENOTSUP, "not a regular file");
  case EMFILE:
  case ENFILE: return sb_fail(e, SB_EIO, "too many open files");
  default: return sb_fail_errno(e, -neg);
  }
}

sb_code sb_rt_fail_errno(sb_err *e) { return sb_rt_fail(e, -errno); }

sb_code sb_rt_type_error(const struct stat *st, sb_err *e) {
  if (S_ISDIR(st->st_mode)) return sb_fail(e, SB_EISDIR, NULL);
  return sb_fail(e, SB_ENOTSUP, "not a regular file (a FIFO, socket or device)");
}

bool sb_rt_is_tmp(const char *name) { return strncmp(name, TMP_PREFIX, sizeof TMP_PREFIX - 1) == 0; }

/* Read an open regular file of about size_hint bytes (its fstat size) into
 * fs->scratch (NUL-terminated), under the read limit even if it grows
 * meanwhile; a file that still has size_hint bytes is read no further. */
sb_code sb_rt_read_fd(sb_fs *fs, int fd, uint64_t size_hint, sb_bytes *out, sb_err *e) {
  sb_buf *b = &fs->scratch;
  uint64_t max = fs->policy->max_read_bytes;
  b->len = 0;
  if (sb_buf_reserve(&fs->mem, b, (size_t)(size_hint < max ? size_hint : max) + 1) != 0) return sb_fail_oom(e);
  for (;;) {
    if (b->len > max) return sb_policy_read_size(fs->policy, b->len, e); /* grew while read */
    if (b->cap - b->len < 2 && sb_buf_reserve(&fs->mem, b, b->len + 4096 > max + 2 ? 2 : 4096) != 0)
      return sb_fail_oom(e);
    ssize_t n = read(fd, b->p + b->len, b->cap - b->len - 1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return sb_rt_fail_errno(e);
    }
    if (n == 0) break;
    b->len += (size_t)n;
    /* all that fstat said it held: the file as of its open, without the
     * read that would only say end-of-file (one system call in five) */
    if (size_hint && b->len == size_hint) break;
  }
  b->p[b->len] = '\0';
  out->p = b->p;
  out->len = b->len;
  return SB_OK;
}

void sb_rt_fill_stat(const struct stat *st, sb_stat *out) {
  out->type = S_ISREG(st->st_mode) ? SB_T_FILE
      : S_ISDIR(st->st_mode)       ? SB_T_DIR
      : S_ISLNK(st->st_mode)       ? SB_T_SYMLINK
                                   : SB_T_OTHER;
  /* a link's size is the length of its text, as lstat says */
  out->size = S_ISREG(st->st_mode) || S_ISLNK(st->st_mode) ? (uint64_t)st->st_size : 0;
  out->mtime = (double)SB_ST_MTIM(st).tv_sec + SB_ST_MTIM(st).tv_nsec / 1e9;
  out->mode = st->st_mode & 07777;
}

/* One entry of a listing (names "." and ".." and our temporary files
 * left out); false on out of memory. */
static bool list_entry(sb_fs *fs, int dirfd, const char *nm, unsigned char dtype, sb_dirlist *dl, unsigned flags) {
  bool sizes = flags & SB_RT_SIZES;
  if ((nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0'))) || sb_rt_is_tmp(nm)) return true;
  sb_dirent ent = {.namelen = strlen(nm), .type = SB_T_DIR, .size = 0};
  if (!sizes && (dtype == DT_REG || dtype == DT_LNK)) {
    ent.type = dtype == DT_REG ? SB_T_FILE : SB_T_SYMLINK;
  } else if (dtype != DT_DIR) {
    struct stat st;
    if (fstatat(dirfd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0) return true; /* vanished */
    if ((flags & SB_RT_WHITEOUTS) && S_ISCHR(st.st_mode) && st.st_rdev == 0) {
      ent.type = SB_T_WHITEOUT;
      goto push;
    }
    sb_stat s;
    sb_rt_fill_stat(&st, &s);
    ent.type = s.type;
    ent.size = s.size;
  }
push:
  ent.name_off = dl->names.len; /* the arena may still move */
  return sb_buf_append(&fs->mem, &dl->names, nm, ent.namelen + 1) == 0 && sb_dirlist_push(&fs->mem, dl, &ent) == 0;
}

/* The entries of dirfd; with `sizes` every non-directory is stat'ed (else
 * the type comes from d_type where the file system gives it). A `readable`
 * dirfd (opened O_RDONLY, at its start) is read as it is; an O_PATH one is
 * opened again. */
typedef struct list_ctx {
  sb_fs *fs;
  int dirfd;
  sb_dirlist *dl;
  unsigned flags;
} list_ctx;

static bool list_one(void *ud, const char *name, unsigned char type) {
  list_ctx *x = ud;
  return list_entry(x->fs, x->dirfd, name, type, x->dl, x->flags);
}

sb_code sb_rt_list(sb_fs *fs, int dirfd, sb_dirlist *dl, unsigned flags, sb_err *e) {
  bool readable = flags & SB_RT_READABLE;
  int lfd = readable ? dirfd : openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lfd < 0) return sb_rt_fail_errno(e);
  list_ctx x = {fs, dirfd, dl, flags};
  int r = sb_dir_each(lfd, list_one, &x);
  if (!readable) close(lfd);
  return r == 0 ? SB_OK : r == 1 ? sb_fail_oom(e) : sb_rt_fail(e, r);
}

/* splitmix64: tmp names that are unpredictable from outside (seeded once
 * from the kernel) without a system call per write. */
static uint64_t next_tmp(sb_tmpnames *t) {
  uint64_t z = t->seed + ++t->count * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Creates the temporary file, writes, syncs and gives it mode 0644; the fd
 * stays open (*fdout) so its mode can still be changed without a lookup.
 * On failure nothing is left behind. */
sb_code sb_rt_write_tmp(sb_tmpnames *t, int dirfd, char tmp[32], const char *data, size_t len, int *fdout, sb_err *e) {
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
    snprintf(tmp, 32, TMP_PREFIX "%016llx", (unsigned long long)next_tmp(t));
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return sb_rt_fail_errno(e);
  }
  if (fd < 0) return sb_fail(e, SB_EIO, "cannot create a temporary file");
  sb_code c = SB_OK;
  for (size_t off = 0; off < len && c == SB_OK;) {
    ssize_t n = write(fd, data + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) c = sb_rt_fail_errno(e);
    else off += (size_t)n;
  }
  /* durable before visible: a crash leaves the old or the new file, whole */
  if (c == SB_OK && fsync(fd) != 0) c = sb_rt_fail_errno(e);
  if (c == SB_OK && fchmod(fd, 0644) != 0) c = sb_rt_fail_errno(e);
  if (c != SB_OK) {
    unlinkat(dirfd, tmp, 0);
    close(fd);
    return c;
  }
  *fdout = fd;
  return SB_OK;
}

void sb_rt_tmp_init(sb_tmpnames *t, const void *salt) {
  if (!sb_random(&t->seed, sizeof t->seed))
    t->seed = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)salt; /* still unique per process */
  t->count = 0;
}

int sb_rt_walk_begin(sb_fs *fs, sb_code listed, sb_dirlist *lv, unsigned flags, sb_walk_fn fn, void *ud, char *rel,
                     size_t rlen, sb_err *e) {
  if (listed != SB_OK) {
    sb_dirlist_free(&fs->mem, lv);
    if (e->code == SB_ENOSPC) return SB_WALK_STOP;
    e->code = SB_OK; /* an unreadable directory: nothing to visit */
    return SB_WALK_SKIP;
  }
  sb_dirlist_fix_names(lv, 0);
  sb_dirlist_sort(lv);
  if (flags & SB_WALK_ENTER) {
    sb_dirent enter = {.type = SB_T_ENTER};
    rel[rlen] = '\0';
    if (fn(ud, rel, rlen, &enter, lv) == SB_WALK_STOP) return SB_WALK_STOP;
  }
  return SB_WALK_CONTINUE;
}

size_t sb_rt_walk_name(char *rel, size_t rlen, const sb_dirent *ent) {
  size_t len = rlen + (rlen ? 1 : 0) + ent->namelen;
  if (len > SB_PATH_MAX) return 0;
  if (rlen) rel[rlen] = '/';
  memcpy(rel + len - ent->namelen, ent->name, ent->namelen);
  rel[len] = '\0';
  return len;
}

sb_code sb_disk_check(sb_disk *d, sb_fs *fs, sb_disk_count_fn count, int64_t dbytes, sb_err *e) {
  if (d->max == SB_UNLIMITED) return SB_OK;
  if (d->dirty) {
    uint64_t used = 0;
    sb_code c = count(fs, &used, e);
    if (c != SB_OK) return c;
    d->used = used;
    d->dirty = false;
  }
  sb_quota q = {.max_bytes = d->max, .used_bytes = d->used, .max_nodes = SB_UNLIMITED};
  sb_code c = sb_quota_check(&q, dbytes, 0, e);
  if (c == SB_ENOSPC)
    sb_failf(e, SB_ENOSPC, "max_disk_usage (%llu bytes) would be exceeded", (unsigned long long)d->max);
  return c;
}

void sb_disk_apply(sb_disk *d, int64_t dbytes) {
  if (d->max != SB_UNLIMITED && !d->dirty) d->used = (uint64_t)((int64_t)d->used + dbytes);
}

int sb_rt_walk_level(sb_fs *fs, sb_code listed, sb_dirlist *lv, unsigned flags, sb_walk_fn fn, void *ud, char *rel,
                     size_t rlen, sb_err *e, sb_rt_visit_fn visit, void *self) {
  int r = sb_rt_walk_begin(fs, listed, lv, flags, fn, ud, rel, rlen, e);
  if (listed != SB_OK) return r == SB_WALK_SKIP ? SB_WALK_CONTINUE : r; /* lv is freed already */
  for (size_t i = 0; i < lv->n && r != SB_WALK_STOP; i++) {
    size_t len = sb_rt_walk_name(rel, rlen, &lv->v[i]);
    if (!len) continue;
    r = visit(self, &lv->v[i], len);
    if (r == SB_WALK_SKIP) r = SB_WALK_CONTINUE;
  }
  sb_dirlist_free(&fs->mem, lv);
  return r;
}
