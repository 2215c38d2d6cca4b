#include "search/search.h"
#include "search/search_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static bool add_rec(sb_search *s, const char *path, size_t plen, const rec *h, const char *text) {
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
  return add_rec(s, path, plen, &r, NULL);
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

static bool visit_budget(sb_search *s) {
  if (++s->visits <= MAX_VISITS) return true;
  s->truncated = true;
  return false;
}

static bool visible(sb_search *s, const char *rel, size_t rlen, int type) {
  const sb_policy *pol = s->fs->policy;
  if (!pol->deny.n && !pol->has_allow) return true;
  return sb_policy_visible(pol, rel, rlen, type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE);
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
  return add_rec(s, rel, rlen, &r, NULL);
}

static int glob_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref) {
  sb_search *s = ud;
  if (ent->type == SB_T_ENTER) return sb_search_on_enter(s, rel, rlen, ref);
  if (!visit_budget(s)) return SB_WALK_STOP;
  if (!visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
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

/* ---- grep: the walk and the results (main thread) ----------------------- */

/* "lines" mode: a file's lines go straight into results, as rg prints
 * them, one segment a file (index: the segments' table); no record, no
 * second pass. */
typedef struct seg {
  size_t off, len; /* in results: the file's lines, "--\n" first when sep */
  uint32_t plen, sep;
} seg;

/* "SEP N SEP" at o, the number in decimal: what sprintf("%c%u%c") wrote,
 * at a fraction of its cost (tens of thousands of hits a search). */
static char *put_lineno(char *o, char sep, uint32_t n) {
  char d[10];
  size_t k = 0;
  do d[k++] = (char)('0' + n % 10), n /= 10;
  while (n);
  *o++ = sep;
  while (k) *o++ = d[--k];
  *o++ = sep;
  return o;
}

#define LINE_ROOM 12 /* ':' or '-', a line number of up to 10 digits, the other separator */

/* Is `path` after the file before (cmp_rec's order)? */
static bool in_order(const sb_search *s, const char *path, size_t plen) {
  size_t n = plen < s->last_plen ? plen : s->last_plen;
  int c = memcmp(s->last_path, path, n);
  return c < 0 || (c == 0 && s->last_plen < plen);
}

static bool take_lines(sb_search *s, sb_job *j) {
  const sb_mem *m = &s->fs->mem;
  sb_buf *out = &s->results;
  bool ctx = s->before || s->after;
  size_t start = out->len;
  uint32_t sep = 0, last = 0;
  bool first = true;
  if (s->index.len && !in_order(s, j->path, j->plen)) s->out_of_order = true;
  for (size_t off = 0; off < j->out.len;) {
    rec r;
    memcpy(&r, j->out.p + off, sizeof r);
    const char *t = j->out.p + off + sizeof r, *end = t + r.tlen;
    off += sizeof r + r.tlen;
    if (r.kind != SB_HIT_CONTEXT) {
      if (s->matches >= s->max) { /* there is more than max_results */
        s->truncated = true;
        break;
      }
      s->matches++;
    }
    if (sb_buf_reserve(m, out, 3 + j->plen + LINE_ROOM + r.tlen + 1) != 0) return sb_search_oom(s);
    char *o = out->p + out->len;
    if (ctx && first && s->index.len) o = memcpy(o, "--\n", 3), o += 3, sep = 3;
    else if (ctx && !first && r.line > last + 1) o = memcpy(o, "--\n", 3), o += 3;
    first = false;
    char ch = r.kind == SB_HIT_CONTEXT ? '-' : ':';
    uint32_t line = r.line;
    for (;; line++) { /* one line unless the record spans more (a multiline match) */
      const char *eol = r.end > line ? memchr(t, '\n', (size_t)(end - t)) : NULL;
      size_t tl = eol ? (size_t)(eol - t) : (size_t)(end - t);
      memcpy(o, j->path, j->plen);
      o += j->plen;
      o = put_lineno(o, ch, line);
      memcpy(o, t, tl);
      o += tl;
      *o++ = '\n';
      out->len = (size_t)(o - out->p);
      if (!eol) break;
      t = eol + 1;
      if (sb_buf_reserve(m, out, j->plen + LINE_ROOM + (size_t)(end - t) + 1) != 0) return sb_search_oom(s);
      o = out->p + out->len;
    }
    last = line;
    s->count++;
  }
  if (out->len > start) {
    seg g = {start, out->len - start, (uint32_t)j->plen, sep};
    if (sb_buf_append(m, &s->index, &g, sizeof g) != 0) return sb_search_oom(s);
    memcpy(s->last_path, j->path, j->plen);
    s->last_plen = j->plen;
  }
  if (!s->truncated && j->more && s->matches >= s->max) s->truncated = true;
  return !s->truncated;
}

/* The segments by path, for a walk that gave them out of order. */
typedef struct seg_key {
  const char *path;
  size_t plen, at;
} seg_key;

static int cmp_seg(const void *a, const void *b) {
  const seg_key *x = a, *y = b;
  size_t n = x->plen < y->plen ? x->plen : y->plen;
  int c = memcmp(x->path, y->path, n);
  return c ? c : (x->plen > y->plen) - (x->plen < y->plen);
}

const char *sb_search_lines(sb_search *s, size_t *len) {
  *len = s->results.len;
  if (!s->out_of_order) return s->results.len ? s->results.p : "";
  const sb_mem *m = &s->fs->mem;
  const seg *g = (const seg *)(const void *)s->index.p;
  size_t n = s->index.len / sizeof *g;
  seg_key *k = sb_malloc(m, n * sizeof *k);
  sb_buf sorted = {0};
  if (!k || sb_buf_reserve(m, &sorted, s->results.len + 3) != 0) {
    sb_free(m, k, n * sizeof *k);
    sb_buf_free(m, &sorted);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) k[i] = (seg_key){s->results.p + g[i].off + g[i].sep, g[i].plen, i};
  qsort(k, n, sizeof *k, cmp_seg);
  bool ctx = s->before || s->after;
  for (size_t i = 0; i < n; i++) { /* "--" between files when context was asked for: none before the first */
    const seg *x = &g[k[i].at];
    if (ctx && i) sb_buf_append(m, &sorted, "--\n", 3);
    sb_buf_append(m, &sorted, s->results.p + x->off + x->sep, x->len - x->sep);
  }
  sb_free(m, k, n * sizeof *k);
  sb_buf_free(m, &s->results);
  s->results = sorted;
  s->out_of_order = false;
  *len = s->results.len;
  return s->results.p;
}

/* A finished file: its records join the results, in walk order. */
static bool grep_take(void *ctx, sb_job *j) {
  sb_search *s = ctx;
  if (j->rc) {
    if (j->rc == PCRE2_ERROR_NOMEMORY) return sb_search_oom(s);
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(j->rc, msg, sizeof msg);
    sb_failf(s->e, SB_EINVAL, "the pattern could not be matched in '%s': %s (simplify the pattern)", j->path,
             (const char *)msg);
    s->failed = true;
    return false;
  }
  if (s->lines && s->mode == SB_GREP_CONTENT) return take_lines(s, j);
  for (size_t off = 0; off < j->out.len;) {
    rec r;
    memcpy(&r, j->out.p + off, sizeof r);
    const char *text = j->out.p + off + sizeof r;
    off += sizeof r + r.tlen;
    if (r.kind != SB_HIT_CONTEXT) {
      if (s->matches >= s->max) { /* there is more than max_results */
        s->truncated = true;
        return false;
      }
      s->matches++;
    }
    if (!add_rec(s, j->path, j->plen, &r, text)) return false;
  }
  if (j->more && s->matches >= s->max) {
    s->truncated = true;
    return false;
  }
  return true;
}

typedef struct grep_walk {
  sb_search *s;
  sb_pool pool;
} grep_walk;

static bool filters_pass(sb_search *s, const char *rel, size_t rlen, const sb_dirent *ent) {
  const char *base = rel + rlen - ent->namelen;
  if (s->pat) {
    const char *subj = s->filter_base ? base : rel;
    if (!sb_glob_match(s->pat, s->plen, subj, rlen - (size_t)(subj - rel))) return false;
  }
  if (s->tpat && !sb_glob_match(s->tpat, s->tplen, base, ent->namelen)) return false;
  const sb_policy *pol = s->fs->policy;
  return sb_policy_ext_ok(&pol->ext_read, pol->has_ext_read, rel, rlen);
}

static int grep_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref) {
  grep_walk *w = ud;
  sb_search *s = w->s;
  if (ent->type == SB_T_ENTER) return sb_search_on_enter(s, rel, rlen, ref);
  if (!visit_budget(s)) return SB_WALK_STOP;
  if (!visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
  if (ent->type != SB_T_FILE && ent->type != SB_T_DIR) return SB_WALK_SKIP;
  if (sb_search_left_out(s, rel, rlen, ent)) return SB_WALK_SKIP;
  if (ent->type == SB_T_DIR) return SB_WALK_CONTINUE;
  if (!filters_pass(s, rel, rlen, ent)) return SB_WALK_CONTINUE;
  sb_job *j = calloc(1, sizeof *j);
  if (!j || !(j->path = malloc(rlen + 1))) {
    free(j);
    return sb_search_oom(s), SB_WALK_STOP;
  }
  memcpy(j->path, rel, rlen);
  j->path[rlen] = '\0';
  j->plen = rlen;
  j->fd = -1;
  if (s->fs->be->want_ref) { /* fetched with the others once the walk is done (grep_fetched) */
    if (s->fs->be->want_ref(s->fs, ref, j)) return SB_WALK_CONTINUE;
    sb_job_free(j);
    return sb_search_oom(s), SB_WALK_STOP;
  }
  sb_bytes mem = {0};
  sb_err ignore;
  if (s->fs->be->open_ref(s->fs, ref, &j->fd, &mem, &ignore) != SB_OK) {
    j->fd = -1;
    sb_job_free(j);
    return SB_WALK_CONTINUE; /* unreadable: not searched */
  }
  j->data = mem.p;
  j->dlen = mem.len;
  return sb_pool_submit(&w->pool, j) ? SB_WALK_CONTINUE : SB_WALK_STOP;
}

/* A file noted during the walk, fetched: searched as if the walk had read
 * it (a file that could not be read is not searched, as with open_ref). */
static bool grep_fetched(void *ud, void *tag, const char *data, size_t len, sb_code c) {
  grep_walk *w = ud;
  sb_job *j = tag;
  if (c != SB_OK) {
    sb_job_free(j);
    return true;
  }
  if (!(j->own = malloc(len + 1))) { /* + the NUL the matcher reads past the end */
    sb_job_free(j);
    sb_search_oom(w->s);
    return false;
  }
  memcpy(j->own, data, len);
  j->own[len] = '\0';
  j->data = j->own;
  j->dlen = len;
  return sb_pool_submit(&w->pool, j);
}

sb_code sb_search_grep(sb_search *s, const char *pattern, size_t n, const sb_path *where) {
  sb_code c = sb_matcher_compile(&s->m, pattern, n, s->literal, s->icase, s->multiline, s->e);
  if (c != SB_OK) {
    s->bad_pattern = c == SB_EINVAL;
    return c;
  }
  s->compiled = true;
  if (!sb_search_start_rules(s, where)) return s->e->code;
  grep_walk w = {.s = s};
  size_t threads = s->threads ? s->threads - 1 : sb_pool_cpus();
  if (!sb_pool_init(&w.pool, threads, s, sb_grep_work, grep_take, sb_grep_tls_new, sb_grep_tls_free)) {
    sb_pool_finish(&w.pool);
    return sb_fail_oom(s->e);
  }
  c = s->fs->be->walk(s->fs, where, SB_WALK_ENTER, grep_cb, &w, s->e);
  if (s->fs->be->fetch_wanted) {
    sb_err fe = {.code = SB_OK};
    sb_code f = s->fs->be->fetch_wanted(s->fs, c == SB_OK && !s->failed, grep_fetched, &w, &fe);
    if (f != SB_OK && c == SB_OK && !s->failed) c = (*s->e = fe).code;
  }
  sb_pool_finish(&w.pool);
  if (w.pool.failed && !s->failed) sb_search_oom(s);
  return c == SB_OK && s->failed ? s->e->code : c;
}

/* ---- snapshot ----------------------------------------------------------- */

static int snap_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref) {
  sb_search *s = ud;
  if (!visit_budget(s)) return SB_WALK_STOP;
  if (!visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
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
