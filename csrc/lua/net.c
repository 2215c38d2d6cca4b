/* The network part of a sandbox: its policy (allowed_hosts, denied_hosts),
 * sb:host_allowed and sb:http_get; its servers for commands are
 * lua/ports.c. */
#include "lua/net.h"
#include "lua/forkjob.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lua/ports.h"
#include "net/http.h"
#include "plat/random.h"

static void net_close(lua_State *L, sb_sandbox *sb, void *state);
const sb_part_class sb_lua_net_part = {"net", net_close};
#define NET(sb) sb_lua_net(sb)

/* ---- policy ------------------------------------------------------------- */

static int add_rules(lua_State *L, sb_sandbox *sb, int opts, const char *key, sb_hostlist *l, sb_err *e) {
  if (lua_getfield(L, opts, key) != LUA_TTABLE) {
    lua_pop(L, 1);
    return 0;
  }
  lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    sb_hostrule r;
    char why[300];
    if (!s || !sb_hostrule_parse(s, len, &r, why, sizeof why)) {
      sb_failf(e, SB_EINVAL, "%s[%d]: %s", key, (int)i, s ? why : "must be a string");
      lua_pop(L, 2);
      return -1;
    }
    if (!sb_hostlist_add(&sb->fs.mem, l, &r)) luaL_error(L, "not enough memory");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 0;
}

/* secrets: {{host =, header =, value =}, ...}. */
long sb_lua_net_secrets(lua_State *L, int opts, sb_lua_secret_fn fn, void *ud, sb_err *e) {
  opts = lua_absindex(L, opts);
  if (lua_getfield(L, opts, "secrets") != LUA_TTABLE) {
    lua_pop(L, 1);
    return 0;
  }
  lua_Integer n = luaL_len(L, -1);
  bool more = true;
  for (lua_Integer i = 1; i <= n && more; i++) {
    lua_rawgeti(L, -1, i);
    lua_getfield(L, -1, "host");
    lua_getfield(L, -2, "header");
    lua_getfield(L, -3, "value");
    size_t hl = 0, nl = 0, vl = 0;
    const char *host = lua_tolstring(L, -3, &hl), *name = lua_tolstring(L, -2, &nl), *value = lua_tolstring(L, -1, &vl);
    sb_hostrule r;
    char why[300];
    if (!host || !name || !value || !sb_hostrule_parse(host, hl, &r, why, sizeof why)) {
      sb_failf(e, SB_EINVAL, "secrets[%d]: %s", (int)i, host && name && value ? why : "host, header and value needed");
      lua_pop(L, 5);
      return -1;
    }
    more = fn(ud, (size_t)i, &r, name, nl, value, vl);
    lua_pop(L, 4);
  }
  lua_pop(L, 1);
  return (long)n;
}

typedef struct secrets_to {
  const sb_mem *mem;
  sb_netpolicy *p;
  bool oom;
} secrets_to;

static bool keep_secret(void *ud, size_t i, const sb_hostrule *rule, const char *header, size_t hlen, const char *value,
                        size_t vlen) {
  (void)i;
  secrets_to *to = ud;
  to->oom = !sb_netpolicy_add_secret(to->mem, to->p, rule, header, hlen, value, vlen);
  return !to->oom;
}

static int add_secrets(lua_State *L, sb_sandbox *sb, int opts, sb_netpolicy *p, sb_err *e) {
  secrets_to to = {.mem = &sb->fs.mem, .p = p};
  if (sb_lua_net_secrets(L, opts, keep_secret, &to, e) < 0) return -1;
  if (to.oom) luaL_error(L, "not enough memory");
  return 0;
}

int sb_lua_net_attach(lua_State *L, sb_sandbox *sb, int opts, sb_err *e) {
  opts = lua_absindex(L, opts);
  sb_net *n = sb_malloc(&sb->fs.mem, sizeof *n);
  if (!n) luaL_error(L, "not enough memory");
  memset(n, 0, sizeof *n);
  sb_netagent_init(&n->agent);
  sb_netsvc_init(&n->svc);
  sb_part_add(L, sb, &sb_lua_net_part, n); /* from here the sandbox's release frees it */
  lua_getfield(L, opts, "allowed_hosts");
  n->has_policy = lua_istable(L, -1);
  lua_pop(L, 1);
  if (add_rules(L, sb, opts, "allowed_hosts", &n->policy.allow, e) != 0 ||
      add_rules(L, sb, opts, "denied_hosts", &n->policy.deny, e) != 0 || add_secrets(L, sb, opts, &n->policy, e) != 0)
    return -1;
  return 0;
}

/* core.check_host(entry): true, or nil and why (for the option checker). */
static int l_check_host(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  sb_hostrule r;
  char why[300];
  if (sb_hostrule_parse(s, len, &r, why, sizeof why)) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushnil(L);
  lua_pushstring(L, why);
  return 2;
}

/* core.random_token(): 32 hex digits from the kernel's generator. */
static int l_random_token(lua_State *L) {
  unsigned char raw[16];
  char hex[33];
  if (!sb_random(raw, sizeof raw)) luaL_error(L, "no random bytes from the kernel: %s", strerror(errno));
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", raw[i]);
  lua_pushlstring(L, hex, 32);
  return 1;
}

/* sb:host_allowed(host [, port]): would allowed_hosts let this name (or IP)
 * be contacted? true, or false and why. Names are checked as written; the
 * addresses they resolve to are checked again at connection time. */
static int m_host_allowed(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  const char *host = luaL_checkstring(L, 2);
  lua_Integer port = luaL_optinteger(L, 3, 443);
  luaL_argcheck(L, port > 0 && port < 65536, 3, "must be a port number");
  sb_net *n = NET(sb);
  char why[400];
  if (!n || !n->has_policy) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "the sandbox has no allowed_hosts");
    return 2;
  }
  bool ok = sb_net_host_allowed(&n->policy, host, (uint16_t)port, why, sizeof why);
  lua_pushboolean(L, ok);
  if (ok) return 1;
  lua_pushstring(L, why);
  return 2;
}

/* ---- http_get -------------------------------------------------------------- */

static void push_headers(lua_State *L, const sb_buf *h) {
  lua_newtable(L);
  const char *p = h->p, *end = h->p + h->len;
  while (p && p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    const char *colon = memchr(p, ':', (size_t)(eol - p));
    if (colon && colon > p) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      for (const char *k = p; k < colon; k++) luaL_addchar(&b, (char)tolower((unsigned char)*k));
      luaL_pushresult(&b);
      const char *v = colon + 1, *ve = eol;
      while (v < ve && (*v == ' ' || *v == '\t')) v++;
      while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ')) ve--;
      lua_pushvalue(L, -1);
      if (lua_rawget(L, -3) == LUA_TSTRING) { /* repeated: joined as HTTP allows */
        lua_pushliteral(L, ", ");
        lua_pushlstring(L, v, (size_t)(ve - v));
        lua_concat(L, 3);
      } else {
        lua_pop(L, 1);
        lua_pushlstring(L, v, (size_t)(ve - v));
      }
      lua_rawset(L, -3);
    }
    p = eol + 1;
  }
}

/* http_get's answer as the Lua table. */
static void push_response(lua_State *L, const sb_http_result *r) {
  lua_createtable(L, 0, 8);
  lua_pushinteger(L, r->status);
  lua_setfield(L, -2, "status");
  lua_pushlstring(L, r->body.p ? r->body.p : "", r->body.len);
  lua_setfield(L, -2, "body");
  push_headers(L, &r->headers);
  lua_setfield(L, -2, "headers");
  lua_pushstring(L, r->url);
  lua_setfield(L, -2, "url");
  lua_pushinteger(L, r->redirects);
  lua_setfield(L, -2, "redirects");
  lua_pushboolean(L, r->truncated);
  lua_setfield(L, -2, "truncated");
  lua_pushstring(L, r->address);
  lua_setfield(L, -2, "address");
}

typedef struct http_ud {
  sb_http_result r;
  sb_mem mem;
} http_ud;

static int http_gc(lua_State *L) {
  http_ud *hu = lua_touserdata(L, 1);
  sb_http_result_free(&hu->mem, &hu->r); /* idempotent: buffers reset */
  return 0;
}

/* The options table at 3 (checked by lua/sandbox/net.lua). */
static sb_http_opts http_opts(lua_State *L) {
  sb_http_opts o = {.timeout = 30, .max_bytes = 1 << 20, .max_redirects = 10};
  if (lua_getfield(L, 3, "timeout") == LUA_TNUMBER) o.timeout = lua_tonumber(L, -1);
  if (lua_getfield(L, 3, "max_bytes") == LUA_TNUMBER) o.max_bytes = (size_t)lua_tointeger(L, -1);
  if (lua_getfield(L, 3, "max_redirects") == LUA_TNUMBER) o.max_redirects = (int)lua_tointeger(L, -1);
  lua_pop(L, 3);
  return o;
}

/* http_get's arguments (sandbox, url, options table); the sandbox's network
 * part with a host policy, or NULL with e set. */
static sb_net *http_args(lua_State *L, sb_sandbox **sb, const char **url, sb_err *e) {
  *sb = sb_lua_check_open(L, 1);
  *url = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  sb_net *n = NET(*sb);
  if (!n || !n->has_policy) {
    sb_fail(e, SB_EACCES, "http_get is off: the sandbox has no allowed_hosts");
    return NULL;
  }
  return n;
}

/* core.http_get(sb, url, {timeout=, max_bytes=, max_redirects=}) */
static int l_http_get(lua_State *L) {
  sb_sandbox *sb;
  const char *url;
  sb_err e;
  sb_net *n = http_args(L, &sb, &url, &e);
  if (!n) return sb_push_err(L, &e, NULL, 0);
  sb_http_opts o = http_opts(L);
  /* the result lives in a userdata so an error raised while building the
   * table (OOM) cannot leak its buffers */
  http_ud *hu = lua_newuserdatauv(L, sizeof *hu, 0);
  memset(hu, 0, sizeof *hu);
  hu->mem = sb->fs.mem;
  if (luaL_newmetatable(L, "sandbox.HttpResult")) {
    lua_pushcfunction(L, http_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  sb_http_result *r = &hu->r;
  if (sb_http_get(&sb->fs.mem, &n->policy, url, &o, r, &e) != 0) {
    sb_http_result_free(&sb->fs.mem, r);
    return sb_push_err(L, &e, NULL, 0);
  }
  push_response(L, r);
  sb_http_result_free(&sb->fs.mem, r);
  return 1;
}

/* ---- http_get in a forked copy (lua/forkjob.c) ---------------------------- */

/* What the copy sends: the outcome and the response's fixed fields, then
 * msglen bytes of message, hdrlen of header lines and bodylen of body. */
typedef struct http_answer {
  int32_t code, redirects;
  long status;
  uint8_t truncated;
  uint32_t msglen;
  uint64_t hdrlen, bodylen;
  char url[sizeof((sb_http_result *)0)->url];
  char address[sizeof((sb_http_result *)0)->address];
} http_answer;

typedef struct http_job {
  sb_forkjob fj;
  bool done;
  /* for the copy: what to fetch, under which policy */
  const char *url;
  const sb_netpolicy *policy;
  sb_http_opts o;
} http_job;

#define HTTP_JOB_MT "sandbox.HttpJob"

static void http_copy(void *arg, int wfd) {
  http_job *j = arg;
  sb_http_result r;
  memset(&r, 0, sizeof r);
  sb_err e;
  e.msg = NULL;
  e.code = SB_OK;
  int rc = sb_http_get(&j->fj.mem, j->policy, j->url, &j->o, &r, &e);
  const char *msg = rc == 0 ? "" : e.msg ? e.msg : sb_code_text(e.code);
  http_answer a;
  memset(&a, 0, sizeof a);
  a.code = rc == 0 ? SB_OK : (int32_t)e.code;
  a.redirects = r.redirects;
  a.status = r.status;
  a.truncated = r.truncated;
  a.msglen = (uint32_t)strlen(msg);
  a.hdrlen = rc == 0 ? r.headers.len : 0;
  a.bodylen = rc == 0 ? r.body.len : 0;
  memcpy(a.url, r.url, sizeof a.url);
  memcpy(a.address, r.address, sizeof a.address);
  if (sb_forkjob_write(wfd, &a, sizeof a) && sb_forkjob_write(wfd, msg, a.msglen) &&
      (!a.hdrlen || sb_forkjob_write(wfd, r.headers.p, a.hdrlen)))
    if (a.bodylen) sb_forkjob_write(wfd, r.body.p, a.bodylen);
}

static int http_job_gc(lua_State *L) {
  sb_forkjob_free(&((http_job *)luaL_checkudata(L, 1, HTTP_JOB_MT))->fj);
  return 0;
}

/* core.http_start(sb, url, opts) -> job | nil, msg, code: http_get in a
 * forked copy; job:result() is false until it answers. */
static int l_http_start(lua_State *L) {
  sb_sandbox *sb;
  const char *url;
  sb_err e;
  sb_net *n = http_args(L, &sb, &url, &e);
  if (!n) return sb_push_err(L, &e, NULL, 0);
  http_job *j = sb_forkjob_new(L, sizeof *j, HTTP_JOB_MT);
  j->url = url;
  j->policy = &n->policy;
  j->o = http_opts(L);
  if (sb_forkjob_start(L, sb, &j->fj, http_copy, j, &e) != 0) return sb_push_err(L, &e, NULL, 0);
  return 1;
}

/* job:result() -> false while it runs; then, once, what http_get returns. */
static int m_http_result(lua_State *L) {
  http_job *j = luaL_checkudata(L, 1, HTTP_JOB_MT);
  if (j->done) return luaL_error(L, "http job: the result was already taken");
  lua_getiuservalue(L, 1, 1);
  sb_lua_check_open(L, -1);
  lua_pop(L, 1);
  if (!sb_forkjob_poll(L, &j->fj)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  j->done = true;
  const sb_buf *got = &j->fj.got;
  http_answer a;
  sb_err e;
  if (got->len < sizeof a || (memcpy(&a, got->p, sizeof a), got->len != sizeof a + a.msglen + a.hdrlen + a.bodylen)) {
    sb_fail(&e, SB_EIO, "http_get's process ended without an answer");
    return sb_push_err(L, &e, NULL, 0);
  }
  const char *msg = got->p + sizeof a;
  if (a.code != SB_OK) {
    sb_failf(&e, (sb_code)a.code, "%.*s", (int)a.msglen, msg);
    return sb_push_err(L, &e, NULL, 0);
  }
  /* a response whose buffers are the answer's bytes (not to be freed) */
  sb_http_result r;
  memset(&r, 0, sizeof r);
  r.status = a.status;
  r.truncated = a.truncated;
  r.redirects = a.redirects;
  memcpy(r.url, a.url, sizeof r.url);
  memcpy(r.address, a.address, sizeof r.address);
  r.url[sizeof r.url - 1] = r.address[sizeof r.address - 1] = '\0';
  r.headers.p = (char *)msg + a.msglen;
  r.headers.len = (size_t)a.hdrlen;
  r.body.p = r.headers.p + a.hdrlen;
  r.body.len = (size_t)a.bodylen;
  push_response(L, &r);
  return 1;
}

static int m_http_cancel(lua_State *L) {
  http_job *j = luaL_checkudata(L, 1, HTTP_JOB_MT);
  sb_forkjob_stop(&j->fj);
  j->done = true;
  return 0;
}

/* ---- closing ------------------------------------------------------------------ */

static void net_close(lua_State *L, sb_sandbox *sb, void *state) {
  (void)L;
  sb_net *n = state;
  sb_lua_ports_close(n);
  sb_netpolicy_free(&sb->fs.mem, &n->policy);
  sb_free(&sb->fs.mem, n, sizeof *n);
}

void sb_lua_net_methods(lua_State *L) {
  static const luaL_Reg fns[] = {{"host_allowed", m_host_allowed}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}

void sb_lua_net_open(lua_State *L) {
  static const luaL_Reg fns[] = {{"http_get", l_http_get},
                                 {"http_start", l_http_start},
                                 {"check_host", l_check_host},
                                 {"random_token", l_random_token},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  if (luaL_newmetatable(L, HTTP_JOB_MT)) {
    static const luaL_Reg methods[] = {{"result", m_http_result}, {"cancel", m_http_cancel}, {NULL, NULL}};
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, http_job_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
}
