/* grep on the main thread: the walk that hands files to the pool, and the
 * results it takes back in walk order (rg's records, or "lines" mode's
 * text). The work on one file is grep_job.c's. */
#include "search/search.h"
#include "search/search_impl.h"

#include <stdlib.h>
#include <string.h>

#include "base/glob.h"

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
    if (!sb_search_add_rec(s, j->path, j->plen, &r, text)) return false;
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
  if (!sb_search_visit(s)) return SB_WALK_STOP;
  if (!sb_search_visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
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
