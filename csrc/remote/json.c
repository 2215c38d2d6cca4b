#include "remote/json.h"

#include "base/utf8.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- UTF-8 --------------------------------------------------------------- */

static size_t put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) return o[0] = (char)cp, 1;
  if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | cp >> 12);
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | cp >> 18);
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* ---- the parser ---------------------------------------------------------- */

typedef struct parser {
  sb_json *d;
  const char *s;
  size_t n, i;
  sb_err *e;
  sb_code code;
} parser;

static bool bad(parser *p, const char *what) {
  if (p->code == SB_OK) {
    p->code = SB_EINVAL;
    sb_failf(p->e, SB_EINVAL, "invalid JSON at byte %zu: %s", p->i, what);
  }
  return false;
}

static bool oom(parser *p) {
  if (p->code == SB_OK) {
    p->code = SB_ENOSPC;
    sb_fail(p->e, SB_ENOSPC, "out of memory parsing JSON");
  }
  return false;
}

static void skip_ws(parser *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

/* A new token (its index in *at), or false out of memory / tape too long. */
static bool push(parser *p, sb_jtype type, size_t *at) {
  sb_json *d = p->d;
  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 16;
    if (cap > UINT32_MAX) return bad(p, "too many values");
    sb_jtok *t = sb_realloc(d->m, d->t, d->cap * sizeof *t, cap * sizeof *t);
    if (!t) return oom(p);
    d->t = t;
    d->cap = cap;
  }
  *at = d->n++;
  d->t[*at] = (sb_jtok){.type = (uint8_t)type};
  return true;
}

static bool text_room(parser *p, size_t extra) {
  if (p->d->text.len + extra > UINT32_MAX) return bad(p, "document too large");
  return sb_buf_reserve(p->d->m, &p->d->text, extra) == 0 || oom(p);
}

static int hex4(const char *s) {
  int v = 0;
  for (int k = 0; k < 4; k++) {
    char c = s[k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return -1;
  }
  return v;
}

/* \uXXXX at p->i (just past the backslash and 'u'); a high surrogate must be
 * followed by its low half. */
static bool escape_u(parser *p, uint32_t *cp) {
  if (p->n - p->i < 4) return bad(p, "short \\u escape");
  int h = hex4(p->s + p->i);
  if (h < 0) return bad(p, "bad hex digit in \\u escape");
  p->i += 4;
  if (h >= 0xDC00 && h <= 0xDFFF) return bad(p, "a low surrogate without its high half");
  if (h >= 0xD800 && h <= 0xDBFF) {
    if (p->n - p->i < 6 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
      return bad(p, "a high surrogate without its low half");
    int l = hex4(p->s + p->i + 2);
    if (l < 0xDC00 || l > 0xDFFF) return bad(p, "a high surrogate without its low half");
    p->i += 6;
    *cp = 0x10000 + (((uint32_t)h - 0xD800) << 10) + ((uint32_t)l - 0xDC00);
    return true;
  }
  *cp = (uint32_t)h;
  return true;
}

static bool string(parser *p, sb_jtype type) {
  size_t at;
  if (!push(p, type, &at)) return false;
  p->i++; /* the quote */
  /* decoded text is never longer than its source: reserve it once */
  const char *end = memchr(p->s + p->i, '"', p->n - p->i);
  if (!end) return bad(p, "unterminated string");
  if (!text_room(p, (p->n - p->i) + 1)) return false;
  sb_buf *t = &p->d->text;
  size_t start = t->len;
  while (true) {
    if (p->i >= p->n) return bad(p, "unterminated string");
    unsigned char c = (unsigned char)p->s[p->i];
    if (c == '"') break;
    if (c < 0x20) return bad(p, "a control character in a string");
    if (c == '\\') {
      if (++p->i >= p->n) return bad(p, "unterminated string");
      char x = p->s[p->i++];
      const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
      const char *k = x ? strchr(from, x) : NULL;
      if (k) t->p[t->len++] = to[k - from];
      else if (x == 'u') {
        uint32_t cp;
        if (!escape_u(p, &cp)) return false;
        t->len += put_utf8(t->p + t->len, cp);
      } else return bad(p, "unknown escape");
      continue;
    }
    size_t l = sb_utf8_len((const unsigned char *)p->s + p->i, p->n - p->i);
    if (!l) return bad(p, "a string that is not UTF-8");
    memcpy(t->p + t->len, p->s + p->i, l);
    t->len += l;
    p->i += l;
  }
  p->i++;
  p->d->t[at].off = (uint32_t)start;
  p->d->t[at].len = (uint32_t)(t->len - start);
  t->p[t->len++] = '\0';
  p->d->t[at].next = (uint32_t)p->d->n;
  return true;
}

static bool digits(parser *p) {
  size_t from = p->i;
  while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
  return p->i > from;
}

static bool number(parser *p) {
  size_t from = p->i, at;
  if (p->s[p->i] == '-') p->i++;
  if (p->i < p->n && p->s[p->i] == '0') p->i++;
  else if (!digits(p)) return bad(p, "a number without digits");
  if (p->i < p->n && p->s[p->i] == '.') {
    p->i++;
    if (!digits(p)) return bad(p, "no digits after the decimal point");
  }
  if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
    p->i++;
    if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
    if (!digits(p)) return bad(p, "no digits in the exponent");
  }
  size_t len = p->i - from;
  if (!push(p, SB_JNUM, &at) || !text_room(p, len + 1)) return false;
  sb_buf *t = &p->d->text;
  p->d->t[at].off = (uint32_t)t->len;
  p->d->t[at].len = (uint32_t)len;
  memcpy(t->p + t->len, p->s + from, len);
  t->len += len;
  t->p[t->len++] = '\0';
  p->d->t[at].next = (uint32_t)p->d->n;
  return true;
}

static bool word(parser *p, const char *w, sb_jtype type) {
  size_t l = strlen(w), at;
  if (p->n - p->i < l || memcmp(p->s + p->i, w, l) != 0) return bad(p, "unexpected character");
  p->i += l;
  if (!push(p, type, &at)) return false;
  p->d->t[at].next = (uint32_t)p->d->n;
  return true;
}

static bool value(parser *p, int depth);

/* An array or object: its members, then its count and end. */
static bool container(parser *p, int depth, bool obj) {
  if (depth >= SB_JSON_MAX_DEPTH) return bad(p, "nested too deeply");
  size_t at;
  if (!push(p, obj ? SB_JOBJ : SB_JARR, &at)) return false;
  char close = obj ? '}' : ']';
  p->i++;
  uint32_t count = 0;
  skip_ws(p);
  if (p->i < p->n && p->s[p->i] == close) p->i++;
  else
    while (true) {
      if (obj) {
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != '"') return bad(p, "an object key must be a string");
        if (!string(p, SB_JSTR)) return false;
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != ':') return bad(p, "':' expected after a key");
        p->i++;
      }
      if (!value(p, depth + 1)) return false;
      count++;
      skip_ws(p);
      if (p->i >= p->n) return bad(p, obj ? "unterminated object" : "unterminated array");
      if (p->s[p->i] == ',') {
        p->i++;
        continue;
      }
      if (p->s[p->i] != close) return bad(p, obj ? "',' or '}' expected" : "',' or ']' expected");
      p->i++;
      break;
    }
  p->d->t[at].len = count;
  p->d->t[at].next = (uint32_t)p->d->n;
  return true;
}

static bool value(parser *p, int depth) {
  skip_ws(p);
  if (p->i >= p->n) return bad(p, "a value expected");
  char c = p->s[p->i];
  switch (c) {
  case '{': return container(p, depth, true);
  case '[': return container(p, depth, false);
  case '"': return string(p, SB_JSTR);
  case 't': return word(p, "true", SB_JTRUE);
  case 'f': return word(p, "false", SB_JFALSE);
  case 'n': return word(p, "null", SB_JNULL);
  default:
    if (c == '-' || (c >= '0' && c <= '9')) return number(p);
    return bad(p, "unexpected character");
  }
}

sb_code sb_json_parse(sb_json *d, const sb_mem *m, const char *s, size_t n, sb_err *e) {
  memset(d, 0, sizeof *d);
  d->m = m;
  parser p = {.d = d, .s = s, .n = n, .e = e};
  if (value(&p, 0)) {
    skip_ws(&p);
    if (p.i < p.n) bad(&p, "text after the value");
  }
  return p.code;
}

void sb_json_free(sb_json *d) {
  if (d->t) sb_free(d->m, d->t, d->cap * sizeof *d->t);
  sb_buf_free(d->m, &d->text);
  d->t = NULL;
  d->n = d->cap = 0;
}

/* ---- navigation ---------------------------------------------------------- */

bool sb_json_is(const sb_json *d, size_t i, sb_jtype type) { return i < d->n && d->t[i].type == type; }

size_t sb_json_field(const sb_json *d, size_t obj, const char *key) {
  if (!sb_json_is(d, obj, SB_JOBJ)) return SB_JSON_NONE;
  size_t kl = strlen(key), found = SB_JSON_NONE;
  for (size_t k = 0, i = obj + 1; k < d->t[obj].len; k++) {
    const sb_jtok *t = &d->t[i];
    if (t->len == kl && memcmp(d->text.p + t->off, key, kl) == 0) found = i + 1; /* the last wins, as JSON.parse */
    i = d->t[i + 1].next;
  }
  return found;
}

size_t sb_json_elem(const sb_json *d, size_t arr, size_t k) {
  if (!sb_json_is(d, arr, SB_JARR) || k >= d->t[arr].len) return SB_JSON_NONE;
  size_t i = arr + 1;
  while (k--) i = d->t[i].next;
  return i;
}

const char *sb_json_str(const sb_json *d, size_t i, size_t *len) {
  if (!sb_json_is(d, i, SB_JSTR)) return NULL;
  if (len) *len = d->t[i].len;
  return d->text.p + d->t[i].off;
}

bool sb_json_int(const sb_json *d, size_t i, int64_t *out) {
  if (i >= d->n || (d->t[i].type != SB_JNUM && d->t[i].type != SB_JSTR)) return false;
  const char *s = d->text.p + d->t[i].off;
  size_t n = d->t[i].len, k = s[0] == '-';
  if (n == k || n - k > 19) return false;
  uint64_t v = 0;
  for (; k < n; k++) {
    if (s[k] < '0' || s[k] > '9') return false;
    v = v * 10 + (uint64_t)(s[k] - '0');
  }
  bool neg = s[0] == '-';
  if (v > (uint64_t)INT64_MAX + neg) return false;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return true;
}

bool sb_json_bool(const sb_json *d, size_t i, bool dflt) {
  if (sb_json_is(d, i, SB_JTRUE)) return true;
  if (sb_json_is(d, i, SB_JFALSE)) return false;
  return dflt;
}
