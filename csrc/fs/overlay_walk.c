/* The userspace overlay's walk over the merged view and its reads on
 * another thread (fs/overlay.h, fs/overlay_view.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/dirlist.h"
#include "fs/overlay_view.h"

typedef struct oref {
  int dirfd;
  const char *name;
} oref;

typedef struct owalk {
  sb_fs *fs;
  unsigned flags;
  sb_walk_fn fn;
  void *ud;
  sb_err *e;
  char rel[SB_PATH_MAX + 1];
} owalk;

static int walk_level(owalk *w, const mdir *d, size_t rlen, int depth);

typedef struct level {
  owalk *w;
  const mdir *d;
  int depth;
} level;

/* One entry of a merged level: fn with its reference, then the
 * directory's own merged level. */
static int visit(void *self, const sb_dirent *ent, size_t len) {
  level *lv = self;
  owalk *w = lv->w;
  oref ref = {lv->d->fd[ent->layer], ent->name};
  int r = w->fn(w->ud, w->rel, len, ent, &ref);
  if (r != SB_WALK_CONTINUE || ent->type != SB_T_DIR) return r;
  onode n;
  sb_ovl_node_init(&n);
  mdir sub;
  if (sb_ovl_child(lv->d, ent->name, &n) == 0 && sb_ovl_is_dir(&n) && sb_ovl_descend(lv->d, ent->name, &n, &sub) == 0) {
    r = walk_level(w, &sub, len, lv->depth + 1);
    sb_ovl_mdir_close(&sub);
  }
  return r;
}

static int walk_level(owalk *w, const mdir *d, size_t rlen, int depth) {
  if (depth > SB_WALK_DEPTH_MAX) return SB_WALK_CONTINUE;
  sb_dirlist lv = {0};
  sb_code listed = sb_ovl_list_merged(w->fs, d, &lv, (w->flags & SB_WALK_SIZES) ? SB_RT_SIZES : 0, w->e);
  level self = {w, d, depth};
  return sb_rt_walk_level(w->fs, listed, &lv, w->flags, w->fn, w->ud, w->rel, rlen, w->e, visit, &self);
}

sb_code sb_ovl_walk(sb_fs *fs, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e) {
  owalk *w = sb_malloc(&fs->mem, sizeof *w);
  if (!w) return sb_fail_oom(e);
  *w = (owalk){.fs = fs, .flags = flags, .fn = fn, .ud = ud, .e = e};
  e->code = SB_OK;
  onode n;
  int r = sb_ovl_lookup(OV(fs), p->buf, p->len, true, &n); /* a named start is followed: grep{path = "link"} */
  size_t rlen;
  if (sb_policy_judges_entries(fs->policy)) { /* rules judge where things really are */
    rlen = n.rlen < SB_PATH_MAX ? n.rlen : SB_PATH_MAX;
    memcpy(w->rel, n.rel, rlen);
    w->rel[rlen] = '\0';
  } else {
    rlen = sb_path_clean(p, w->rel);
  }
  if (r != 0) sb_rt_fail(e, r);
  else if (n.where < 0) sb_fail(e, SB_ENOENT, NULL);
  else if (sb_ovl_is_dir(&n)) {
    mdir d = {{-1, -1}};
    if (sb_ovl_recheck(fs, &n, SB_ACC_LIST, SB_KIND_DIR, e) == SB_OK) {
      if ((r = sb_ovl_open_node_dir(&n, &d)) != 0) sb_rt_fail(e, r);
      else walk_level(w, &d, rlen, 0);
    }
    sb_ovl_mdir_close(&d);
  } else if (p->ncomp > 0) { /* a single file, visited through its real parent */
    sb_stat s;
    sb_rt_fill_stat(&n.st, &s);
    sb_dirent ent = {.name = n.name, .namelen = strlen(n.name), .type = s.type, .size = s.size};
    oref ref = {n.parent.fd[n.where], n.name};
    fn(ud, w->rel, rlen, &ent, &ref);
  }
  sb_ovl_node_free(&n);
  sb_free(&fs->mem, w, sizeof *w);
  return e->code;
}

sb_code sb_ovl_open_ref(sb_fs *fs, const void *ref, int *fd, sb_bytes *mem, sb_err *e) {
  (void)mem;
  const oref *r = ref;
  if (!OV(fs)->can_read) return sb_fail(e, SB_EACCES, "the sandbox root is write-only (mode \"w\")");
  *fd = openat(r->dirfd, r->name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  return *fd < 0 ? sb_rt_fail_errno(e) : SB_OK;
}
