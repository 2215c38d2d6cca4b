/* grep's work on one file, on any worker thread: read it (or take the
 * bytes a backend fetched), skip a binary one, scan it with the matcher,
 * and record matching and context lines in the job's own buffer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/find.h"
#include "search/search_impl.h"
#include "plat/bytes.h"

typedef struct tls {
  sb_mstate ms;
  sb_wbuf file;
} tls;

void *sb_grep_tls_new(void *ctx) {
  sb_search *s = ctx;
  tls *t = calloc(1, sizeof *t);
  if (t && !sb_mstate_init(&t->ms, &s->m)) {
    free(t);
    t = NULL;
  }
  return t;
}

void sb_grep_tls_free(void *p) {
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
  size_t len, end; /* end: without the final newline */
  size_t at_off; /* a line start whose number is known */
  uint32_t at_line;
  size_t shown; /* lines before this offset are in out already */
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
      const char *nl = b >= 2 ? sb_memrchr(c->buf + c->shown, '\n', b - 1 - c->shown) : NULL;
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

void sb_grep_work(void *ctx, void *tp, sb_job *j) {
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
