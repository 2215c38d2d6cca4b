#include "remote/fs_impl.h"
#include "plat/bytes.h"
#include "plat/fd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- walk: one deep listing, then visited in order ----------------------- */
/* envd has no paging: a tree too big for one reply (16 MiB: ~45 000
 * entries, a node_modules), or with a name that is not UTF-8, is listed by
 * find in the sandbox instead, streamed (remote/fs_cmd.c). */

typedef struct went {
  size_t off, len; /* the path below the start, in names */
  const char *s; /* the same, once the listing is complete */
  size_t end; /* index after the entry's subtree */
  int type;
  uint64_t size;
} went;

/* A file met during the walk: what open_ref is given. */
typedef struct wref {
  struct wstate *w;
  size_t i;
} wref;

typedef struct wstate {
  sb_fs *fs;
  sb_walk_fn fn;
  void *ud;
  unsigned flags;
  went *v;
  size_t n, cap;
  sb_buf names;
  size_t strip; /* bytes of envd's paths before the part below the start */
  char start[2 * SB_PATH_MAX + 4]; /* the start's absolute path */
  char rel[SB_PATH_MAX + 1];
  size_t rlen; /* the start's root-relative name, as the callback sees it */
} wstate;

/* An entry at rel (len bytes) below the start. */
static sb_code add(wstate *w, const char *rel, size_t len, int type, uint64_t size, sb_err *e) {
  if (w->n == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 64;
    went *v = sb_realloc(&w->fs->mem, w->v, w->cap * sizeof *v, cap * sizeof *v);
    if (!v) return sb_fail_oom(e);
    w->v = v;
    w->cap = cap;
  }
  went *x = &w->v[w->n];
  x->off = w->names.len;
  x->len = len;
  x->type = type;
  x->size = size;
  if (sb_buf_append(&w->fs->mem, &w->names, rel, len) != 0 || sb_buf_append(&w->fs->mem, &w->names, "", 1) != 0)
    return sb_fail_oom(e);
  w->n++;
  return SB_OK;
}

static sb_code walk_cb(void *ud, const sb_rentry *en, sb_err *e) {
  wstate *w = ud;
  if (en->plen <= w->strip || memcmp(en->path, w->start, w->strip - 1) != 0 || en->path[w->strip - 1] != '/')
    return sb_fail(e, SB_EIO, "remote: ListDir: an entry outside the directory listed");
  return add(w, en->path + w->strip, en->plen - w->strip, sb_rm_type(en->type), en->type == SB_RDIR ? 0 : en->size, e);
}

static sb_code find_cb(void *ud, const char *rel, size_t len, int type, uint64_t size, sb_err *e) {
  return add(ud, rel, len, type, size, e);
}

bool sb_rm_list_failed_over(sb_code c, const sb_err *e) {
  if (c == SB_EFBIG || (c == SB_EIO && e->cause == SB_CAUSE_TIMEOUT)) return true;
  /* envd's only sign of a name its JSON cannot carry: `internal`, in protojson's words */
  return c == SB_EIO && e->cause == SB_CAUSE_INTERNAL && e->msg && strstr(e->msg, "UTF-8");
}

/* Paths in depth-first name order: "/" before every other byte. */
static int cmp_went(const void *a, const void *b) {
  const went *x = a, *y = b;
  const unsigned char *p = (const unsigned char *)x->s, *q = (const unsigned char *)y->s;
  size_t n = x->len < y->len ? x->len : y->len;
  for (size_t i = 0; i < n; i++) {
    unsigned cp = p[i] == '/' ? 0 : p[i] + 1u, cq = q[i] == '/' ? 0 : q[i] + 1u;
    if (cp != cq) return cp < cq ? -1 : 1;
  }
  return (x->len > y->len) - (x->len < y->len);
}

/* Each entry's subtree ends where the first entry not beneath it starts. */
static void mark_ends(wstate *w) {
  size_t stack[SB_WALK_DEPTH_MAX + 2], top = 0;
  for (size_t i = 0; i <= w->n; i++) {
    while (top > 0) {
      went *d = &w->v[stack[top - 1]];
      const char *pi = i < w->n ? w->names.p + w->v[i].off : NULL;
      if (pi && w->v[i].len > d->len && memcmp(pi, w->names.p + d->off, d->len) == 0 && pi[d->len] == '/') break;
      d->end = i;
      top--;
    }
    if (i < w->n && top < sizeof stack / sizeof *stack) stack[top++] = i;
    else if (i < w->n) w->v[i].end = i + 1;
  }
}

static const char *base_name(const char *s, size_t len, size_t *nlen) {
  const char *slash = sb_memrchr(s, '/', len);
  const char *b = slash ? slash + 1 : s;
  *nlen = len - (size_t)(b - s);
  return b;
}

/* The callback's name for entry i: the start's, "/", the part below it. */
static size_t name_of(wstate *w, size_t i) {
  const went *x = &w->v[i];
  size_t len = w->rlen + (w->rlen ? 1 : 0) + x->len;
  if (len > SB_PATH_MAX) return 0;
  if (w->rlen) w->rel[w->rlen] = '/';
  memcpy(w->rel + len - x->len, w->names.p + x->off, x->len);
  w->rel[len] = '\0';
  return len;
}

/* Entries [from, to) directly below the directory named rel (rlen). */
static int visit(wstate *w, size_t from, size_t to, size_t rlen, sb_err *e) {
  const sb_mem *m = &w->fs->mem;
  int r = SB_WALK_CONTINUE;
  if (w->flags & SB_WALK_ENTER) {
    size_t k = 0;
    for (size_t i = from; i < to; i = w->v[i].end) k++;
    sb_dirlist dl = {.v = k ? sb_malloc(m, k * sizeof *dl.v) : NULL, .n = k};
    if (k && !dl.v) {
      sb_fail_oom(e);
      return SB_WALK_STOP;
    }
    k = 0;
    for (size_t i = from; i < to; i = w->v[i].end) {
      size_t nl;
      const char *nm = base_name(w->names.p + w->v[i].off, w->v[i].len, &nl);
      dl.v[k++] = (sb_dirent){.name = nm, .namelen = nl, .type = w->v[i].type, .size = w->v[i].size};
    }
    sb_dirent enter = {.type = SB_T_ENTER};
    w->rel[rlen] = '\0';
    if (w->fn(w->ud, w->rel, rlen, &enter, &dl) == SB_WALK_STOP) r = SB_WALK_STOP;
    sb_free(m, dl.v, dl.n * sizeof *dl.v);
  }
  for (size_t i = from; i < to && r != SB_WALK_STOP; i = w->v[i].end) {
    size_t len = name_of(w, i);
    if (!len) continue;
    went *x = &w->v[i];
    size_t nl;
    const char *nm = base_name(w->names.p + x->off, x->len, &nl);
    sb_dirent ent = {.name = nm, .namelen = nl, .type = x->type, .size = x->size};
    wref ref = {w, i};
    r = w->fn(w->ud, w->rel, len, &ent, &ref);
    if (r == SB_WALK_CONTINUE && x->type == SB_T_DIR) r = visit(w, i + 1, x->end, len, e);
    else if (r == SB_WALK_SKIP) r = SB_WALK_CONTINUE;
  }
  return r;
}

sb_code sb_rm_walk(sb_fs *fs, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e) {
  rnode *n = &RF(fs)->n[0];
  RF(fs)->nwant = 0; /* notes (want_ref) belong to one walk: none left from an earlier one */
  RF(fs)->wnames.len = 0;
  sb_code c = sb_rm_lookup(fs, p, true, n, e); /* a named start is followed: grep{path = "link"} */
  if (c != SB_OK) return c;
  if ((c = sb_rm_recheck(fs, n, NULL, 0, SB_ACC_LIST, sb_rm_kind(n->type), e)) != SB_OK) return c;
  wstate *w = sb_malloc(&fs->mem, sizeof *w);
  if (!w) return sb_fail_oom(e);
  memset(w, 0, sizeof *w);
  w->fs = fs;
  w->fn = fn;
  w->ud = ud;
  w->flags = flags; /* sizes come with the listing: only SB_WALK_ENTER matters */
  /* below a followed link, entries are named by where they really are, so
   * rules judge real paths (as the container does) */
  if (n->followed && sb_policy_judges_entries(fs->policy)) memcpy(w->rel, n->rel, (w->rlen = n->rlen) + 1);
  else w->rlen = sb_path_clean(p, w->rel);
  const char *start = sb_rm_abs(RF(fs), 1, n->rel, n->rlen);
  if (!start) c = sb_fail(e, SB_ENAMETOOLONG, NULL);
  e->code = SB_OK;
  if (c == SB_OK && n->type != SB_T_DIR) {
    w->n = 1;
    went one = {.len = 0, .type = n->type, .size = n->size};
    w->v = &one;
    size_t nl;
    const char *nm = base_name(w->rel, w->rlen, &nl);
    sb_dirent ent = {.name = nm, .namelen = nl, .type = n->type, .size = n->size};
    memcpy(w->start, start, strlen(start) + 1);
    wref ref = {w, 0};
    fn(ud, w->rel, w->rlen, &ent, &ref);
    w->v = NULL;
  } else if (c == SB_OK) {
    size_t sl = strlen(start);
    memcpy(w->start, start, sl + 1);
    w->strip = sl == 1 ? 1 : sl + 1; /* "/a/b" + "/" */
    c = sb_envd_list(&fs->mem, &RF(fs)->d, start, SB_WALK_DEPTH_MAX, walk_cb, w, e);
    if (sb_rm_list_failed_over(c, e)) { /* a tree too big for one reply, or a name JSON cannot carry */
      w->n = 0;
      w->names.len = 0;
      e->code = SB_OK;
      c = sb_rm_find(fs, start, SB_WALK_DEPTH_MAX, find_cb, w, e);
    }
    if (c == SB_OK && w->n) {
      for (size_t i = 0; i < w->n; i++) w->v[i].s = w->names.p + w->v[i].off;
      qsort(w->v, w->n, sizeof *w->v, cmp_went);
      mark_ends(w);
    }
    if (c == SB_OK) {
      visit(w, 0, w->n, w->rlen, e);
      c = e->code;
    }
  }
  sb_free(&fs->mem, w->v, w->cap * sizeof *w->v);
  sb_buf_free(&fs->mem, &w->names);
  sb_free(&fs->mem, w, sizeof *w);
  return c;
}

/* A file met during the walk, for any thread: its bytes in a memfd. */
size_t sb_rm_ref_path(const void *ref, char *out, size_t cap, uint64_t *size) {
  const wref *f = ref;
  const went *x = &f->w->v[f->i];
  *size = x->size;
  int n =
      x->len ? snprintf(out, cap, "%s/%s", f->w->start, f->w->names.p + x->off) : snprintf(out, cap, "%s", f->w->start);
  return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

sb_code sb_rm_open_ref(sb_fs *fs, const void *ref, int *fd, sb_bytes *mem, sb_err *e) {
  (void)mem;
  char path[2 * SB_PATH_MAX + 4];
  uint64_t size;
  if (!sb_rm_ref_path(ref, path, sizeof path, &size)) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  sb_code c = sb_policy_read_size(fs->policy, size, e);
  if (c != SB_OK) return c;
  rfs *r = RF(fs);
  if ((c = sb_rm_read_abs(fs, path, &r->ref, e)) != SB_OK) return c;
  int m = sb_anon_file("sandbox-remote");
  if (m < 0) return sb_fail_errno(e, errno);
  for (size_t done = 0; done < r->ref.len;) {
    ssize_t w = write(m, r->ref.p + done, r->ref.len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = errno;
      close(m);
      return sb_fail_errno(e, err ? err : EIO);
    }
    done += (size_t)w;
  }
  sb_buf_trim(&fs->mem, &r->ref, 1 << 20);
  if (lseek(m, 0, SEEK_SET) != 0) {
    int err = errno;
    close(m);
    return sb_fail_errno(e, err);
  }
  *fd = m;
  return SB_OK;
}
