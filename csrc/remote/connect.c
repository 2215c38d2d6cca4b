#include "remote/connect.h"

#include <string.h>

void sb_connect_reader_init(sb_connect_reader *r, const sb_mem *m, size_t max) {
  *r = (sb_connect_reader){.m = m, .max = max ? max : SB_CONNECT_MAX_MESSAGE};
}

void sb_connect_reader_free(sb_connect_reader *r) { sb_buf_free(r->m, &r->pending); }

static uint32_t be32(const char *p) {
  const unsigned char *u = (const unsigned char *)p;
  return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

/* One envelope whose 5 header bytes are at h: check it before any of its
 * body is kept. */
static sb_code header_ok(sb_connect_reader *r, const char *h, sb_err *e) {
  unsigned flags = (unsigned char)h[0];
  uint32_t len = be32(h + 1);
  if (r->ended) return sb_fail(e, SB_EIO, "envd: a message after the end of the stream");
  if (flags & SB_CONNECT_FLAG_COMPRESSED) return sb_fail(e, SB_EIO, "envd: a compressed message (none was asked for)");
  if (len > r->max) return sb_failf(e, SB_EIO, "envd: a message of %u bytes (the limit is %zu)", len, r->max);
  return SB_OK;
}

static sb_code deliver(sb_connect_reader *r, const char *env, sb_connect_msg_fn fn, void *ud, sb_err *e) {
  unsigned flags = (unsigned char)env[0];
  if (flags & SB_CONNECT_FLAG_END) r->ended = true;
  return fn(ud, flags, env + 5, be32(env + 1), e);
}

sb_code sb_connect_feed(sb_connect_reader *r, const char *p, size_t n, sb_connect_msg_fn fn, void *ud, sb_err *e) {
  sb_buf *b = &r->pending;
  while (n > 0) {
    if (b->len == 0 && n >= 5) {
      /* whole envelopes straight from the input, no copy */
      sb_code c = header_ok(r, p, e);
      if (c != SB_OK) return c;
      size_t len = be32(p + 1);
      if (n - 5 >= len) {
        if ((c = deliver(r, p, fn, ud, e)) != SB_OK) return c;
        p += 5 + len, n -= 5 + len;
        continue;
      }
    }
    /* a partial envelope: its header first, then its body */
    size_t want = 5;
    if (b->len >= 5) want = 5 + (size_t)be32(b->p + 1);
    size_t take = want - b->len < n ? want - b->len : n;
    if (sb_buf_append(r->m, b, p, take) != 0) return sb_fail(e, SB_ENOSPC, "out of memory reading a stream");
    p += take, n -= take;
    if (b->len == 5 && want == 5) {
      sb_code c = header_ok(r, b->p, e);
      if (c != SB_OK) return c;
      want = 5 + (size_t)be32(b->p + 1);
    }
    if (b->len >= 5 && b->len == want) {
      b->len = 0;
      sb_code c = deliver(r, b->p, fn, ud, e);
      sb_buf_trim(r->m, b, 64u << 10);
      if (c != SB_OK) return c;
    }
  }
  return SB_OK;
}

sb_code sb_connect_done(const sb_connect_reader *r, sb_err *e) {
  if (r->pending.len) return sb_fail(e, SB_EIO, "envd: the connection ended inside a message");
  if (!r->ended) return sb_fail(e, SB_EIO, "envd: the connection ended before the stream did");
  return SB_OK;
}

int sb_connect_envelope(const sb_mem *m, sb_buf *out, unsigned flags, const char *msg, size_t len) {
  if (len > UINT32_MAX || sb_buf_reserve(m, out, 5 + len) != 0) return -1;
  char *o = out->p + out->len;
  o[0] = (char)flags;
  o[1] = (char)(len >> 24), o[2] = (char)(len >> 16), o[3] = (char)(len >> 8), o[4] = (char)len;
  if (len) memcpy(o + 5, msg, len);
  out->len += 5 + len;
  return 0;
}

sb_code sb_connect_code(const char *name) {
  static const struct {
    const char *name;
    sb_code code;
  } map[] = {
      {"not_found", SB_ENOENT},       {"already_exists", SB_EEXIST},      {"permission_denied", SB_EACCES},
      {"unauthenticated", SB_EACCES}, {"resource_exhausted", SB_ENOSPC},  {"invalid_argument", SB_EINVAL},
      {"out_of_range", SB_EINVAL},    {"failed_precondition", SB_EINVAL}, {"unimplemented", SB_ENOTSUP},
  };
  for (size_t i = 0; name && i < sizeof map / sizeof *map; i++)
    if (strcmp(map[i].name, name) == 0) return map[i].code;
  return SB_EIO; /* unavailable, deadline_exceeded, internal, unknown, aborted, canceled, data_loss */
}

sb_code sb_connect_http_code(long status) {
  switch (status) {
  case 400: return SB_EINVAL;
  case 401:
  case 403: return SB_EACCES;
  case 404: return SB_ENOENT;
  case 409: return SB_EAGAIN; /* the edge: the sandbox is pausing or resuming ("try again in a moment") */
  case 429: return SB_EAGAIN; /* the edge's connection limit, the API's rate limit: later may do */
  case 413:
  case 507: return SB_ENOSPC;
  default: return SB_EIO;
  }
}

sb_code sb_connect_fail(const sb_json *d, size_t at, long status, const char *what, sb_err *e) {
  const char *code = d ? sb_json_str(d, sb_json_field(d, at, "code"), NULL) : NULL;
  const char *msg = d ? sb_json_str(d, sb_json_field(d, at, "message"), NULL) : NULL;
  sb_code c = code ? sb_connect_code(code) : sb_connect_http_code(status);
  if (msg && *msg) sb_failf(e, c, "remote: %s: %.300s", what, msg);
  else if (code) sb_failf(e, c, "remote: %s: %s", what, code);
  else sb_failf(e, c, "remote: %s: HTTP status %ld", what, status);
  if (code && strcmp(code, "internal") == 0) e->cause = SB_CAUSE_INTERNAL;
  return c;
}
