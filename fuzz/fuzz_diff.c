/* libFuzzer: the line diff. Input: old NUL new (NUL-free halves, as text
 * diffs are). The hunks, applied to old by an independent reader of the
 * format, must give new exactly; the counts must match the lines written;
 * equal inputs give nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "review/diff.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)

/* The next line of s (with its '\n'); its length, 0 at the end. */
static size_t next(const char *s, size_t len, size_t at) {
  if (at >= len) return 0;
  const char *nl = memchr(s + at, '\n', len - at);
  return nl ? (size_t)(nl - (s + at)) + 1 : len - at;
}

/* Apply diff d to a; the result in out (malloc'd), its length returned. */
static size_t apply(const char *a, size_t alen, const char *d, size_t dlen, char **out, uint64_t *add, uint64_t *del) {
  char *r = malloc(alen + dlen + 1);
  size_t rl = 0, ap = 0, dp = 0;
  long aline = 0; /* lines of a consumed */
  size_t last_out = 0, last_len = 0;
  CHECK(r);
  while (dp < dlen) {
    size_t n = next(d, dlen, dp);
    const char *l = d + dp;
    dp += n;
    if (l[0] == '@') {
      long s1, c1 = 1, s2, c2 = 1;
      CHECK(sscanf(l, "@@ -%ld", &s1) == 1);
      const char *p = strchr(l + 4, ',');
      const char *plus = strchr(l + 4, '+');
      if (p && p < plus) c1 = strtol(p + 1, NULL, 10);
      CHECK(plus && sscanf(plus, "+%ld", &s2) == 1);
      (void)c2;
      long start = c1 == 0 ? s1 : s1 - 1; /* lines of a before the hunk */
      CHECK(start >= aline);
      while (aline < start) { /* unchanged lines between hunks */
        size_t k = next(a, alen, ap);
        memcpy(r + rl, a + ap, k);
        last_out = rl, last_len = k;
        rl += k, ap += k, aline++;
      }
    } else if (l[0] == ' ' || l[0] == '-') {
      size_t k = next(a, alen, ap);
      size_t body = n - 1; /* the diff's copy of the line */
      int noeol = dp < dlen && d[dp] == '\\';
      if (noeol) body--, dp += next(d, dlen, dp); /* "\ No newline" follows: the copy's '\n' is ours */
      CHECK(k == body && memcmp(a + ap, l + 1, k) == 0);
      if (l[0] == ' ') {
        memcpy(r + rl, a + ap, k);
        last_out = rl, last_len = k;
        rl += k;
      } else {
        (*del)++;
      }
      ap += k, aline++;
    } else if (l[0] == '+') {
      size_t body = n - 1;
      int noeol = dp < dlen && d[dp] == '\\';
      if (noeol) body--, dp += next(d, dlen, dp);
      memcpy(r + rl, l + 1, body);
      last_out = rl, last_len = body;
      rl += body;
      (*add)++;
    } else {
      CHECK(0 && "a line the format does not have");
    }
  }
  (void)last_out;
  (void)last_len;
  memcpy(r + rl, a + ap, alen - ap); /* the rest is unchanged */
  rl += alen - ap;
  *out = r;
  return rl;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *d = (const char *)data;
  const char *nul = memchr(d, 0, size);
  if (!nul || size > 1 << 16) return 0;
  size_t alen = (size_t)(nul - d), blen = size - alen - 1;
  const char *a = d, *b = nul + 1;
  if (memchr(b, 0, blen)) return 0;
  sb_mem m;
  sb_mem_init_plain(&m);
  sb_buf out = {0};
  sb_diff_stat st;
  sb_err e = {0};
  unsigned ctx = size % 5;
  CHECK(sb_diff_text(&m, a, alen, b, blen, ctx, &out, &st, &e) == SB_OK);
  if (alen == blen && memcmp(a, b, alen) == 0) CHECK(out.len == 0 && st.hunks == 0);
  CHECK(sb_buf_append(&m, &out, "", 1) == 0); /* NUL-terminated for sscanf, not counted */
  out.len--;
  char *r;
  uint64_t add = 0, del = 0;
  size_t rl = apply(a, alen, out.p ? out.p : "", out.len, &r, &add, &del);
  CHECK(rl == blen && memcmp(r, b, blen) == 0);
  CHECK(add == st.added && del == st.removed);
  free(r);
  sb_buf_free(&m, &out);
  return 0;
}
