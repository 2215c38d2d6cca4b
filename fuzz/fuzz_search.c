/* libFuzzer target for the search engine's parts (SPEC §12):
 * - sb_find agrees with memmem on every needle and haystack;
 * - sb_find_digits agrees with a byte-by-byte count of digit runs;
 * - the required literal of a pattern is in every line the pattern
 *   matches, and so is its required run of digits where the line is ASCII
 *   (the prefilters never skip a match);
 * - a scan with the prefilter finds the same lines as PCRE2 line by line;
 * - ignore rules parse and judge any bytes without a crash, the same way
 *   twice.
 * Input: pattern '\n' subject (the rest), or for ignore rules: the
 * first byte selects the mode. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search/find.h"
#include "search/ignore.h"
#include "search/matcher.h"

static void check_find(const char *h, size_t n, const char *nd, size_t m) {
  const char *a = memmem(h, n, nd, m), *b = sb_find(h, n, nd, m);
  if (a != b) __builtin_trap();
}

/* the first run of `run` ASCII digits, byte by byte */
static const char *digits_ref(const char *h, size_t n, size_t run) {
  for (size_t i = 0, have = 0; i < n; i++) {
    have = h[i] >= '0' && h[i] <= '9' ? have + 1 : 0;
    if (have == run) return h + i + 1 - run;
  }
  return NULL;
}

static bool ascii(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] >= 0x80) return false;
  return true;
}

typedef struct lines {
  size_t starts[4096];
  size_t n;
} lines;

static bool collect(void *ud, size_t s, size_t e) {
  (void)e;
  lines *l = ud;
  if (l->n < 4096) l->starts[l->n++] = s;
  return true;
}

/* Patterns whose meaning depends on more than their line: a whole-buffer
 * scan and a line alone may rightly disagree on them. ("(*" constructs are
 * checked: the matcher runs every one of them per line.) */
static bool line_bound(const char *pat, size_t pn) {
  static const char *const whole[] = {"(?C", "\\R", "\\v", "\\h"};
  for (size_t i = 0; i < sizeof whole / sizeof *whole; i++)
    if (memmem(pat, pn, whole[i], strlen(whole[i]))) return false;
  return true;
}

static void check_pattern(const char *pat, size_t pn, const char *raw, size_t sn) {
  if (!line_bound(pat, pn)) return;
  /* the scan's contract (search/matcher.h): a NUL after the subject */
  char *sub = malloc(sn + 1);
  if (!sub) return;
  memcpy(sub, raw, sn);
  sub[sn] = '\0';
  sb_matcher m;
  sb_err e = {0};
  if (sb_matcher_compile(&m, pat, pn, false, false, false, &e) != SB_OK) {
    free(sub);
    return;
  }
  sb_mstate st;
  if (!sb_mstate_init(&st, &m)) {
    sb_matcher_free(&m);
    free(sub);
    return;
  }
  lines got = {0};
  int rc = sb_matcher_scan(&m, &st, sub, sn, collect, &got);
  if (rc == 0) {
    /* every line on its own, through PCRE2 directly */
    size_t k = 0, end = sn && sub[sn - 1] == '\n' ? sn - 1 : sn;
    bool whole = true;
    for (size_t ls = 0; sn && ls <= end;) {
      const char *nl = memchr(sub + ls, '\n', sn - ls);
      size_t le = nl ? (size_t)(nl - sub) : sn;
      int r = pcre2_match(m.code, (PCRE2_SPTR)(sub + ls), le - ls, 0, 0, st.md, st.mc);
      if (r == PCRE2_ERROR_MATCHLIMIT || r == PCRE2_ERROR_DEPTHLIMIT || r == PCRE2_ERROR_HEAPLIMIT) {
        whole = false;
        break;
      }
      bool hit = r >= 0;
      if (hit) {
        /* the prefilter's literal is in the line */
        if (m.prelen && !memmem(sub + ls, le - ls, m.pre, m.prelen)) __builtin_trap();
        if (m.digits && ascii(sub + ls, le - ls) && !digits_ref(sub + ls, le - ls, m.digits)) __builtin_trap();
        if (k >= got.n || got.starts[k] != ls) __builtin_trap();
        k++;
      }
      ls = le + 1;
    }
    /* and the scan reported no line that does not match alone */
    if (whole && got.n < 4096 && k != got.n) __builtin_trap();
  }
  sb_mstate_free(&st);
  sb_matcher_free(&m);
  free(sub);
}

static void check_ignore(const char *text, size_t n) {
  sb_mem mem;
  sb_mem_init_plain(&mem);
  sb_ignore ig;
  sb_ignore_init(&ig, &mem);
  const char *nl = memchr(text, '\0', n); /* rules \0 path */
  size_t tl = nl ? (size_t)(nl - text) : n;
  if (sb_ignore_add(&ig, "", 0, text, tl) && sb_ignore_add(&ig, "d", 1, text, tl)) {
    const char *path = nl ? nl + 1 : "a/b";
    size_t pl = nl ? n - tl - 1 : 3;
    if (pl && pl < 4096 && !memchr(path, '\0', pl)) {
      bool a = sb_ignore_match(&ig, path, pl, false), b = sb_ignore_match(&ig, path, pl, false);
      if (a != b) __builtin_trap();
      sb_ignore_leave(&ig, path, pl);
      (void)sb_ignore_match(&ig, path, pl, true);
    }
  }
  sb_ignore_free(&ig);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const char *d = (const char *)data + 1;
  size_t n = size - 1;
  switch (data[0] % 3) {
  case 0: {
    size_t m = n ? (unsigned char)d[0] % 8 : 0;
    if (m + 1 > n) return 0;
    check_find(d + 1 + m, n - 1 - m, d + 1, m);
    size_t run = n ? 1 + (unsigned char)d[0] % SB_FIND_DIGITS_MAX : 1;
    if (sb_find_digits(d, n, run) != digits_ref(d, n, run)) __builtin_trap();
    break;
  }
  case 1: {
    const char *nl = memchr(d, '\n', n);
    if (!nl || nl - d > 200) return 0;
    check_pattern(d, (size_t)(nl - d), nl + 1, n - (size_t)(nl - d) - 1);
    break;
  }
  default:
    check_ignore(d, n);
  }
  return 0;
}
