#include "net/h1req.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/head.h"
#include "plat/bytes.h"

enum { HEAD, BODY, CHUNK_LINE, CHUNK_DATA, TRAILER, RAW };

#define LINE_MAX_ 4096 /* a chunk-size line or one trailer line */

void sb_h1req_init(sb_h1req *r, const sb_mem *m) {
  memset(r, 0, sizeof *r);
  r->mem = m;
}

void sb_h1req_free(sb_h1req *r) {
  if (r->buf) {
    sb_wipe(r->buf, r->cap);
    sb_free(r->mem, r->buf, r->cap);
  }
  r->buf = NULL;
  r->len = r->cap = 0;
}

static bool gather(sb_h1req *r, char ch) {
  if (r->len == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 1024;
    char *b = sb_malloc(r->mem, cap);
    if (!b) return false;
    if (r->buf) {
      memcpy(b, r->buf, r->len);
      sb_wipe(r->buf, r->cap);
      sb_free(r->mem, r->buf, r->cap);
    }
    r->buf = b;
    r->cap = cap;
  }
  r->buf[r->len++] = ch;
  return true;
}

static bool ends_blank(const sb_h1req *r) { return r->len >= 4 && memcmp(r->buf + r->len - 4, "\r\n\r\n", 4) == 0; }

/* A request's framing, from its head: the state after it. 0 or a status. */
static int framing(sb_h1req *r, char *why, size_t wl) {
  char method[32], target[8192], v[64];
  if (!sb_http_head_valid(r->buf, r->len) ||
      !sb_http_request_line(r->buf, r->len, method, sizeof method, target, sizeof target)) {
    snprintf(why, wl, "sandbox proxy: malformed request head");
    return 400;
  }
  bool te = sb_http_header(r->buf, r->len, "Transfer-Encoding", v, sizeof v);
  if (te) { /* only one coding is read: chunked, alone, in one header */
    char more[8];
    if (strcasecmp(v, "chunked") != 0 ||
        sb_http_header_nth(r->buf, r->len, "Transfer-Encoding", 1, more, sizeof more) ||
        sb_http_header(r->buf, r->len, "Content-Length", more, sizeof more)) {
      snprintf(why, wl, "sandbox proxy: Transfer-Encoding other than a lone 'chunked' (or with Content-Length)");
      return 501;
    }
    r->state = CHUNK_LINE;
    return 0;
  }
  r->state = HEAD;
  r->left = 0;
  for (unsigned i = 0; sb_http_header_nth(r->buf, r->len, "Content-Length", i, v, sizeof v); i++) {
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (!v[0] || *end || v[0] == '-' || v[0] == '+' || n > (1ULL << 62) || (i > 0 && n != r->left)) {
      snprintf(why, wl, "sandbox proxy: bad or conflicting Content-Length");
      return 400;
    }
    r->left = n;
  }
  if (r->left) r->state = BODY;
  if (strcmp(method, "CONNECT") == 0 || sb_http_header(r->buf, r->len, "Upgrade", v, sizeof v))
    r->state = RAW; /* what follows (if the server agrees) is not HTTP */
  return 0;
}

/* A chunk-size line ("1a;ext=x\r\n"): the chunk's bytes, or -1. */
static long long chunk_size(const char *p, size_t n) {
  unsigned long long v = 0;
  size_t i = 0;
  for (; i < n && p[i] && strchr("0123456789abcdefABCDEF", p[i]); i++) {
    if (v >> 58) return -1;
    v = v * 16 + (unsigned)(p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
  }
  if (i == 0 || (p[i] != ';' && p[i] != '\r' && p[i] != ' ' && p[i] != '\t')) return -1;
  return (long long)v;
}

int sb_h1req_feed(sb_h1req *r, const char *p, size_t n, const sb_h1out *out, char *why, size_t wl) {
  size_t i = 0;
  while (i < n) {
    if (r->state == RAW) return out->body(out->ud, p + i, n - i) ? 0 : -1;
    if (r->state == BODY || r->state == CHUNK_DATA) {
      size_t take = n - i < r->left ? n - i : (size_t)r->left;
      if (!out->body(out->ud, p + i, take)) return -1;
      i += take;
      r->left -= take;
      if (!r->left) r->state = r->state == BODY ? HEAD : CHUNK_LINE;
      continue;
    }
    /* HEAD, CHUNK_LINE, TRAILER: gather up to the line or head's end */
    const char *nl = memchr(p + i, '\n', n - i);
    size_t take = nl ? (size_t)(nl - (p + i)) + 1 : n - i;
    size_t max = r->state == HEAD ? SB_HEAD_MAX : LINE_MAX_;
    for (size_t k = 0; k < take; k++) {
      if (r->len >= max) {
        snprintf(why, wl,
                 r->state == HEAD ? "sandbox proxy: the request head is too long"
                                  : "sandbox proxy: a chunk line is too long");
        return r->state == HEAD ? 431 : 400;
      }
      if (!gather(r, p[i + k])) {
        snprintf(why, wl, "sandbox proxy: out of memory");
        return 503;
      }
    }
    i += take;
    if (!nl) break;
    if (r->state == HEAD) {
      if (r->len == 2 && memcmp(r->buf, "\r\n", 2) == 0) { /* a stray CRLF between requests (RFC 9112 2.2) */
        r->len = 0;
        continue;
      }
      if (!ends_blank(r)) continue;
      int st = framing(r, why, wl);
      if (st) return st;
      if (!out->head(out->ud, r->buf, r->len)) return -1;
    } else if (r->state == CHUNK_LINE) {
      long long size = chunk_size(r->buf, r->len);
      if (size < 0) {
        snprintf(why, wl, "sandbox proxy: bad chunk size");
        return 400;
      }
      if (!out->body(out->ud, r->buf, r->len)) return -1;
      r->state = size ? CHUNK_DATA : TRAILER;
      r->left = size ? (uint64_t)size + 2 : 0; /* the data and its CRLF */
    } else { /* TRAILER: lines until an empty one */
      if (!out->body(out->ud, r->buf, r->len)) return -1;
      if (r->len == 2 && r->buf[0] == '\r') r->state = HEAD;
    }
    sb_wipe(r->buf, r->len);
    r->len = 0;
  }
  return 0;
}
