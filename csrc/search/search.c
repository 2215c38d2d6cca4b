#include "search/search.h"
#include "search/search_impl.h"

#include <stdlib.h>
#include <string.h>

#include "base/glob.h"

/* A block of megabytes made fresh for each search costs a page fault
 * every 4 KiB: the last search's is kept for the next (up to this). */
#define KEEP_RESULTS ((size_t)8 << 20)

void sb_search_init(sb_search *s, sb_fs *fs, sb_err *e, size_t max) {
  memset(s, 0, sizeof *s);
  s->fs = fs;
  s->e = e;
  s->max = max;
  s->results = fs->search_buf; /* the sandbox's, until sb_search_free gives it back */
  s->results.len = 0;
  fs->search_buf = (sb_buf){0};
  sb_ignore_init(&s->ig, &fs->mem);
}

void sb_search_free(sb_search *s) {
  if (!s->fs) return;
  if (s->compiled) sb_matcher_free(&s->m);
  s->compiled = false;
  sb_ignore_free(&s->ig);
  s->results.len = 0;
  if (s->fs->closed) { /* (a search object collected after its sandbox's dispose) */
    sb_buf_free(&s->fs->mem, &s->results);
  } else {
    sb_buf_trim(&s->fs->mem, &s->results, KEEP_RESULTS);
    sb_buf_free(&s->fs->mem, &s->fs->search_buf);
    s->fs->search_buf = s->results;
    s->results = (sb_buf){0};
  }
  sb_buf_free(&s->fs->mem, &s->index);
  sb_buf_trim(&s->fs->mem, &s->fs->scratch, 1 << 20); /* the backend's reads */
  s->fs = NULL;
}

bool sb_search_add_rec(sb_search *s, const char *path, size_t plen, const rec *h, const char *text) {
  rec r = *h;
  r.plen = (uint32_t)plen;
  const sb_mem *m = &s->fs->mem;
  sb_buf *out = &s->results;
  if (sb_buf_append(m, out, &r, sizeof r) != 0 || sb_buf_append(m, out, path, plen) != 0 ||
      sb_buf_append(m, out, text, r.tlen) != 0)
    return sb_search_oom(s);
  s->count++;
  return true;
}

static bool add_path(sb_search *s, const char *path, size_t plen, int kind) {
  rec r = {.kind = kind};
  return sb_search_add_rec(s, path, plen, &r, NULL);
}

static int cmp_rec(const void *a, const void *b) {
  const char *x = *(const char *const *)a, *y = *(const char *const *)b;
  rec rx, ry;
  memcpy(&rx, x, sizeof rx);
  memcpy(&ry, y, sizeof ry);
  size_t n = rx.plen < ry.plen ? rx.plen : ry.plen;
  int c = memcmp(x + sizeof rx, y + sizeof ry, n);
  if (c) return c;
  if (rx.plen != ry.plen) return rx.plen < ry.plen ? -1 : 1;
  return (rx.line > ry.line) - (rx.line < ry.line);
}

static int cmp_mtime(const void *a, const void *b) {
  const char *x = *(const char *const *)a, *y = *(const char *const *)b;
  rec rx, ry;
  memcpy(&rx, x, sizeof rx);
  memcpy(&ry, y, sizeof ry);
  if (rx.mtime != ry.mtime) return rx.mtime > ry.mtime ? -1 : 1; /* newest first */
  return cmp_rec(a, b);
}

/* The index of the records, in collection order. */
static const char **index_recs(sb_search *s) {
  sb_buf *ix = &s->index;
  ix->len = 0;
  if (sb_buf_reserve(&s->fs->mem, ix, (s->count + 1) * sizeof(char *)) != 0) return NULL;
  const char **idx = (const char **)(void *)ix->p;
  const char *p = s->results.p;
  for (size_t i = 0; i < s->count; i++) {
    rec r;
    memcpy(&r, p, sizeof r);
    idx[i] = p;
    p += sizeof r + r.plen + r.tlen;
  }
  ix->len = s->count * sizeof(char *);
  return idx;
}

bool sb_search_sorted(sb_search *s) {
  const char **idx = index_recs(s);
  if (!idx) return sb_fail_oom(s->e), false;
  int (*cmp)(const void *, const void *) = s->sort_mtime ? cmp_mtime : cmp_rec;
  size_t i = 1;
  while (i < s->count && cmp(&idx[i - 1], &idx[i]) <= 0) i++; /* walks are mostly in order already */
  if (i < s->count) qsort(idx, s->count, sizeof *idx, cmp);
  return true;
}

void sb_search_hit(const sb_search *s, size_t i, sb_hit *out) {
  const char *p;
  if (s->index.len) {
    p = ((const char *const *)(const void *)s->index.p)[i];
  } else { /* collection order: walk to record i */
    p = s->results.p;
    for (size_t k = 0; k < i; k++) {
      rec r;
      memcpy(&r, p, sizeof r);
      p += sizeof r + r.plen + r.tlen;
    }
  }
  rec r;
  memcpy(&r, p, sizeof r);
  out->path = p + sizeof r;
  out->plen = r.plen;
  out->line = r.line;
  out->end_line = r.end;
  out->kind = r.kind;
  out->mtime = r.mtime;
  out->text = p + sizeof r + r.plen;
  out->tlen = r.tlen;
}

sb_code sb_search_pattern(const char *cwd, size_t cwdlen, const char *raw, size_t n, char *out, size_t *olen,
                          sb_err *e) {
  if (n == 0) return sb_fail(e, SB_EINVAL, "empty pattern");
  if (memchr(raw, '\0', n)) return sb_fail(e, SB_EINVAL, "pattern contains a NUL byte");
  if (n > SB_PATH_MAX) return sb_fail(e, SB_EINVAL, "pattern too long");
  size_t i = 0, len = 0;
  if (raw[0] == '/') {
    size_t ci = 0;
    while (ci < cwdlen) {
      while (ci < cwdlen && cwd[ci] == '/') ci++;
      if (ci >= cwdlen) break;
      size_t cb = ci;
      while (ci < cwdlen && cwd[ci] != '/') ci++;
      while (i < n && raw[i] == '/') i++;
      size_t pb = i;
      while (i < n && raw[i] != '/') i++;
      if (i - pb != ci - cb || memcmp(raw + pb, cwd + cb, ci - cb) != 0)
        return sb_fail(e, SB_EESCAPE, "absolute patterns must lie under the sandbox root");
    }
  }
  while (i < n) {
    while (i < n && raw[i] == '/') i++;
    size_t b = i;
    while (i < n && raw[i] != '/') i++;
    size_t cl = i - b;
    if (cl == 0 || (cl == 1 && raw[b] == '.')) continue;
    if (cl == 2 && raw[b] == '.' && raw[b + 1] == '.') return sb_fail(e, SB_EINVAL, "patterns may not contain '..'");
    if (len) out[len++] = '/';
    memcpy(out + len, raw + b, cl);
    len += cl;
  }
  out[len] = '\0';
  *olen = len;
  return SB_OK;
}

/* ---- glob --------------------------------------------------------------- */

static bool add_glob(sb_search *s, const char *rel, size_t rlen, int type) {
  if (s->count >= s->max) {
    s->truncated = true;
    return false;
  }
  rec r = {.kind = type == SB_T_DIR ? SB_HIT_DIR : SB_HIT_MATCH};
  if (s->sort_mtime) {
    sb_path p;
    sb_stat st;
    sb_err ignore;
    if (sb_path_from_rel(&p, rel, rlen, &ignore) == SB_OK && s->fs->be->stat(s->fs, &p, false, &st, &ignore) == SB_OK)
      r.mtime = st.mtime;
  }
  return sb_search_add_rec(s, rel, rlen, &r, NULL);
}

static int glob_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref) {
  sb_search *s = ud;
  if (ent->type == SB_T_ENTER) return sb_search_on_enter(s, rel, rlen, ref);
  if (!sb_search_visit(s)) return SB_WALK_STOP;
  if (!sb_search_visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
  if (sb_search_left_out(s, rel, rlen, ent)) return SB_WALK_SKIP;
  if (sb_glob_match(s->pat, s->plen, rel, rlen) && !add_glob(s, rel, rlen, ent->type)) return SB_WALK_STOP;
  if (ent->type == SB_T_DIR && sb_glob_could_match_below(s->pat, s->plen, rel, rlen)) return SB_WALK_CONTINUE;
  return SB_WALK_SKIP;
}

sb_code sb_search_glob(sb_search *s, const sb_path *start) {
  sb_fs *fs = s->fs;
  sb_stat st;
  sb_code c =
      fs->be->stat(fs, start, true, &st, s->e); /* a link in the prefix is followed, as the walk follows its start */
  if (c == SB_OK && st.type != SB_T_DIR) c = SB_ENOTDIR; /* a prefix names directories */
  if (c == SB_OK && !sb_search_start_rules(s, start)) c = s->e->code;
  if (c == SB_OK) {
    /* the walk visits what is below the start; the start itself may match */
    if (start->len && sb_glob_match(s->pat, s->plen, start->buf, start->len))
      add_glob(s, start->buf, start->len, SB_T_DIR);
    c = fs->be->walk(fs, start, SB_WALK_ENTER, glob_cb, s, s->e);
  }
  if (c == SB_ENOENT || c == SB_ENOTDIR || c == SB_EACCES) c = SB_OK; /* nothing matches */
  return s->failed ? s->e->code : c;
}

/* ---- snapshot ----------------------------------------------------------- */

static int snap_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref) {
  sb_search *s = ud;
  if (!sb_search_visit(s)) return SB_WALK_STOP;
  if (!sb_search_visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
  if (ent->type == SB_T_DIR) {
    if (s->empty_dirs && !add_path(s, rel, rlen, SB_HIT_DIR)) return SB_WALK_STOP;
    return SB_WALK_CONTINUE;
  }
  if (ent->type != SB_T_FILE) return SB_WALK_CONTINUE;
  s->bytes += ent->size;
  if (s->bytes > s->max_bytes) {
    sb_failf(s->e, SB_ENOTSUP, "snapshot would exceed %llu bytes (option max_bytes)", (unsigned long long)s->max_bytes);
    s->failed = true;
    return SB_WALK_STOP;
  }
  if (!add_path(s, rel, rlen, SB_HIT_MATCH)) return SB_WALK_STOP;
  /* where a file costs a round trip, its bytes come with the others
   * (fetch_wanted); the tag is its hit's number, from 1 */
  if (s->fs->be->want_ref && !s->fs->be->want_ref(s->fs, ref, (void *)(uintptr_t)s->count))
    return sb_search_oom(s), SB_WALK_STOP;
  return SB_WALK_CONTINUE;
}

sb_code sb_search_snapshot(sb_search *s) {
  sb_path root;
  sb_path_from_rel(&root, "", 0, s->e);
  sb_code c = s->fs->be->walk(s->fs, &root, SB_WALK_SIZES, snap_cb, s, s->e);
  return c == SB_OK && s->failed ? s->e->code : c;
}
