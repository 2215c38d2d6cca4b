/* libFuzzer target for the remote protocol's codecs (csrc/remote/json.c and json_write.c,
 * csrc/remote/connect.c):
 * - any bytes parse or are refused without a crash or a leak;
 * - an accepted document's canonical form parses, and writing that again
 *   gives the same bytes (the writer and the parser agree);
 * - every token answers the navigation calls; object fields are found;
 * - base64 of any bytes decodes back to them, and any text that decodes
 *   re-encodes to text that decodes to the same bytes;
 * - a Connect stream split at any points yields the messages (or the
 *   failure) that the whole stream fed at once yields;
 * - so does a tar stream (csrc/remote/tar.c), and every file it reports
 *   whole carries exactly the bytes its header declared. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "remote/json.h"
#include "remote/connect.h"
#include "remote/tar.h"

static void check_json(const sb_mem *m, const char *s, size_t n) {
  sb_json d, d2;
  sb_err e = {0};
  if (sb_json_parse(&d, m, s, n, &e) != SB_OK) {
    if (e.code != SB_EINVAL) __builtin_trap();
    sb_json_free(&d);
    return;
  }
  for (size_t i = 0; i < d.n; i++) {
    int64_t v;
    size_t len;
    (void)sb_json_int(&d, i, &v);
    (void)sb_json_str(&d, i, &len);
    if (d.t[i].next <= i || d.t[i].next > d.n) __builtin_trap();
    if (sb_json_is(&d, i, SB_JOBJ) && d.t[i].len) {
      const char *key = d.text.p + d.t[i + 1].off;
      if (strlen(key) == d.t[i + 1].len && sb_json_field(&d, i, key) == SB_JSON_NONE) __builtin_trap();
    }
  }
  sb_jw w, w2;
  sb_jw_init(&w, m);
  sb_jw_value(&w, &d, 0);
  if (sb_jw_finish(&w, &e) != SB_OK) __builtin_trap();
  if (sb_json_parse(&d2, m, w.b.p, w.b.len, &e) != SB_OK || d2.n != d.n) __builtin_trap();
  sb_jw_init(&w2, m);
  sb_jw_value(&w2, &d2, 0);
  if (sb_jw_finish(&w2, &e) != SB_OK || w2.b.len != w.b.len || memcmp(w.b.p, w2.b.p, w.b.len) != 0)
    __builtin_trap();
  sb_buf_free(m, &w.b);
  sb_buf_free(m, &w2.b);
  sb_json_free(&d2);
  sb_json_free(&d);
}

static void check_b64(const sb_mem *m, const char *s, size_t n) {
  sb_buf enc = {0}, dec = {0};
  if (!sb_b64_encode(m, &enc, s, n)) __builtin_trap();
  if (sb_b64_decode(m, &dec, enc.p ? enc.p : "", enc.len) != SB_OK || dec.len != n ||
      (n && memcmp(dec.p, s, n) != 0))
    __builtin_trap();
  sb_buf_free(m, &enc);
  sb_buf_free(m, &dec);
  /* the input as base64 text */
  if (sb_b64_decode(m, &dec, s, n) == SB_OK) {
    sb_buf again = {0}, back = {0};
    if (!sb_b64_encode(m, &again, dec.p ? dec.p : "", dec.len)) __builtin_trap();
    if (sb_b64_decode(m, &back, again.p ? again.p : "", again.len) != SB_OK || back.len != dec.len ||
        (dec.len && memcmp(back.p, dec.p, dec.len) != 0))
      __builtin_trap();
    sb_buf_free(m, &again);
    sb_buf_free(m, &back);
  }
  sb_buf_free(m, &dec);
}

typedef struct msgs {
  sb_buf all; /* flags, length, bytes of each message, in order */
  const sb_mem *m;
} msgs;

static sb_code keep(void *ud, unsigned flags, const char *msg, size_t len, sb_err *e) {
  msgs *g = ud;
  char h[5] = {(char)flags, (char)(len >> 24), (char)(len >> 16), (char)(len >> 8), (char)len};
  if (sb_buf_append(g->m, &g->all, h, 5) || sb_buf_append(g->m, &g->all, msg, len))
    return sb_fail(e, SB_ENOSPC, "out of memory");
  return SB_OK;
}

/* input: a cut byte (bits choose split points), then the stream */
static void check_stream(const sb_mem *m, const char *s, size_t n) {
  if (n < 1) return;
  unsigned cut = (unsigned char)s[0];
  s++, n--;
  msgs whole = {.m = m}, parts = {.m = m};
  sb_connect_reader a, b;
  sb_connect_reader_init(&a, m, 64);
  sb_connect_reader_init(&b, m, 64);
  sb_err e1 = {0}, e2 = {0};
  sb_code c1 = sb_connect_feed(&a, s, n, keep, &whole, &e1);
  if (c1 == SB_OK) c1 = sb_connect_done(&a, &e1);
  sb_code c2 = SB_OK;
  size_t step = cut % 7 + 1;
  for (size_t i = 0; i < n && c2 == SB_OK; i += step) {
    size_t k = n - i < step ? n - i : step;
    c2 = sb_connect_feed(&b, s + i, k, keep, &parts, &e2);
  }
  if (c2 == SB_OK) c2 = sb_connect_done(&b, &e2);
  if (c1 != c2 || whole.all.len != parts.all.len ||
      (whole.all.len && memcmp(whole.all.p, parts.all.p, whole.all.len) != 0))
    __builtin_trap();
  /* and what was read re-frames into a prefix of the input */
  sb_buf again = {0};
  for (size_t i = 0; i + 5 <= whole.all.len;) {
    size_t len = (size_t)(unsigned char)whole.all.p[i + 1] << 24 | (size_t)(unsigned char)whole.all.p[i + 2] << 16 |
                 (size_t)(unsigned char)whole.all.p[i + 3] << 8 | (unsigned char)whole.all.p[i + 4];
    if (sb_connect_envelope(m, &again, (unsigned char)whole.all.p[i], whole.all.p + i + 5, len) != 0) __builtin_trap();
    i += 5 + len;
  }
  if (again.len > n || (again.len && memcmp(again.p, s, again.len) != 0)) __builtin_trap();
  sb_buf_free(m, &again);
  sb_buf_free(m, &whole.all);
  sb_buf_free(m, &parts.all);
  sb_connect_reader_free(&a);
  sb_connect_reader_free(&b);
}

/* The tar reader's events, as bytes: 'B' name size, the data, 'E' size. */
typedef struct tev {
  const sb_mem *m;
  sb_buf all;
  uint64_t declared, got;
  bool open;
} tev;

static sb_code on_tar(void *ud, sb_tar_ev ev, const char *p, size_t n, uint64_t size, sb_err *e) {
  tev *t = ud;
  char tag = ev == SB_TAR_BEGIN ? 'B' : ev == SB_TAR_DATA ? 'D' : 'E';
  if (ev == SB_TAR_BEGIN) {
    if (t->open || !n || memchr(p, '\0', n) || p[n] != '\0') __builtin_trap(); /* one file at a time, a C string */
    t->open = true;
    t->declared = size;
    t->got = 0;
  } else if (!t->open) {
    __builtin_trap(); /* data or an end outside a file */
  } else if (ev == SB_TAR_DATA) {
    t->got += n;
  } else {
    if (t->got != t->declared) __builtin_trap();
    t->open = false;
  }
  /* data as it is (pieces differ with the feed's; their bytes do not) */
  bool bad = ev == SB_TAR_DATA ? sb_buf_append(t->m, &t->all, p, n) != 0
                               : sb_buf_append(t->m, &t->all, &tag, 1) || sb_buf_append(t->m, &t->all, p ? p : "", n) ||
                                     sb_buf_append(t->m, &t->all, &size, sizeof size);
  return bad ? sb_fail(e, SB_ENOSPC, "out of memory") : SB_OK;
}

/* input: a cut byte (the pieces' size), then the stream */
static void check_tar(const sb_mem *m, const char *s, size_t n) {
  if (n < 1) return;
  size_t step = (unsigned char)s[0] % 97 + 1;
  s++, n--;
  tev whole = {.m = m}, parts = {.m = m};
  sb_tar a, b;
  sb_tar_init(&a, m, on_tar, &whole);
  sb_tar_init(&b, m, on_tar, &parts);
  sb_err e1 = {0}, e2 = {0};
  sb_code c1 = sb_tar_feed(&a, s, n, &e1), c2 = SB_OK;
  for (size_t i = 0; i < n && c2 == SB_OK; i += step) c2 = sb_tar_feed(&b, s + i, n - i < step ? n - i : step, &e2);
  if (c1 != c2 || sb_tar_done(&a) != sb_tar_done(&b) || whole.all.len != parts.all.len ||
      (whole.all.len && memcmp(whole.all.p, parts.all.p, whole.all.len) != 0))
    __builtin_trap();
  sb_buf_free(m, &whole.all);
  sb_buf_free(m, &parts.all);
  sb_tar_free(&a);
  sb_tar_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sb_mem m;
  sb_mem_init_plain(&m);
  if (size < 1) return 0;
  switch (data[0] % 4) {
  case 0: check_b64(&m, (const char *)data + 1, size - 1); break;
  case 1: check_json(&m, (const char *)data + 1, size - 1); break;
  case 2: check_stream(&m, (const char *)data + 1, size - 1); break;
  default: check_tar(&m, (const char *)data + 1, size - 1);
  }
  return 0;
}
