#include "doc/out.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

bool doc_buf_add(doc_buf *b, const char *s, size_t n) {
  if (n > b->max - b->n) return false;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
  return true;
}

void doc_buf_clear(doc_buf *b) {
  b->n = 0;
  if (b->p) b->p[0] = 0;
}

void doc_buf_free(doc_buf *b) {
  free(b->p);
  b->p = NULL, b->n = b->cap = 0;
}

int doc_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return code;
}

bool doc_buf_puts(doc_buf *b, const char *s) { return doc_buf_add(b, s, strlen(s)); }

bool doc_buf_printf(doc_buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  return k >= 0 && (size_t)k < sizeof tmp && doc_buf_add(b, tmp, (size_t)k);
}

bool doc_buf_json(doc_buf *b, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  bool ok = doc_buf_add(b, "\"", 1);
  for (size_t i = 0; ok && i < n;) {
    size_t run = i; /* bytes that go as they are, in one append */
    while (run < n && u[run] >= 0x20 && u[run] < 0x7f && u[run] != '"' && u[run] != '\\') run++;
    if (run > i) {
      ok = doc_buf_add(b, s + i, run - i), i = run;
      continue;
    }
    unsigned char c = u[i];
    if (c >= 0x80) {
      size_t k = sb_utf8_len(u + i, n - i);
      ok = k ? doc_buf_add(b, s + i, k) : doc_buf_add(b, "\xEF\xBF\xBD", 3);
      i += k ? k : 1;
      continue;
    }
    char esc[8];
    if (c == '"' || c == '\\') esc[0] = '\\', esc[1] = (char)c, esc[2] = 0;
    else if (c == '\n') strcpy(esc, "\\n");
    else if (c == '\t') strcpy(esc, "\\t");
    else if (c == '\r') strcpy(esc, "\\r");
    else snprintf(esc, sizeof esc, "\\u%04x", c);
    ok = doc_buf_puts(b, esc);
    i++;
  }
  return ok && doc_buf_add(b, "\"", 1);
}

bool doc_buf_json0(doc_buf *b, const char *s) { return doc_buf_json(b, s, strlen(s)); }
