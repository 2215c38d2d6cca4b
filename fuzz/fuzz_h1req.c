/* libFuzzer: where request heads begin in a kept-alive stream (the secrets
 * proxy's framing, net/h1req.c). Input: a split byte, then the stream. The
 * stream fed whole and fed in pieces must give the same heads and bytes
 * and the same verdict; nothing is output that was not input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/h1req.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)

typedef struct sink {
  char *p;
  size_t n, cap;
  unsigned heads;
} sink;

static bool put(sink *s, const char *p, size_t n) {
  if (s->n + n + 1 > s->cap) {
    s->cap = (s->n + n + 1) * 2;
    s->p = realloc(s->p, s->cap);
    CHECK(s->p);
  }
  memcpy(s->p + s->n, p, n);
  s->n += n;
  return true;
}

static bool on_head(void *ud, const char *p, size_t n) {
  sink *s = ud;
  s->heads++;
  CHECK(n >= 4 && memcmp(p + n - 4, "\r\n\r\n", 4) == 0);
  put(s, "[H]", 3);
  return put(s, p, n);
}

static bool on_body(void *ud, const char *p, size_t n) { return put(ud, p, n); }

static int run(const uint8_t *d, size_t len, size_t step, sink *s) {
  sb_mem m;
  sb_mem_init_plain(&m);
  sb_h1req r;
  sb_h1req_init(&r, &m);
  const sb_h1out out = {on_head, on_body, s};
  char why[200];
  int st = 0;
  for (size_t i = 0; i < len && st == 0; i += step)
    st = sb_h1req_feed(&r, (const char *)d + i, len - i < step ? len - i : step, &out, why, sizeof why);
  sb_h1req_free(&r);
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t step = (size_t)data[0] % 17 + 1;
  data++;
  size--;
  sink a = {0}, b = {0};
  int sa = run(data, size, size ? size : 1, &a), sb = run(data, size, step, &b);
  CHECK(sa == sb);
  if (sa == 0) { /* the verdict at the end of the same bytes: the same output */
    CHECK(a.n == b.n && a.heads == b.heads && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0));
    CHECK(a.n <= size + 3 * a.heads);
  }
  free(a.p);
  free(b.p);
  return 0;
}
