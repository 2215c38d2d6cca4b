/* The ContainerSandbox's read side (fs/container_impl.h): reads, stats,
 * links and listings, from the first layer that has the path; an
 * overlay's untouched reads straight from its base. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/container_impl.h"
#include "fs/dirlist.h"
#include "fs/resolver.h"
#include "fs/rooted.h"
#include "plat/fd.h"

/* Read an opened file of layer v: a regular file whose contents this layer
 * lets us read, under the rules (rechecked on its real path when `rules`)
 * and the size limit. Closes fd. */
static sb_code read_opened(sb_fs *fs, const layer *v, int fd, bool rules, sb_bytes *out, sb_err *e) {
  struct stat st;
  sb_code c = SB_OK;
  if (fstat(fd, &st) != 0) c = sb_rt_fail_errno(e);
  else if (!S_ISREG(st.st_mode)) c = sb_rt_type_error(&st, e);
  else if (!v->content) c = sb_fail(e, SB_EACCES, "the sandbox root is write-only (mode \"w\")");
  else if ((!rules || (c = sb_ct_recheck(fs, v, fd, NULL, SB_ACC_READ, SB_KIND_FILE, e)) == SB_OK) &&
           (c = sb_policy_read_size(fs->policy, (uint64_t)st.st_size, e)) == SB_OK)
    c = sb_rt_read_fd(fs, fd, (uint64_t)st.st_size, out, e);
  close(fd);
  return c;
}

static sb_code read_in(sb_fs *fs, const layer *v, const sb_path *p, void *ud, sb_err *e) {
  int fd = sb_ct_open_in(v, p, O_RDONLY | O_NONBLOCK | O_NOCTTY, true);
  if (fd < 0) return sb_rt_fail(e, fd);
  return read_opened(fs, v, fd, true, ud, e);
}

typedef struct stat_ud {
  struct stat st;
  bool follow;
} stat_ud;

/* A final component not followed (a link itself): stat'ed in its
 * directory, as an fd of the link itself needs Linux's O_PATH. */
static sb_code lstat_in(sb_fs *fs, const layer *v, const sb_path *p, struct stat *st, sb_err *e) {
  size_t nl;
  const char *comp = sb_path_comp(p, p->ncomp - 1, &nl);
  char name[SB_NAME_MAX + 1];
  memcpy(name, comp, nl);
  name[nl] = '\0';
  int dirfd = sb_ct_open_parent(v, p, false, e);
  if (dirfd < 0) return e->code;
  sb_code c = fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 ? SB_OK : sb_rt_fail_errno(e);
  if (c == SB_OK)
    c = sb_ct_recheck(fs, v, dirfd, name, SB_ACC_LIST, S_ISDIR(st->st_mode) ? SB_KIND_DIR : SB_KIND_FILE, e);
  close(dirfd);
  return c;
}

static sb_code stat_in(sb_fs *fs, const layer *v, const sb_path *p, void *out, sb_err *e) {
  stat_ud *u = out;
  if (!u->follow && !p->must_dir && p->ncomp > 0 && !sb_path_names_no_entry(p)) return lstat_in(fs, v, p, &u->st, e);
  int fd = sb_ct_open_in(v, p, SB_O_PATH, u->follow);
  if (fd < 0) return sb_rt_fail(e, fd);
  sb_code c = fstat(fd, &u->st) == 0 ? SB_OK : sb_rt_fail_errno(e);
  if (c == SB_OK)
    c = sb_ct_recheck(fs, v, fd, NULL, SB_ACC_LIST, S_ISDIR(u->st.st_mode) ? SB_KIND_DIR : SB_KIND_FILE, e);
  close(fd);
  return c;
}

/* Reads and stats: the first layer where p exists answers (base_dir, then
 * the read roots in order). */
static sb_code first_layer(sb_fs *fs, const sb_path *p,
                           sb_code (*in)(sb_fs *, const layer *, const sb_path *, void *, sb_err *), void *out,
                           sb_err *e) {
  container *ct = CT(fs);
  sb_code c = SB_ENOENT;
  for (size_t i = 0; i < ct->nlayers && c == SB_ENOENT; i++) c = in(fs, &ct->layers[i], p, out, e);
  return c;
}

/* An overlay's read of a file the upper layer has nothing of — no entry,
 * whiteout or opaque directory at the path's first component — is the
 * base's file: opened there directly, without the overlay's double lookup
 * and second open. Only with no link on the way (a link may lead where the
 * upper layer has something) and no ".."; whatever else happens (a miss,
 * an error) the merged view answers. A command that copies the file up
 * right after the check writes its copy, never the base's bytes read here. */
/* The upper layer's root has no `name`: known (a look-up saved), or noted
 * as found while nothing outside can change the layer. The check is one
 * system call against a read's four, so it is worth its cache. */
static bool absent_known(sb_fs *fs, const char *name) {
  const sb_ct_absent *a = &CT(fs)->absent;
  if (fs->outside) return false;
  for (unsigned i = 0; i < a->n; i++)
    if (strcmp(a->name[i], name) == 0) return true;
  return false;
}

static void absent_note(sb_fs *fs, const char *name) {
  sb_ct_absent *a = &CT(fs)->absent;
  if (fs->outside) return;
  unsigned i = a->n < SB_CT_ABSENT_MAX ? a->n++ : a->next++ % SB_CT_ABSENT_MAX;
  strcpy(a->name[i], name);
}

static bool read_untouched(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_code *c, sb_err *e) {
  container *ct = CT(fs);
  if (ct->base_fd < 0 || p->ncomp == 0 || p->dotdot || p->must_dir) return false;
  size_t n;
  const char *c0 = sb_path_comp(p, 0, &n);
  char first[SB_NAME_MAX + 1];
  memcpy(first, c0, n);
  first[n] = '\0';
  if (!absent_known(fs, first)) {
    struct stat st;
    if (fstatat(ct->usage_fd, first, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) return false;
    absent_note(fs, first);
  }
  int fd = sb_resolve_nolinks(&ct->layers[0].res, ct->base_fd, p->buf, p->len, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  /* no link followed: the path the rules saw is where the file is */
  *c = read_opened(fs, &ct->layers[0], fd, false, out, e);
  return true;
}

sb_code sb_ct_read(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e) {
  sb_code c;
  if (read_untouched(fs, p, out, &c, e)) return c;
  return first_layer(fs, p, read_in, out, e);
}

sb_code sb_ct_stat(sb_fs *fs, const sb_path *p, bool follow, sb_stat *out, sb_err *e) {
  stat_ud u = {.follow = follow};
  sb_code c = first_layer(fs, p, stat_in, &u, e);
  if (c == SB_OK) sb_rt_fill_stat(&u.st, out);
  return c;
}

/* The real root-relative path of p in layer v (see sb_backend.realpath). */
static sb_code realpath_in(sb_fs *fs, const layer *v, const sb_path *p, void *out, sb_err *e) {
  sb_buf *b = &fs->scratch;
  b->len = 0;
  if (sb_buf_reserve(&fs->mem, b, 2 * SB_PATH_MAX + 2) != 0) return sb_fail_oom(e);
  bool follow = *(bool *)out;
  bool whole = follow || p->ncomp == 0 || sb_path_names_no_entry(p);
  int fd = whole ? sb_ct_open_in(v, p, SB_O_PATH, true) : sb_ct_open_parent(v, p, false, e);
  if (fd < 0) return whole ? sb_rt_fail(e, fd) : e->code;
  long n = sb_resolve_relpath(&v->res, fd, b->p, 2 * SB_PATH_MAX + 2 - SB_NAME_MAX - 2);
  close(fd);
  if (n < 0) return sb_rt_fail(e, (int)n);
  if (!whole) { /* the parent's real path, and the name */
    size_t nl;
    const char *name = sb_path_comp(p, p->ncomp - 1, &nl);
    if (n) b->p[n++] = '/';
    memcpy(b->p + n, name, nl);
    n += (long)nl;
    b->p[n] = '\0';
  }
  b->len = (size_t)n;
  return SB_OK;
}

sb_code sb_ct_realpath(sb_fs *fs, const sb_path *p, bool follow, sb_bytes *out, sb_err *e) {
  sb_code c = first_layer(fs, p, realpath_in, &follow, e);
  if (c == SB_OK) {
    out->p = fs->scratch.p;
    out->len = fs->scratch.len;
  }
  return c;
}

static sb_code readlink_in(sb_fs *fs, const layer *v, const sb_path *p, void *out, sb_err *e) {
  (void)out;
  if (p->ncomp == 0 || sb_path_names_no_entry(p)) return sb_fail(e, SB_EINVAL, "not a symbolic link");
  int dirfd = sb_ct_open_parent(v, p, false, e);
  if (dirfd < 0) return e->code;
  char name[SB_NAME_MAX + 1];
  sb_ct_last_name(p, name);
  sb_buf *b = &fs->scratch;
  sb_code c = SB_OK;
  b->len = 0;
  if (sb_buf_reserve(&fs->mem, b, SB_PATH_MAX + 2) != 0) c = sb_fail_oom(e);
  ssize_t n = c == SB_OK ? readlinkat(dirfd, name, b->p, SB_PATH_MAX + 1) : -1;
  if (c == SB_OK && n < 0) c = errno == EINVAL ? sb_fail(e, SB_EINVAL, "not a symbolic link") : sb_rt_fail_errno(e);
  else if (c == SB_OK && n > SB_PATH_MAX) c = sb_fail(e, SB_ENAMETOOLONG, "link target too long");
  else if (c == SB_OK && p->must_dir) c = sb_fail(e, SB_EINVAL, "not a symbolic link"); /* "link/" is its target */
  if (c == SB_OK) c = sb_ct_recheck(fs, v, dirfd, name, SB_ACC_LIST, SB_KIND_FILE, e);
  if (c == SB_OK) {
    b->p[n] = '\0';
    b->len = (size_t)n;
  }
  close(dirfd);
  return c;
}

sb_code sb_ct_readlink(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e) {
  sb_code c = first_layer(fs, p, readlink_in, NULL, e);
  if (c == SB_OK) {
    out->p = fs->scratch.p;
    out->len = fs->scratch.len;
  }
  return c;
}

typedef struct list_ud {
  const sb_path *p;
  sb_dirlist *dl;
} list_ud;

static sb_code list_layer(sb_fs *fs, size_t i, void *ud, sb_err *e) {
  list_ud *u = ud;
  layer *v = &CT(fs)->layers[i];
  int fd = sb_ct_open_in(v, u->p, SB_O_DIR, true);
  if (fd < 0) return sb_rt_fail(e, fd);
  sb_code c = sb_ct_recheck(fs, v, fd, NULL, SB_ACC_LIST, SB_KIND_DIR, e);
  if (c == SB_OK) c = sb_rt_list(fs, fd, u->dl, SB_RT_SIZES, e);
  close(fd);
  return c;
}

sb_code sb_ct_readdir(sb_fs *fs, const sb_path *p, sb_dirlist *dl, sb_err *e) {
  list_ud u = {p, dl};
  size_t found;
  sb_code c = sb_ct_merge_layers(fs, list_layer, &u, false, &found, e);
  if (c != SB_OK) return c;
  sb_dirlist_fix_names(dl, 0);
  /* a name in an earlier layer hides the same name in later ones */
  if (found > 1 && sb_dirlist_unique(&fs->mem, dl) != 0) return sb_fail_oom(e);
  return SB_OK;
}
