#include "base/glob.h"

#include <stdint.h>
#include <string.h>

/* Decode one UTF-8 code point; invalid bytes decode as themselves (one byte)
 * so matching stays total on arbitrary file names. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned char c = s[0];
  size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len == 0 || len > n) goto bad;
  uint32_t v = len == 1 ? c : c & (0x7F >> len);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) goto bad;
    v = (v << 6) | (s[i] & 0x3F);
  }
  *cp = v;
  return len;
bad:
  *cp = 0x110000u + c; /* outside Unicode: never equals a valid code point */
  return 1;
}

/* Match a class at p[0] == '['. Returns the bytes the class spans, or 0 if
 * it is malformed (then '[' is literal). *hit tells whether cp matched. */
static size_t match_class(const char *p, size_t plen, uint32_t cp, bool *hit) {
  size_t i = 1;
  bool neg = false, any = false;
  if (i < plen && (p[i] == '!' || p[i] == '^')) {
    neg = true;
    i++;
  }
  bool first = true;
  while (i < plen && (p[i] != ']' || first)) {
    first = false;
    uint32_t lo, hi;
    if (p[i] == '\\' && i + 1 < plen) i++;
    i += utf8_decode((const unsigned char *)p + i, plen - i, &lo);
    hi = lo;
    if (i + 1 < plen && p[i] == '-' && p[i + 1] != ']') {
      i++;
      if (p[i] == '\\' && i + 1 < plen) i++;
      i += utf8_decode((const unsigned char *)p + i, plen - i, &hi);
    }
    if (cp >= lo && cp <= hi) any = true;
  }
  if (i >= plen) return 0; /* no closing ']' */
  *hit = any != neg;
  return i + 1;
}

/* One component: p[0..plen) against s[0..slen). */
static bool seg_match(const char *p, size_t plen, const char *s, size_t slen) {
  size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
  while (si < slen) {
    if (pi < plen) {
      char ch = p[pi];
      if (ch == '*') {
        while (pi < plen && p[pi] == '*') pi++;
        star_p = pi;
        star_s = si;
        continue;
      }
      uint32_t cp;
      size_t sl = utf8_decode((const unsigned char *)s + si, slen - si, &cp);
      if (ch == '?') {
        pi++;
        si += sl;
        continue;
      }
      if (ch == '[') {
        bool hit = false;
        size_t span = match_class(p + pi, plen - pi, cp, &hit);
        if (span) {
          if (hit) {
            pi += span;
            si += sl;
            continue;
          }
          goto backtrack;
        }
      }
      if (ch == '\\' && pi + 1 < plen) pi++;
      if (p[pi] == s[si]) {
        pi++;
        si++;
        continue;
      }
    }
  backtrack:
    if (star_p == SIZE_MAX) return false;
    uint32_t cp;
    star_s += utf8_decode((const unsigned char *)s + star_s, slen - star_s, &cp);
    pi = star_p;
    si = star_s;
  }
  while (pi < plen && p[pi] == '*') pi++;
  return pi == plen;
}

/* The component starting at or after *off; false at the end. */
static bool next_seg(const char *s, size_t n, size_t *off, size_t *start, size_t *end) {
  size_t i = *off;
  for (;;) {
    while (i < n && s[i] == '/') i++;
    if (i >= n) {
      *off = n;
      return false;
    }
    size_t b = i;
    while (i < n && s[i] != '/') i++;
    if (i - b == 1 && s[b] == '.') continue; /* "." adds nothing */
    *start = b;
    *end = i;
    *off = i;
    return true;
  }
}

static bool is_globstar(const char *p, size_t b, size_t e) { return e - b == 2 && p[b] == '*' && p[b + 1] == '*'; }

/* Component-level wildcard match with `**` as the star; `prefix` accepts an
 * exhausted path as success (some extension of it may match). */
static bool match_path(const char *pat, size_t plen, const char *path, size_t len, bool prefix) {
  size_t pp = 0, sp = 0, star_pp = SIZE_MAX, star_sp = 0;
  size_t pb, pe, sb, se;
  for (;;) {
    size_t sp_probe = sp;
    bool have_s = next_seg(path, len, &sp_probe, &sb, &se);
    if (!have_s) break;
    size_t pp_probe = pp;
    bool have_p = next_seg(pat, plen, &pp_probe, &pb, &pe);
    if (have_p && is_globstar(pat, pb, pe)) {
      pp = pp_probe;
      star_pp = pp;
      star_sp = sp;
      continue;
    }
    if (have_p && seg_match(pat + pb, pe - pb, path + sb, se - sb)) {
      pp = pp_probe;
      sp = sp_probe;
      continue;
    }
    if (star_pp == SIZE_MAX) return false;
    /* let `**` swallow one more component */
    size_t b2, e2;
    if (!next_seg(path, len, &star_sp, &b2, &e2)) return false;
    pp = star_pp;
    sp = star_sp;
  }
  if (prefix) return true;
  for (;;) {
    if (!next_seg(pat, plen, &pp, &pb, &pe)) return true;
    if (!is_globstar(pat, pb, pe)) return false;
  }
}

/* ---- braces: {a,b} -------------------------------------------------------- */

#define BRACE_PAT_MAX 4096 /* longer patterns keep '{' literal */
#define BRACE_DEPTH_MAX 8 /* brace groups expanded per pattern */
#define BRACE_BUDGET 4096 /* expanded patterns tried per match */

/* The first group "{...,...}" at the top level: '{' at *open, its '}' at
 * *close. false when there is none (a group without ',' is literal). */
static bool find_brace(const char *p, size_t n, size_t *open, size_t *close) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '\\') {
      i++;
    } else if (p[i] == '[') {
      size_t j = i + 1;
      if (j < n && (p[j] == '!' || p[j] == '^')) j++;
      if (j < n && p[j] == ']') j++;
      while (j < n && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
      if (j < n) i = j;
    } else if (p[i] == '{') {
      int depth = 0;
      bool comma = false;
      for (size_t j = i; j < n; j++) {
        if (p[j] == '\\') j++;
        else if (p[j] == '{') depth++;
        else if (p[j] == ',' && depth == 1) comma = true;
        else if (p[j] == '}' && --depth == 0) {
          if (!comma) break;
          *open = i;
          *close = j;
          return true;
        }
      }
    }
  }
  return false;
}

static bool match_braces(const char *pat, size_t plen, const char *path, size_t len, bool prefix, int depth,
                         int *budget) {
  size_t open, close;
  if (depth >= BRACE_DEPTH_MAX || plen > BRACE_PAT_MAX || !find_brace(pat, plen, &open, &close)) {
    if (--*budget < 0) return false;
    return match_path(pat, plen, path, len, prefix);
  }
  char buf[BRACE_PAT_MAX];
  size_t tail = plen - close - 1;
  memcpy(buf, pat, open);
  for (size_t b = open + 1; b <= close && *budget >= 0;) {
    /* the alternative [b, e): up to the next ',' or '}' at this level */
    size_t e = b;
    int d = 0;
    for (; e < close; e++) {
      if (pat[e] == '\\') e++;
      else if (pat[e] == '{') d++;
      else if (pat[e] == '}') d--;
      else if (pat[e] == ',' && d == 0) break;
    }
    if (e > close) e = close;
    size_t n = open + (e - b) + tail;
    memcpy(buf + open, pat + b, e - b);
    memcpy(buf + open + (e - b), pat + close + 1, tail);
    if (match_braces(buf, n, path, len, prefix, depth + 1, budget)) return true;
    b = e + 1;
  }
  return false;
}

bool sb_glob_match(const char *pat, size_t plen, const char *path, size_t len) {
  if (!memchr(pat, '{', plen)) return match_path(pat, plen, path, len, false);
  int budget = BRACE_BUDGET;
  return match_braces(pat, plen, path, len, false, 0, &budget);
}

bool sb_glob_could_match_below(const char *pat, size_t plen, const char *dir, size_t dlen) {
  if (!memchr(pat, '{', plen)) return match_path(pat, plen, dir, dlen, true);
  int budget = BRACE_BUDGET;
  return match_braces(pat, plen, dir, dlen, true, 0, &budget);
}

bool sb_glob_has_magic(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] == '*' || s[i] == '?' || s[i] == '[' || s[i] == '{' || s[i] == '\\') return true;
  return false;
}

size_t sb_glob_static_prefix(const char *pat, size_t plen) {
  size_t off = 0, b, e, keep = 0;
  while (next_seg(pat, plen, &off, &b, &e)) {
    if (sb_glob_has_magic(pat + b, e - b)) break;
    /* the last component may be a literal file name: only directories count */
    size_t probe = off, b2, e2;
    if (!next_seg(pat, plen, &probe, &b2, &e2)) break;
    keep = e;
  }
  return keep;
}
