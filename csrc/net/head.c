#include "net/head.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *line_end(const char *p, const char *end) {
  const char *q = memchr(p, '\r', (size_t)(end - p));
  return q && q + 1 < end && q[1] == '\n' ? q : NULL;
}

bool sb_http_head_valid(const char *head, size_t len) {
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)head[i];
    if (ch == '\r') {
      if (i + 1 >= len || head[i + 1] != '\n') return false;
      i++;
      if (i + 1 < len && (head[i + 1] == ' ' || head[i + 1] == '\t')) return false; /* obs-fold */
    } else if (ch == '\n' || ch == 0 || (ch < 0x20 && ch != '\t') || ch == 0x7f) {
      return false;
    }
  }
  return true;
}

bool sb_http_request_line(const char *head, size_t len, char *method, size_t mlen, char *target, size_t tlen) {
  const char *end = head + len, *eol = line_end(head, end);
  if (!eol) return false;
  const char *sp1 = memchr(head, ' ', (size_t)(eol - head));
  if (!sp1) return false;
  const char *sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
  if (!sp2 || (size_t)(sp1 - head) >= mlen || (size_t)(sp2 - sp1 - 1) >= tlen) return false;
  if ((size_t)(eol - sp2 - 1) < 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0) return false;
  memcpy(method, head, (size_t)(sp1 - head));
  method[sp1 - head] = '\0';
  memcpy(target, sp1 + 1, (size_t)(sp2 - sp1 - 1));
  target[sp2 - sp1 - 1] = '\0';
  return method[0] && target[0];
}

/* Calls fn for each header line (name, its length, the value trimmed). */
static bool header_named(const char *line, size_t n, const char *name) {
  size_t nl = strlen(name);
  return n > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0;
}

bool sb_http_header(const char *head, size_t len, const char *name, char *out, size_t outlen) {
  return sb_http_header_nth(head, len, name, 0, out, outlen);
}

bool sb_http_header_nth(const char *head, size_t len, const char *name, unsigned nth, char *out, size_t outlen) {
  const char *end = head + len, *p = line_end(head, end);
  if (!p) return false;
  for (p += 2; p < end;) {
    const char *eol = line_end(p, end);
    if (!eol || eol == p) break;
    if (header_named(p, (size_t)(eol - p), name) && nth-- == 0) {
      const char *v = p + strlen(name) + 1;
      while (v < eol && (*v == ' ' || *v == '\t')) v++;
      const char *ve = eol;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
      if ((size_t)(ve - v) >= outlen) return false;
      memcpy(out, v, (size_t)(ve - v));
      out[ve - v] = '\0';
      return true;
    }
    p = eol + 2;
  }
  return false;
}

size_t sb_http_rewrite(const char *head, size_t len, const char *request_line, const char *const *drop,
                       const char *extra, char *out, size_t outlen) {
  const char *end = head + len, *p = line_end(head, end);
  if (!p) return 0;
  int n = request_line ? snprintf(out, outlen, "%s\r\n", request_line)
                       : snprintf(out, outlen, "%.*s\r\n", (int)(p - head), head);
  if (n < 0 || (size_t)n >= outlen) return 0;
  size_t o = (size_t)n;
  for (p += 2; p < end;) {
    const char *eol = line_end(p, end);
    if (!eol || eol == p) break;
    size_t ll = (size_t)(eol - p);
    bool skip = false;
    for (size_t i = 0; drop && drop[i] && !skip; i++) skip = header_named(p, ll, drop[i]);
    if (!skip) {
      if (o + ll + 2 >= outlen) return 0;
      memcpy(out + o, p, ll + 2);
      o += ll + 2;
    }
    p = eol + 2;
  }
  size_t el = extra ? strlen(extra) : 0;
  if (o + el + 2 >= outlen) return 0;
  if (el) memcpy(out + o, extra, el);
  o += el;
  memcpy(out + o, "\r\n", 2);
  return o + 2;
}
