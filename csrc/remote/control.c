#include "remote/control.h"

#include <stdio.h>
#include <string.h>

/* "id" must be safe in a URL path: what engines hand out ([A-Za-z0-9-_]). */
static bool id_ok(const char *id) {
  if (!id || !*id || strlen(id) >= sizeof((sb_remote_box *)0)->id) return false;
  for (const char *p = id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
      return false;
  return true;
}

/* A REST call to the engine: the reply's JSON when it is 2xx with a body. */
/* One REST call; next (when given) gets a paged listing's X-Next-Token. */
static sb_code rest_page(const sb_mem *m, const sb_remote_engine *g, const char *method, const char *path,
                         const char *what, const char *body, sb_json *reply, char *next, size_t nlen, sb_err *e) {
  char url[1024], key[320];
  if (snprintf(url, sizeof url, "%s%s", g->api_url, path) >= (int)sizeof url)
    return sb_fail(e, SB_EINVAL, "api_url is too long");
  if (snprintf(key, sizeof key, "X-API-Key: %s", g->api_key ? g->api_key : "") >= (int)sizeof key)
    return sb_fail(e, SB_EINVAL, "api_key is too long");
  sb_rreq rq = {.method = method,
                .url = url,
                .what = what,
                .body = body,
                .blen = body ? strlen(body) : 0,
                .secret = g->api_key,
                .headers = {key, "Content-Type: application/json", "Accept: application/json"}};
  sb_rresp rs;
  sb_code c = sb_remote_call(m, &g->t, &rq, &rs, e);
  memset(reply, 0, sizeof *reply);
  reply->m = m;
  if (c == SB_OK && (rs.status < 200 || rs.status > 299)) {
    sb_json d;
    sb_err ignore = {0};
    bool parsed = rs.body.len && sb_json_parse(&d, m, rs.body.p, rs.body.len, &ignore) == SB_OK;
    c = sb_connect_fail(parsed ? &d : NULL, 0, rs.status, what, e);
    if (rs.body.len) sb_json_free(&d);
    sb_remote_mask(e, g->api_key);
  } else if (c == SB_OK && rs.body.len && sb_json_parse(reply, m, rs.body.p, rs.body.len, e) != SB_OK)
    c = sb_failf(e, SB_EIO, "remote: %s: the engine's reply is not JSON", what);
  if (next) snprintf(next, nlen, "%s", c == SB_OK ? rs.next_token : "");
  sb_buf_free(m, &rs.body);
  return c;
}

static sb_code rest(const sb_mem *m, const sb_remote_engine *g, const char *method, const char *path, const char *what,
                    const char *body, sb_json *reply, sb_err *e) {
  return rest_page(m, g, method, path, what, body, reply, NULL, 0, e);
}

static void copy_field(const sb_json *d, size_t at, const char *name, char *out, size_t cap) {
  size_t len;
  const char *s = sb_json_str(d, sb_json_field(d, at, name), &len);
  if (s && len < cap) memcpy(out, s, len + 1);
  else out[0] = '\0';
}

/* The sandbox the engine described: id and token required. */
/* The sandbox the engine described in the object at token `at` of d. */
static sb_code box_from(const sb_remote_engine *g, const sb_json *d, size_t at, const char *what, sb_remote_box *b,
                        sb_err *e) {
  memset(b, 0, sizeof *b);
  copy_field(d, at, "sandboxID", b->id, sizeof b->id);
  copy_field(d, at, "templateID", b->template_id, sizeof b->template_id);
  copy_field(d, at, "envdVersion", b->envd_version, sizeof b->envd_version);
  copy_field(d, at, "envdAccessToken", b->token, sizeof b->token);
  copy_field(d, at, "state", b->state, sizeof b->state);
  if (!id_ok(b->id)) return sb_failf(e, SB_EIO, "remote: %s: the engine's reply has no usable sandboxID", what);
  char domain[256];
  copy_field(d, at, "domain", domain, sizeof domain);
  const char *dom = g->domain ? g->domain : *domain ? domain : "e2b.app";
  int n = g->envd_url ? snprintf(b->envd_url, sizeof b->envd_url, "%s", g->envd_url)
                      : snprintf(b->envd_url, sizeof b->envd_url, "https://49983-%s.%s", b->id, dom);
  if (n >= (int)sizeof b->envd_url) return sb_fail(e, SB_EINVAL, "envd's URL is too long");
  return SB_OK;
}

/* {"k": "v", ...} of a key, value, ..., NULL list. */
static void pairs(sb_jw *w, const char *name, const char *const *kv) {
  if (!kv || !kv[0]) return;
  sb_jw_key(w, name);
  sb_jw_begin_obj(w);
  for (size_t i = 0; kv[i] && kv[i + 1]; i += 2) {
    sb_jw_key(w, kv[i]);
    sb_jw_cstr(w, kv[i + 1]);
  }
  sb_jw_end(w);
}

sb_code sb_remote_create(const sb_mem *m, const sb_remote_engine *g, const sb_remote_spec *s, sb_remote_box *out,
                         sb_err *e) {
  sb_jw w;
  sb_jw_init(&w, m);
  sb_jw_begin_obj(&w);
  sb_jw_key(&w, "templateID");
  sb_jw_cstr(&w, s->template_id ? s->template_id : "base");
  sb_jw_key(&w, "timeout");
  sb_jw_int(&w, s->timeout);
  /* an envd access token, as E2B's SDK asks by default: without one envd
   * serves anyone who knows the sandbox's id (envd api/auth.go) */
  sb_jw_key(&w, "secure");
  sb_jw_bool(&w, true);
  pairs(&w, "metadata", s->metadata);
  pairs(&w, "envVars", s->env);
  if (s->internet >= 0) {
    sb_jw_key(&w, "allow_internet_access");
    sb_jw_bool(&w, s->internet);
  }
  sb_jw_end(&w);
  sb_code c = sb_jw_finish(&w, e);
  if (c != SB_OK) return c;
  sb_json d;
  c = rest(m, g, "POST", "/sandboxes", "create sandbox", w.b.p, &d, e);
  sb_buf_free(m, &w.b);
  if (c == SB_OK) c = box_from(g, &d, 0, "create sandbox", out, e);
  sb_json_free(&d);
  return c;
}

/* POST /sandboxes/{id}/<op> {"timeout": N}: connect and timeout. */
static sb_code post_timeout(const sb_mem *m, const sb_remote_engine *g, const char *id, const char *op, int timeout,
                            const char *what, sb_json *d, sb_err *e) {
  if (!id_ok(id)) {
    memset(d, 0, sizeof *d);
    return sb_fail(e, SB_EINVAL, "sandbox_id must be letters, digits, '-' and '_'");
  }
  char path[200], body[64];
  snprintf(path, sizeof path, "/sandboxes/%s/%s", id, op);
  snprintf(body, sizeof body, "{\"timeout\":%d}", timeout);
  return rest(m, g, "POST", path, what, body, d, e);
}

sb_code sb_remote_connect(const sb_mem *m, const sb_remote_engine *g, const char *id, int timeout, sb_remote_box *out,
                          sb_err *e) {
  sb_json d;
  sb_code c = post_timeout(m, g, id, "connect", timeout, "connect to sandbox", &d, e);
  if (c == SB_OK) c = box_from(g, &d, 0, "connect to sandbox", out, e);
  sb_json_free(&d);
  return c;
}

sb_code sb_remote_set_timeout(const sb_mem *m, const sb_remote_engine *g, const char *id, int timeout, sb_err *e) {
  sb_json d;
  sb_code c = post_timeout(m, g, id, "timeout", timeout, "set the sandbox's timeout", &d, e);
  sb_json_free(&d);
  return c;
}

sb_code sb_remote_kill(const sb_mem *m, const sb_remote_engine *g, const char *id, sb_err *e) {
  if (!id_ok(id)) return sb_fail(e, SB_EINVAL, "sandbox_id must be letters, digits, '-' and '_'");
  char path[200];
  snprintf(path, sizeof path, "/sandboxes/%s", id);
  sb_json d;
  sb_code c = rest(m, g, "DELETE", path, "kill sandbox", NULL, &d, e);
  sb_json_free(&d);
  return c;
}

/* The token as a query value: %XX for all but RFC 3986's unreserved. */
static bool query_escape(const char *s, char *out, size_t n) {
  static const char hx[] = "0123456789ABCDEF";
  size_t o = 0;
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    bool plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || strchr("-._~", ch);
    if (o + 4 >= n) return false;
    if (plain) out[o++] = (char)ch;
    else out[o++] = '%', out[o++] = hx[ch >> 4], out[o++] = hx[ch & 15];
  }
  out[o] = '\0';
  return true;
}

/* Every page of GET /v2/sandboxes (at most 100 a page; X-Next-Token names
 * the next, none after the last: openapi.yml, E2B's SDK paginator). */
sb_code sb_remote_list(const sb_mem *m, const sb_remote_engine *g, sb_remote_box_fn fn, void *ud, sb_err *e) {
  char next[512] = "", path[2200];
  sb_code c = SB_OK;
  for (int page = 0; c == SB_OK && (page == 0 || next[0]); page++) {
    char tok[1600];
    if (page >= 10000) return sb_fail(e, SB_EIO, "remote: list sandboxes: the engine's pages never end");
    if (!query_escape(next, tok, sizeof tok)) return sb_fail(e, SB_EIO, "remote: list sandboxes: a bad page token");
    snprintf(path, sizeof path, "/v2/sandboxes?limit=100%s%s", next[0] ? "&nextToken=" : "", tok);
    sb_json d;
    c = rest_page(m, g, "GET", path, "list sandboxes", NULL, &d, next, sizeof next, e);
    if (c == SB_OK && !sb_json_is(&d, 0, SB_JARR))
      c = sb_fail(e, SB_EIO, "remote: list sandboxes: the reply is not a list");
    for (size_t k = 0, i = 1; c == SB_OK && k < d.t[0].len; k++, i = d.t[i].next) {
      sb_remote_box b;
      if ((c = box_from(g, &d, i, "list sandboxes", &b, e)) == SB_OK) c = fn(ud, &b, e);
    }
    sb_json_free(&d);
  }
  return c;
}
