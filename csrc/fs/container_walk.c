/* The ContainerSandbox's walk (glob, grep, snapshot, disk usage): depth
 * first over every layer in name order, entries never followed through
 * links, a later layer's entries hidden where an earlier one has the path. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/container_impl.h"
#include "fs/dirlist.h"
#include "fs/rooted.h"
#include "plat/fd.h"

int sb_ct_count_bytes(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref) {
  (void)rel;
  (void)rlen;
  (void)ref;
  if (ent->type == SB_T_FILE) *(uint64_t *)ud += ent->size;
  return SB_WALK_CONTINUE;
}

/* ---- walk (glob, grep, snapshot) ---------------------------------------- */

typedef struct rref {
  int dirfd;
  const char *name;
  const layer *v;
} rref;

typedef struct rwalk {
  sb_fs *fs;
  size_t vi;
  unsigned flags;
  sb_walk_fn fn;
  void *ud;
  sb_err *e;
  char rel[SB_PATH_MAX + 1];
} rwalk;

static bool shadowed(rwalk *w, size_t rlen) {
  container *ct = CT(w->fs);
  for (size_t j = 0; j < w->vi; j++) {
    int fd = sb_resolve(&ct->layers[j].res, w->rel, rlen, SB_O_PATH, 0);
    if (fd >= 0) {
      close(fd);
      return true;
    }
  }
  return false;
}

/* Visit the entries of dirfd in name order, descending into directories
 * through O_NOFOLLOW opens from the held parent. */
static int walk_level(rwalk *w, int dirfd, bool readable, size_t rlen, int depth);

/* One entry of a level: fn with its reference, then the directory's own
 * level (an entry a later layer shadows is only descended into). */
typedef struct level {
  rwalk *w;
  int dirfd, depth;
} level;

static int visit(void *self, const sb_dirent *ent, size_t len) {
  level *lv = self;
  rwalk *w = lv->w;
  bool hide = w->vi > 0 && shadowed(w, len);
  if (hide && ent->type != SB_T_DIR) return SB_WALK_CONTINUE;
  rref ref = {lv->dirfd, ent->name, &CT(w->fs)->layers[w->vi]};
  int r = hide ? SB_WALK_CONTINUE : w->fn(w->ud, w->rel, len, ent, &ref);
  if (r != SB_WALK_CONTINUE || ent->type != SB_T_DIR) return r;
  /* read-only, so the listing needs no second open */
  int sub = openat(lv->dirfd, ent->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub < 0) return r;
  r = walk_level(w, sub, true, len, lv->depth + 1);
  close(sub);
  return r;
}

static int walk_level(rwalk *w, int dirfd, bool readable, size_t rlen, int depth) {
  if (depth > SB_WALK_DEPTH_MAX) return SB_WALK_CONTINUE;
  sb_dirlist lv = {0};
  sb_code listed = sb_rt_list(w->fs, dirfd, &lv,
                              ((w->flags & SB_WALK_SIZES) ? SB_RT_SIZES : 0) | (readable ? SB_RT_READABLE : 0), w->e);
  level self = {w, dirfd, depth};
  return sb_rt_walk_level(w->fs, listed, &lv, w->flags, w->fn, w->ud, w->rel, rlen, w->e, visit, &self);
}

/* The bytes of regular files below fd (an overlay's upper layer). */
sb_code sb_ct_usage_walk(sb_fs *fs, int fd, uint64_t *used, sb_err *e) {
  int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return sb_rt_fail_errno(e);
  rwalk *w = sb_malloc(&fs->mem, sizeof *w);
  if (!w) {
    close(dfd);
    return sb_fail_oom(e);
  }
  *w = (rwalk){.fs = fs, .vi = 0, .flags = SB_WALK_SIZES, .fn = sb_ct_count_bytes, .ud = used, .e = e};
  e->code = SB_OK;
  walk_level(w, dfd, true, 0, 0);
  close(dfd);
  sb_free(&fs->mem, w, sizeof *w);
  return e->code;
}

sb_code sb_ct_walk_layer(sb_fs *fs, size_t vi, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e) {
  container *ct = CT(fs);
  layer *v = &ct->layers[vi];
  rwalk *w = sb_malloc(&fs->mem, sizeof *w);
  if (!w) return sb_fail_oom(e);
  *w = (rwalk){.fs = fs, .vi = vi, .flags = flags, .fn = fn, .ud = ud, .e = e};
  e->code = SB_OK;
  size_t rlen = sb_path_clean(p, w->rel);
  int fd = sb_ct_open_in(v, p, SB_O_PATH, true); /* a named start is followed: grep{path = "link"} */
  struct stat st;
  if (fd >= 0 && sb_policy_judges_entries(fs->policy)) {
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
    sb_rt_fail(e, fd);
  } else if (fstat(fd, &st) != 0) {
    sb_rt_fail_errno(e);
  } else if (S_ISDIR(st.st_mode)) {
    if (sb_ct_recheck(fs, v, fd, NULL, SB_ACC_LIST, SB_KIND_DIR, e) == SB_OK) walk_level(w, fd, false, rlen, 0);
  } else if (p->ncomp > 0) { /* a single file: visit it through its real parent */
    char real[2 * SB_PATH_MAX + 2];
    long n = sb_resolve_relpath(&v->res, fd, real, sizeof real);
    sb_path rp;
    int dirfd = -1;
    if (n < 0) sb_rt_fail(e, (int)n);
    else if (n > 0 && sb_path_from_rel(&rp, real, (size_t)n, e) == SB_OK) dirfd = sb_ct_open_parent(v, &rp, false, e);
    if (dirfd >= 0) {
      char name[SB_NAME_MAX + 1];
      sb_ct_last_name(&rp, name);
      sb_stat s;
      sb_rt_fill_stat(&st, &s);
      sb_dirent ent = {.name = name, .namelen = strlen(name), .type = s.type, .size = s.size};
      rref ref = {dirfd, name, v};
      fn(ud, w->rel, rlen, &ent, &ref);
      close(dirfd);
    }
  }
  if (fd >= 0) close(fd);
  sb_free(&fs->mem, w, sizeof *w);
  return e->code;
}

typedef struct walk_ud {
  const sb_path *p;
  unsigned flags;
  sb_walk_fn fn;
  void *ud;
} walk_ud;

static sb_code walk_each(sb_fs *fs, size_t i, void *ud, sb_err *e) {
  walk_ud *u = ud;
  return sb_ct_walk_layer(fs, i, u->p, u->flags, u->fn, u->ud, e);
}

sb_code sb_ct_walk(sb_fs *fs, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e) {
  walk_ud u = {p, flags, fn, ud};
  size_t found;
  return sb_ct_merge_layers(fs, walk_each, &u, true, &found, e);
}

sb_code sb_ct_open_ref(sb_fs *fs, const void *ref, int *fd, sb_bytes *mem, sb_err *e) {
  (void)fs;
  (void)mem;
  const rref *r = ref;
  if (!r->v->content) return sb_fail(e, SB_EACCES, "the sandbox root is write-only (mode \"w\")");
  /* the walk judged the path already; the reader checks type and size */
  *fd = openat(r->dirfd, r->name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  return *fd < 0 ? sb_rt_fail_errno(e) : SB_OK;
}
