#include "base/path.h"

#include <string.h>

/* Next component of s[*i..n): skips separators; returns its start, sets len.
 * Returns NULL at the end. */
static const char *next_comp(const char *s, size_t n, size_t *i, size_t *len) {
  while (*i < n && s[*i] == '/') (*i)++;
  if (*i >= n) return NULL;
  size_t start = *i;
  while (*i < n && s[*i] != '/') (*i)++;
  *len = *i - start;
  return s + start;
}

#define is_dot sb_path_is_dot

static void push_comp(sb_path *out, const char *c, size_t n) {
  if (out->ncomp) out->buf[out->len++] = '/';
  out->off[out->ncomp++] = (uint16_t)out->len;
  memcpy(out->buf + out->len, c, n);
  out->len += n;
}

static void finish(sb_path *out) {
  out->buf[out->len] = '\0';
  out->off[out->ncomp] = (uint16_t)(out->len + 1);
}

sb_code sb_path_parse(sb_path *out, const char *s, size_t n, const char *cwd, size_t cwdlen, sb_err *e) {
  out->len = 0;
  out->ncomp = 0;
  out->must_dir = false;
  out->dot_final = false;
  out->dotdot = false;
  if (n == 0) return sb_fail(e, SB_EINVAL, "empty path");
  if (memchr(s, '\0', n)) return sb_fail(e, SB_EINVAL, "path contains a NUL byte");
  if (n > SB_PATH_MAX) return sb_failf(e, SB_EINVAL, "path longer than %d bytes", SB_PATH_MAX);

  size_t i = 0, clen;
  const char *c;
  if (s[0] == '/') {
    /* Absolute: every component of cwd must appear literally first. */
    size_t ci = 0, wlen;
    const char *w;
    while ((w = next_comp(cwd, cwdlen, &ci, &wlen)) != NULL) {
      c = next_comp(s, n, &i, &clen);
      while (c && is_dot(c, clen)) c = next_comp(s, n, &i, &clen);
      if (!c || clen != wlen || memcmp(c, w, wlen) != 0)
        return sb_failf(e, SB_EESCAPE,
                        "absolute paths must lie under %.*s; use a path "
                        "relative to the sandbox root",
                        (int)(cwdlen > 120 ? 120 : cwdlen), cwd);
    }
  }

  long depth = 0;
  const char *last = NULL;
  size_t lastlen = 0;
  while ((c = next_comp(s, n, &i, &clen)) != NULL) {
    last = c;
    lastlen = clen;
    if (clen > SB_NAME_MAX)
      return sb_failf(e, SB_ENAMETOOLONG, "a path component is longer than %d bytes", SB_NAME_MAX);
    if (is_dot(c, clen)) continue;
    if (sb_path_is_dotdot(c, clen)) {
      if (--depth < 0) return sb_fail(e, SB_EESCAPE, "'..' climbs above the sandbox root");
      out->dotdot = true;
    } else {
      depth++;
    }
    push_comp(out, c, clen);
  }
  finish(out);
  out->dot_final = last && is_dot(last, lastlen) && out->ncomp > 0;
  out->must_dir = s[n - 1] == '/' || out->dot_final;
  return SB_OK;
}

bool sb_path_names_no_entry(const sb_path *p) {
  if (p->ncomp == 0) return true;
  size_t n;
  const char *c = sb_path_comp(p, p->ncomp - 1, &n);
  return sb_path_is_dotdot(c, n);
}

size_t sb_path_clean(const sb_path *p, char *out) {
  size_t len = 0;
  for (unsigned i = 0; i < p->ncomp; i++) {
    size_t n;
    const char *c = sb_path_comp(p, i, &n);
    if (sb_path_is_dotdot(c, n)) {
      while (len > 0 && out[len - 1] != '/') len--;
      if (len > 0) len--; /* the separator */
      continue;
    }
    if (len) out[len++] = '/';
    memcpy(out + len, c, n);
    len += n;
  }
  out[len] = '\0';
  return len;
}

long sb_link_join(const char *dir, size_t dlen, const char *target, size_t tlen, char *out, size_t cap) {
  if (tlen == 0 || target[0] == '/' || dlen + tlen + 2 > cap) return -1;
  size_t len = dlen, i = 0, clen;
  memcpy(out, dir, dlen);
  const char *c;
  while ((c = next_comp(target, tlen, &i, &clen)) != NULL) {
    if (is_dot(c, clen)) continue;
    if (sb_path_is_dotdot(c, clen)) {
      if (len == 0) return -1; /* above the root */
      while (len > 0 && out[len - 1] != '/') len--;
      if (len > 0) len--;
      continue;
    }
    if (len) out[len++] = '/';
    memcpy(out + len, c, clen);
    len += clen;
  }
  out[len] = '\0';
  return (long)len;
}

sb_code sb_path_from_rel(sb_path *out, const char *s, size_t n, sb_err *e) {
  if (n == 0) {
    out->len = out->ncomp = 0;
    out->must_dir = out->dot_final = out->dotdot = false;
    finish(out);
    return SB_OK;
  }
  return sb_path_parse(out, s, n, "/", 1, e);
}

bool sb_path_more_after(const char *buf, size_t pos, size_t end) {
  while (pos < end) {
    while (pos < end && buf[pos] == '/') pos++;
    size_t b = pos;
    while (pos < end && buf[pos] != '/') pos++;
    if (pos > b && !is_dot(buf + b, pos - b)) return true;
  }
  return false;
}
