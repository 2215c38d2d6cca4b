#include "search/search.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/glob.h"
#include "search/pool.h"

#define MAX_VISITS 2000000 /* entries a single search may look at */
#define GREP_TEXT_MAX 2000 /* bytes of a matching line kept */
#define GREP_BINARY_PROBE 8192 /* a NUL in the first block: a binary file */

/* Records (in results, and in a job's out without the path): the header,
 * the path, the text. */
typedef struct rec {
  uint32_t plen, line, tlen, end;
  int32_t kind;
  double mtime;
} rec;

void sb_search_init(sb_search *s, sb_fs *fs, sb_err *e, size_t max) {
  memset(s, 0, sizeof *s);
  s->fs = fs;
  s->e = e;
  s->max = max;
  sb_ignore_init(&s->ig, &fs->mem);
}

void sb_search_free(sb_search *s) {
  if (!s->fs) return;
  if (s->compiled) sb_matcher_free(&s->m);
  s->compiled = false;
  sb_ignore_free(&s->ig);
  sb_buf_free(&s->fs->mem, &s->results);
  sb_buf_free(&s->fs->mem, &s->index);
  sb_buf_trim(&s->fs->mem, &s->fs->scratch, 1 << 20); /* the backend's reads */
  s->fs = NULL;
}

static bool oom(sb_search *s) {
  sb_fail_oom(s->e);
  s->failed = true;
  return false;
}

static bool add_rec(sb_search *s, const char *path, size_t plen, const rec *h, const char *text) {
  rec r = *h;
  r.plen = (uint32_t)plen;
  const sb_mem *m = &s->fs->mem;
  sb_buf *out = &s->results;
  if (sb_buf_append(m, out, &r, sizeof r) != 0 || sb_buf_append(m, out, path, plen) != 0 ||
      sb_buf_append(m, out, text, r.tlen) != 0)
    return oom(s);
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

sb_code sb_search_pattern(const char *cwd, size_t cwdlen, const char *raw, size_t n,
                          char *out, size_t *olen, sb_err *e) {
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
    if (cl == 2 && raw[b] == '.' && raw[b + 1] == '.')
      return sb_fail(e, SB_EINVAL, "patterns may not contain '..'");
    if (len) out[len++] = '/';
    memcpy(out + len, raw + b, cl);
    len += cl;
  }
  out[len] = '\0';
  *olen = len;
  return SB_OK;
}

/* ---- what a walk leaves out: ignore files, hidden entries (SPEC §12) ------ */

static const char *const IGNORE_FILES[] = {".gitignore", ".ignore"}; /* lowest precedence first */

/* Add the rules of ignore file `name` in directory dir (ENOENT: none). */
static bool load_ignore(sb_search *s, const char *dir, size_t dlen, const char *name) {
  char buf[SB_PATH_MAX + 1];
  size_t nl = strlen(name);
  if (dlen + 1 + nl > SB_PATH_MAX) return true;
  memcpy(buf, dir, dlen);
  size_t n = dlen;
  if (dlen) buf[n++] = '/';
  memcpy(buf + n, name, nl);
  n += nl;
  sb_path p;
  sb_err ignore;
  sb_bytes v;
  if (sb_path_from_rel(&p, buf, n, &ignore) != SB_OK) return true;
  if (!sb_policy_visible(s->fs->policy, buf, n, SB_KIND_FILE)) return true;
  if (s->fs->be->read(s->fs, &p, &v, &ignore) != SB_OK) return true; /* none, or unreadable */
  if (!sb_ignore_add(&s->ig, dir, dlen, v.p, v.len)) return oom(s);
  return true;
}

/* The rules of directory dir, read when its listing holds the files. */
static bool load_listed_rules(sb_search *s, const char *dir, size_t dlen, const sb_dirlist *dl) {
  bool has[2] = {false, false}, git = false;
  for (size_t i = 0; i < dl->n; i++) {
    const sb_dirent *d = &dl->v[i];
    if (d->name[0] != '.') continue;
    for (size_t k = 0; k < 2; k++)
      if (d->type == SB_T_FILE && d->namelen == strlen(IGNORE_FILES[k]) && memcmp(d->name, IGNORE_FILES[k], d->namelen) == 0)
        has[k] = true;
    if (d->type == SB_T_DIR && d->namelen == 4 && memcmp(d->name, ".git", 4) == 0) git = true;
  }
  if (dlen == 0 && git && !load_ignore(s, "", 0, ".git/info/exclude")) return false;
  for (size_t k = 0; k < 2; k++)
    if (has[k] && !load_ignore(s, dir, dlen, IGNORE_FILES[k])) return false;
  return true;
}

/* The rules of a directory the walk does not list (above its start). */
static bool load_dir_rules(sb_search *s, const char *dir, size_t dlen) {
  if (dlen == 0 && !load_ignore(s, "", 0, ".git/info/exclude")) return false;
  for (size_t i = 0; i < sizeof IGNORE_FILES / sizeof *IGNORE_FILES; i++)
    if (!load_ignore(s, dir, dlen, IGNORE_FILES[i])) return false;
  return true;
}

/* Rules of the directories above the start (the start's own come with its
 * listing); a named file is judged by its own directory's too. */
static bool load_start_rules(sb_search *s, const sb_path *start) {
  s->start_len = start->len;
  if (s->everything) return true;
  size_t upto = start->ncomp ? start->ncomp - 1 : 0; /* the directories strictly above */
  if (start->ncomp && !load_dir_rules(s, "", 0)) return false;
  for (size_t i = 1; i <= upto; i++) {
    size_t dlen = (size_t)start->off[i] - 1;
    if (!load_dir_rules(s, start->buf, dlen)) return false;
  }
  return true;
}

/* A directory's entries are about to come: leave the levels it is not
 * inside, take its rules. */
static int on_enter(sb_search *s, const char *rel, size_t rlen, const void *ref) {
  if (s->everything) return SB_WALK_CONTINUE;
  if (rlen) sb_ignore_leave(&s->ig, rel, rlen);
  if (rlen && sb_ignore_match(&s->ig, rel, rlen, true) && rlen != s->start_len) return SB_WALK_SKIP;
  return load_listed_rules(s, rel, rlen, ref) ? SB_WALK_CONTINUE : SB_WALK_STOP;
}

/* Is this entry left out? */
static bool left_out(sb_search *s, const char *rel, size_t rlen, const sb_dirent *ent) {
  if (s->everything || rlen == s->start_len) return false; /* a named start is searched */
  bool dir = ent->type == SB_T_DIR;
  if (ent->name[0] == '.') {
    if (dir && ent->namelen == 4 && memcmp(ent->name, ".git", 4) == 0) return true;
    if (!s->hidden) return true;
  }
  sb_ignore_leave(&s->ig, rel, rlen);
  return sb_ignore_match(&s->ig, rel, rlen, dir);
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

static int glob_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent,
                   const void *ref) {
  sb_search *s = ud;
  if (ent->type == SB_T_ENTER) return on_enter(s, rel, rlen, ref);
  if (!visit_budget(s)) return SB_WALK_STOP;
  if (!visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
  if (left_out(s, rel, rlen, ent)) return SB_WALK_SKIP;
  if (sb_glob_match(s->pat, s->plen, rel, rlen) && !add_glob(s, rel, rlen, ent->type))
    return SB_WALK_STOP;
  if (ent->type == SB_T_DIR && sb_glob_could_match_below(s->pat, s->plen, rel, rlen))
    return SB_WALK_CONTINUE;
  return SB_WALK_SKIP;
}

sb_code sb_search_glob(sb_search *s, const sb_path *start) {
  sb_fs *fs = s->fs;
  sb_stat st;
  sb_code c = fs->be->stat(fs, start, true, &st, s->e); /* a link in the prefix is followed, as the walk follows its start */
  if (c == SB_OK && st.type != SB_T_DIR) c = SB_ENOTDIR; /* a prefix names directories */
  if (c == SB_OK && !load_start_rules(s, start)) c = s->e->code;
  if (c == SB_OK) {
    /* the walk visits what is below the start; the start itself may match */
    if (start->len && sb_glob_match(s->pat, s->plen, start->buf, start->len))
      add_glob(s, start->buf, start->len, SB_T_DIR);
    c = fs->be->walk(fs, start, SB_WALK_ENTER, glob_cb, s, s->e);
  }
  if (c == SB_ENOENT || c == SB_ENOTDIR || c == SB_EACCES) c = SB_OK; /* nothing matches */
  return s->failed ? s->e->code : c;
}

/* ---- grep: the work on one file (any thread) ---------------------------- */

typedef struct tls {
  sb_mstate ms;
  sb_wbuf file;
} tls;

static void *tls_new(void *ctx) {
  sb_search *s = ctx;
  tls *t = calloc(1, sizeof *t);
  if (t && !sb_mstate_init(&t->ms, &s->m)) {
    free(t);
    t = NULL;
  }
  return t;
}

static void tls_free(void *p) {
  tls *t = p;
  sb_mstate_free(&t->ms);
  sb_wbuf_free(&t->file);
  free(t);
}

/* The bytes of j's file in t->file (false: skip the file). One read
 * usually does it: a regular file reads short only at its end (workers
 * take no signals), so neither fstat nor a read that returns 0 is needed;
 * the size limit is checked on what arrives. */
static bool read_job(sb_search *s, tls *t, sb_job *j) {
  uint64_t max = s->fs->policy->max_read_bytes;
  t->file.len = 0;
  if (!sb_wbuf_reserve(&t->file, 1u << 16)) return false;
  for (;;) {
    size_t want = t->file.cap - t->file.len - 1;
    ssize_t n = read(j->fd, t->file.p + t->file.len, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    t->file.len += (size_t)n;
    if (t->file.len > max) return false; /* above max_read_bytes: not searched */
    if ((size_t)n < want) break;
    if (!sb_wbuf_reserve(&t->file, t->file.cap * 2)) return false;
  }
  t->file.p[t->file.len] = '\0';
  return true;
}

/* The scan's state for one file: line numbers and context lines. */
typedef struct scan {
  sb_search *s;
  sb_job *j;
  const char *buf;
  size_t len, end;   /* end: without the final newline */
  size_t at_off;     /* a line start whose number is known */
  uint32_t at_line;
  size_t shown;      /* lines before this offset are in out already */
  uint32_t after_left;
  size_t matches;
  bool more, oom;
} scan;

static uint32_t line_of(scan *c, size_t off) {
  c->at_line += (uint32_t)sb_count_newlines(c->buf + c->at_off, off - c->at_off);
  c->at_off = off;
  return c->at_line;
}

static void put(scan *c, int kind, uint32_t line, uint32_t end, size_t ls, size_t le) {
  size_t n = le - ls;
  if (n && c->buf[ls + n - 1] == '\r') n--;
  if (n > GREP_TEXT_MAX) n = GREP_TEXT_MAX;
  rec r = {.line = line, .end = end, .tlen = (uint32_t)n, .kind = kind};
  if (!sb_wbuf_append(&c->j->out, &r, sizeof r) || !sb_wbuf_append(&c->j->out, c->buf + ls, n)) c->oom = true;
}

/* Lines after the last match, up to `upto` (a later line's start). */
static void flush_after(scan *c, size_t upto) {
  while (c->after_left && c->shown <= c->end && c->shown < upto) {
    size_t ls = c->shown;
    const char *nl = memchr(c->buf + ls, '\n', c->len - ls);
    size_t le = nl ? (size_t)(nl - c->buf) : c->len;
    put(c, SB_HIT_CONTEXT, line_of(c, ls), 0, ls, le);
    c->shown = le + 1;
    c->after_left--;
  }
  c->after_left = 0;
}

static bool on_match(void *ud, size_t ls, size_t le) {
  scan *c = ud;
  sb_search *s = c->s;
  if (c->matches >= s->max) { /* no file gives more than the whole search keeps */
    c->more = true;
    return false;
  }
  c->matches++;
  if (s->mode != SB_GREP_CONTENT) return s->mode == SB_GREP_COUNT; /* files: one is enough */
  flush_after(c, ls);
  if (s->before && ls > c->shown) {
    /* up to `before` lines back, none shown already */
    size_t b = ls;
    unsigned k = 0;
    while (k < s->before && b > c->shown) {
      const char *nl = b >= 2 ? memrchr(c->buf + c->shown, '\n', b - 1 - c->shown) : NULL;
      b = nl ? (size_t)(nl - c->buf) + 1 : c->shown;
      k++;
    }
    while (b < ls) {
      const char *nl = memchr(c->buf + b, '\n', ls - b);
      size_t e = nl ? (size_t)(nl - c->buf) : ls;
      put(c, SB_HIT_CONTEXT, line_of(c, b), 0, b, e);
      b = e + 1;
    }
  }
  uint32_t line = line_of(c, ls);
  uint32_t last = s->multiline ? line + (uint32_t)sb_count_newlines(c->buf + ls, le - ls) : line;
  put(c, SB_HIT_MATCH, line, last, ls, le);
  c->shown = le + 1;
  c->after_left = s->after;
  return !c->oom;
}

static void grep_work(void *ctx, void *tp, sb_job *j) {
  sb_search *s = ctx;
  tls *t = tp;
  const char *buf = j->data;
  size_t len = j->dlen;
  if (j->fd >= 0) {
    bool ok = read_job(s, t, j);
    close(j->fd);
    j->fd = -1;
    if (!ok) return;
    buf = t->file.p;
    len = t->file.len;
  }
  if (memchr(buf, '\0', len < GREP_BINARY_PROBE ? len : GREP_BINARY_PROBE)) return; /* binary */
  scan c = {.s = s, .j = j, .buf = buf, .len = len, .at_line = 1};
  c.end = len && buf[len - 1] == '\n' ? len - 1 : len;
  int rc = sb_matcher_scan(&s->m, &t->ms, buf, len, on_match, &c);
  if (s->mode == SB_GREP_CONTENT) flush_after(&c, len + 1);
  if (rc < 0 || c.oom) {
    j->rc = c.oom ? PCRE2_ERROR_NOMEMORY : rc;
    return;
  }
  if (s->mode != SB_GREP_CONTENT && c.matches) {
    rec r = {.line = (uint32_t)c.matches, .kind = s->mode == SB_GREP_COUNT ? SB_HIT_COUNT : SB_HIT_MATCH};
    if (!sb_wbuf_append(&j->out, &r, sizeof r)) j->rc = PCRE2_ERROR_NOMEMORY;
  }
  j->more = c.more; /* more matches than were kept */
}

/* ---- grep: the walk and the results (main thread) ----------------------- */

/* A finished file: its records join the results, in walk order. */
static bool grep_take(void *ctx, sb_job *j) {
  sb_search *s = ctx;
  if (j->rc) {
    if (j->rc == PCRE2_ERROR_NOMEMORY) return oom(s);
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(j->rc, msg, sizeof msg);
    sb_failf(s->e, SB_EINVAL, "the pattern could not be matched in '%s': %s (simplify the pattern)", j->path,
             (const char *)msg);
    s->failed = true;
    return false;
  }
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

static int grep_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent,
                   const void *ref) {
  grep_walk *w = ud;
  sb_search *s = w->s;
  if (ent->type == SB_T_ENTER) return on_enter(s, rel, rlen, ref);
  if (!visit_budget(s)) return SB_WALK_STOP;
  if (!visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
  if (ent->type != SB_T_FILE && ent->type != SB_T_DIR) return SB_WALK_SKIP;
  if (left_out(s, rel, rlen, ent)) return SB_WALK_SKIP;
  if (ent->type == SB_T_DIR) return SB_WALK_CONTINUE;
  if (!filters_pass(s, rel, rlen, ent)) return SB_WALK_CONTINUE;
  sb_job *j = calloc(1, sizeof *j);
  if (!j || !(j->path = malloc(rlen + 1))) {
    free(j);
    return oom(s), SB_WALK_STOP;
  }
  memcpy(j->path, rel, rlen);
  j->path[rlen] = '\0';
  j->plen = rlen;
  j->fd = -1;
  if (s->fs->be->want_ref) { /* fetched with the others once the walk is done (grep_fetched) */
    if (s->fs->be->want_ref(s->fs, ref, j)) return SB_WALK_CONTINUE;
    sb_job_free(j);
    return oom(s), SB_WALK_STOP;
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
    oom(w->s);
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
  if (!load_start_rules(s, where)) return s->e->code;
  grep_walk w = {.s = s};
  size_t threads = s->threads ? s->threads - 1 : sb_pool_cpus();
  if (!sb_pool_init(&w.pool, threads, s, grep_work, grep_take, tls_new, tls_free)) {
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
  if (w.pool.failed && !s->failed) oom(s);
  return c == SB_OK && s->failed ? s->e->code : c;
}

/* ---- snapshot ----------------------------------------------------------- */

static int snap_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent,
                   const void *ref) {
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
    sb_failf(s->e, SB_ENOTSUP, "snapshot would exceed %llu bytes (option max_bytes)",
             (unsigned long long)s->max_bytes);
    s->failed = true;
    return SB_WALK_STOP;
  }
  if (!add_path(s, rel, rlen, SB_HIT_MATCH)) return SB_WALK_STOP;
  /* where a file costs a round trip, its bytes come with the others
   * (fetch_wanted); the tag is its hit's number, from 1 */
  if (s->fs->be->want_ref && !s->fs->be->want_ref(s->fs, ref, (void *)(uintptr_t)s->count))
    return oom(s), SB_WALK_STOP;
  return SB_WALK_CONTINUE;
}

sb_code sb_search_snapshot(sb_search *s) {
  sb_path root;
  sb_path_from_rel(&root, "", 0, s->e);
  sb_code c = s->fs->be->walk(s->fs, &root, SB_WALK_SIZES, snap_cb, s, s->e);
  return c == SB_OK && s->failed ? s->e->code : c;
}
