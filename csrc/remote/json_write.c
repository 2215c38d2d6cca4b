/* The remote protocol's JSON writer and base64 (remote/json.h); the parser
 * and the navigation are in json.c. */
#include "remote/json.h"

#include "base/utf8.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- the writer ---------------------------------------------------------- */

void sb_jw_init(sb_jw *w, const sb_mem *m) { *w = (sb_jw){.m = m}; }

static void jw_fail(sb_jw *w, sb_code c, const char *why) {
  if (w->code == SB_OK) w->code = c, w->why = why;
}

static void jw_put(sb_jw *w, const char *s, size_t n) {
  if (w->code == SB_OK && sb_buf_append(w->m, &w->b, s, n) != 0) jw_fail(w, SB_ENOSPC, "out of memory writing JSON");
}

/* Before a value: the comma between siblings, nothing after a key. */
static bool jw_value(sb_jw *w) {
  if (w->code != SB_OK) return false;
  if (w->need_comma && !w->after_key) jw_put(w, ",", 1);
  w->after_key = false;
  w->need_comma = true;
  return w->code == SB_OK;
}

static void jw_open(sb_jw *w, char c) {
  if (!jw_value(w)) return;
  if (w->depth >= SB_JSON_MAX_DEPTH) return jw_fail(w, SB_EINVAL, "JSON nested too deeply");
  w->open[w->depth++] = c;
  jw_put(w, &c, 1);
  w->need_comma = false;
}

void sb_jw_begin_obj(sb_jw *w) { jw_open(w, '{'); }
void sb_jw_begin_arr(sb_jw *w) { jw_open(w, '['); }

void sb_jw_end(sb_jw *w) {
  if (w->code != SB_OK) return;
  if (w->depth == 0 || w->after_key) return jw_fail(w, SB_EINVAL, "JSON writer: unbalanced end");
  char close = w->open[--w->depth] == '{' ? '}' : ']';
  jw_put(w, &close, 1);
  w->need_comma = true;
}

static void jw_quoted(sb_jw *w, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  jw_put(w, "\"", 1);
  size_t run = 0; /* bytes copied as they are, flushed at each escape */
  for (size_t i = 0; i < n && w->code == SB_OK;) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      i++, run++;
      continue;
    }
    if (c >= 0x80) {
      size_t l = sb_utf8_len((const unsigned char *)s + i, n - i);
      if (!l) return jw_fail(w, SB_EINVAL, "a string that is not UTF-8");
      i += l, run += l;
      continue;
    }
    jw_put(w, s + i - run, run);
    run = 0;
    char esc[6] = {'\\', 0};
    const char *k = strchr("\"\\\b\f\n\r\t", c);
    if (c && k) {
      esc[1] = "\"\\bfnrt"[k - "\"\\\b\f\n\r\t"];
      jw_put(w, esc, 2);
    } else {
      esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
      jw_put(w, esc, 6);
    }
    i++;
  }
  jw_put(w, s + n - run, run);
  jw_put(w, "\"", 1);
}

void sb_jw_key(sb_jw *w, const char *key) {
  if (w->code != SB_OK) return;
  if (w->after_key) return jw_fail(w, SB_EINVAL, "JSON writer: a key after a key");
  if (w->need_comma) jw_put(w, ",", 1);
  jw_quoted(w, key, strlen(key));
  jw_put(w, ":", 1);
  w->after_key = true;
  w->need_comma = true;
}

void sb_jw_str(sb_jw *w, const char *s, size_t n) {
  if (jw_value(w)) jw_quoted(w, s, n);
}
void sb_jw_cstr(sb_jw *w, const char *s) { sb_jw_str(w, s, strlen(s)); }

void sb_jw_int(sb_jw *w, int64_t v) {
  char num[24];
  int l = snprintf(num, sizeof num, "%" PRId64, v);
  if (jw_value(w)) jw_put(w, num, (size_t)l);
}

void sb_jw_bool(sb_jw *w, bool v) {
  if (jw_value(w)) jw_put(w, v ? "true" : "false", v ? 4 : 5);
}
void sb_jw_null(sb_jw *w) {
  if (jw_value(w)) jw_put(w, "null", 4);
}
void sb_jw_num_text(sb_jw *w, const char *s, size_t n) {
  if (jw_value(w)) jw_put(w, s, n);
}

void sb_jw_b64(sb_jw *w, const void *data, size_t n) {
  if (!jw_value(w)) return;
  jw_put(w, "\"", 1);
  if (w->code == SB_OK && !sb_b64_encode(w->m, &w->b, data, n)) jw_fail(w, SB_ENOSPC, "out of memory writing JSON");
  jw_put(w, "\"", 1);
}

sb_code sb_jw_finish(sb_jw *w, sb_err *e) {
  if (w->code == SB_OK && (w->depth != 0 || w->after_key)) jw_fail(w, SB_EINVAL, "JSON writer: unbalanced document");
  jw_put(w, "", 1); /* the NUL, not counted */
  if (w->code != SB_OK) {
    sb_buf_free(w->m, &w->b);
    return sb_fail(e, w->code, w->why);
  }
  w->b.len--;
  return SB_OK;
}

void sb_jw_value(sb_jw *w, const sb_json *d, size_t i) {
  if (i >= d->n) return jw_fail(w, SB_EINVAL, "JSON writer: no such value");
  const sb_jtok *t = &d->t[i];
  switch ((sb_jtype)t->type) {
  case SB_JNULL: return sb_jw_null(w);
  case SB_JFALSE: return sb_jw_bool(w, false);
  case SB_JTRUE: return sb_jw_bool(w, true);
  case SB_JNUM: return sb_jw_num_text(w, d->text.p + t->off, t->len);
  case SB_JSTR: return sb_jw_str(w, d->text.p + t->off, t->len);
  case SB_JARR:
    sb_jw_begin_arr(w);
    for (size_t k = 0, j = i + 1; k < t->len; k++, j = d->t[j].next) sb_jw_value(w, d, j);
    return sb_jw_end(w);
  case SB_JOBJ:
    sb_jw_begin_obj(w);
    for (size_t k = 0, j = i + 1; k < t->len; k++, j = d->t[j + 1].next) {
      if (w->code != SB_OK) return;
      /* keys are NUL-free only if the document's are: write the bytes */
      if (w->need_comma) jw_put(w, ",", 1);
      jw_quoted(w, d->text.p + d->t[j].off, d->t[j].len);
      jw_put(w, ":", 1);
      w->after_key = true;
      w->need_comma = true;
      sb_jw_value(w, d, j + 1);
    }
    return sb_jw_end(w);
  }
}

/* ---- base64 -------------------------------------------------------------- */

bool sb_b64_encode(const sb_mem *m, sb_buf *out, const void *data, size_t n) {
  static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (n == 0) return true;
  if (n > (SIZE_MAX / 4) * 3 - 3 || sb_buf_reserve(m, out, (n + 2) / 3 * 4) != 0) return false;
  const unsigned char *s = data;
  char *o = out->p + out->len;
  size_t i = 0;
  for (; i + 3 <= n; i += 3, o += 4) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
    o[0] = A[v >> 18], o[1] = A[(v >> 12) & 63], o[2] = A[(v >> 6) & 63], o[3] = A[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
    o[0] = A[v >> 18], o[1] = A[(v >> 12) & 63];
    o[2] = i + 1 < n ? A[(v >> 6) & 63] : '=';
    o[3] = '=';
    o += 4;
  }
  out->len = (size_t)(o - out->p);
  return true;
}

static int b64_val(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

sb_code sb_b64_decode(const sb_mem *m, sb_buf *out, const char *s, size_t n) {
  size_t pad = 0;
  if (n % 4 == 0 && n && s[n - 1] == '=') pad = (n >= 2 && s[n - 2] == '=') ? 2 : 1;
  size_t body = n - pad;
  if (body % 4 == 1) return SB_EINVAL;
  if (body == 0) return pad ? SB_EINVAL : SB_OK;
  if (sb_buf_reserve(m, out, body / 4 * 3 + 2) != 0) return SB_ENOSPC;
  char *o = out->p + out->len;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < body; i++) {
    int v = b64_val(s[i]);
    if (v < 0) return SB_EINVAL;
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *o++ = (char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (acc != 0) return SB_EINVAL; /* leftover bits must be zero (canonical) */
  out->len = (size_t)(o - out->p);
  return SB_OK;
}
