/* Lua binding of the network parts: policy, http_get, proxy, exposed ports.
 * The proxy and the gates live on the sandbox's service thread
 * (net_service.h); everything here runs on the Lua state's thread and talks
 * to them only through sb_netsvc_call. */
#include "lua/net.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "net/agent.h"
#include "net/gate.h"
#include "net/http.h"
#include "net/proxy.h"
#include "net/service.h"
#include "lua/caps.h"
#include "lua/exec.h"

typedef struct gate_ud gate_ud;

typedef struct sb_net {
  sb_netpolicy policy;
  bool has_policy;
  sb_netagent agent;
  sb_netsvc svc;
  sb_proxy proxy;
  bool proxy_open;
  uint16_t proxy_port;
  gate_ud *gates; /* open or not yet started */
} sb_net;

struct gate_ud {
  sb_gate g;
  sb_net *net;   /* NULL once closed */
  int listen_fd; /* until started */
  bool started;
  gate_ud *next;
};

#define NET(sb) ((sb_net *)(sb)->net)
#define GATE_META "sandbox.Gate"

/* ---- policy ------------------------------------------------------------- */

static int add_rules(lua_State *L, sb_sandbox *sb, int opts, const char *key, sb_hostlist *l,
                     sb_err *e) {
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
    if (!sb_hostlist_add(&sb->mem, l, &r)) luaL_error(L, "not enough memory");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return 0;
}

int sb_lua_net_attach(lua_State *L, sb_sandbox *sb, int opts, sb_err *e) {
  opts = lua_absindex(L, opts);
  sb_net *n = sb_malloc(&sb->mem, sizeof *n);
  if (!n) luaL_error(L, "not enough memory");
  memset(n, 0, sizeof *n);
  sb_netagent_init(&n->agent);
  sb_netsvc_init(&n->svc);
  sb->net = n; /* from here the sandbox's release frees it */
  lua_getfield(L, opts, "allowed_hosts");
  n->has_policy = lua_istable(L, -1);
  lua_pop(L, 1);
  if (add_rules(L, sb, opts, "allowed_hosts", &n->policy.allow, e) != 0 ||
      add_rules(L, sb, opts, "denied_hosts", &n->policy.deny, e) != 0)
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
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) luaL_error(L, "getrandom: %s", strerror(errno));
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

/* ---- the service thread ---------------------------------------------------- */

typedef struct open_call {
  void *what; /* sb_proxy or sb_gate */
  const sb_netpolicy *pol;
  int fd, result;
} open_call;

static void call_open_proxy(sb_netsvc *s, void *arg) {
  open_call *c = arg;
  c->result = sb_proxy_open(c->what, &s->loop, &s->mem, c->pol, c->fd);
  sb_netsvc_done(s);
}

static void call_open_gate(sb_netsvc *s, void *arg) {
  open_call *c = arg;
  c->result = sb_gate_open(c->what, &s->loop, &s->mem, c->fd);
  sb_netsvc_done(s);
}

static void proxy_closed(sb_proxy *p) { sb_netsvc_done(p->ud); }
static void gate_closed(sb_gate *g) { sb_netsvc_done(g->ud); }

static void call_close_proxy(sb_netsvc *s, void *arg) {
  sb_proxy *p = arg;
  p->on_closed = proxy_closed;
  p->ud = s;
  sb_proxy_close(p);
}

static void call_close_gate(sb_netsvc *s, void *arg) {
  sb_gate *g = arg;
  g->on_closed = gate_closed;
  g->ud = s;
  sb_gate_close(g);
}

/* The agent in the commands' namespace and the service thread, started at
 * first need. */
static int net_ready(sb_sandbox *sb, const char *what, sb_err *e) {
  sb_net *n = NET(sb);
  const sb_netns *ns = sb_lua_exec_netns(sb);
  if (!ns) {
    sb_failf(e, SB_EINVAL, "%s needs the sandbox's commands in their own network (allow_outbound = "
             "false): with outbound access they could go around it", what);
    return -1;
  }
  int r = sb_netagent_start(&n->agent, ns);
  if (r < 0) {
    sb_failf(e, SB_EIO, "cannot start the network helper: %s", strerror(-r));
    return -1;
  }
  if ((r = sb_netsvc_start(&n->svc)) != 0) {
    sb_failf(e, SB_EIO, "cannot start the network thread: %s", uv_strerror(r));
    return -1;
  }
  return 0;
}

/* core.net_proxy(sb): the port of the allowlist proxy inside the commands'
 * network (started at the first call), or nil without allowed_hosts. */
static int l_net_proxy(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_net *n = NET(sb);
  if (!n || !n->has_policy) return 0;
  if (!n->proxy_open) {
    sb_err e;
    if (net_ready(sb, "allowed_hosts", &e) != 0) return sb_push_err(L, &e, NULL, 0);
    int fd = sb_netagent_listen(&n->agent, 0, &n->proxy_port);
    if (fd < 0) {
      sb_failf(&e, SB_EIO, "cannot open the proxy's port: %s", strerror(-fd));
      return sb_push_err(L, &e, NULL, 0);
    }
    open_call c = {&n->proxy, &n->policy, fd, 0};
    sb_netsvc_call(&n->svc, call_open_proxy, &c);
    n->proxy_open = true; /* even on failure: it is closing, close waits for it */
    if (c.result != 0) {
      sb_failf(&e, SB_EIO, "cannot serve the proxy: %s", uv_strerror(c.result));
      return sb_push_err(L, &e, NULL, 0);
    }
  }
  lua_pushinteger(L, n->proxy_port);
  return 1;
}

/* ---- exposed ports ---------------------------------------------------------- */

static void gate_unlink(gate_ud *u) {
  for (gate_ud **pp = &u->net->gates; *pp; pp = &(*pp)->next)
    if (*pp == u) {
      *pp = u->next;
      break;
    }
}

/* Close whatever the gate holds; returns whether its TTL fired. */
static bool gate_shut(gate_ud *u) {
  if (!u->net) return atomic_load(&u->g.fired);
  if (u->started) sb_netsvc_call(&u->net->svc, call_close_gate, &u->g);
  else if (u->listen_fd >= 0) close(u->listen_fd);
  u->listen_fd = -1;
  if (u->g.pidfd >= 0) close(u->g.pidfd);
  u->g.pidfd = -1;
  gate_unlink(u);
  u->net = NULL;
  return atomic_load(&u->g.fired);
}

static int gate_gc(lua_State *L) {
  gate_shut(lua_touserdata(L, 1));
  return 0;
}

static int host_listener(const char *host, uint16_t *port, sb_err *e) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  socklen_t len;
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    len = sizeof *v6;
  } else {
    sb_failf(e, SB_EINVAL, "bind_host must be an IP address (\"127.0.0.1\", \"::1\", \"0.0.0.0\"), not %.100s", host);
    return -1;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
    sb_failf(e, SB_EIO, "cannot listen on %.100s: %s", host, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(ss.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  return fd;
}

/* core.expose(sb, {port=, bind_host=, ttl=, token=}) -> gate,
 * host port, the command's port | nil, msg, code. The gate serves once
 * core.spawn starts the command. */
static int l_expose(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  sb_net *n = NET(sb);
  sb_err e;
  lua_getfield(L, 2, "port");
  lua_getfield(L, 2, "bind_host");
  lua_getfield(L, 2, "ttl");
  lua_getfield(L, 2, "token");
  uint16_t inner = (uint16_t)luaL_optinteger(L, -4, 0), outer = 0;
  const char *bind_host = luaL_optstring(L, -3, "127.0.0.1");
  double ttl = luaL_optnumber(L, -2, 0), grace = sb_lua_exec_grace(sb);
  size_t toklen = 0;
  const char *token = luaL_optlstring(L, -1, NULL, &toklen);
  if (toklen > SB_TOKEN_MAX) luaL_error(L, "the port token is longer than %d bytes", SB_TOKEN_MAX);
  if (net_ready(sb, "expose_port", &e) != 0) return sb_push_err(L, &e, NULL, 0);
  if (ttl > 0) { /* the TTL kills through a pidfd: fail closed without */
    if (getenv("SANDBOX_NO_PIDFD") /* test switch */ || !sb_caps_have_pidfd()) {
      sb_fail(&e, SB_ENOTSUP, "port_ttl needs pidfd (Linux 5.3 or later), which this kernel lacks");
      return sb_push_err(L, &e, NULL, 0);
    }
  }
  if (inner == 0) {
    int r = sb_netagent_free_port(&n->agent, &inner);
    if (r < 0) {
      sb_failf(&e, SB_EIO, "cannot pick a port: %s", strerror(-r));
      return sb_push_err(L, &e, NULL, 0);
    }
  }
  gate_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  memset(u, 0, sizeof *u);
  u->listen_fd = -1;
  u->g.pidfd = -1;
  if (luaL_newmetatable(L, GATE_META)) {
    lua_pushcfunction(L, gate_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  int fd = host_listener(bind_host, &outer, &e);
  if (fd < 0) return sb_push_err(L, &e, NULL, 0);
  u->listen_fd = fd;
  u->net = n;
  u->next = n->gates;
  n->gates = u;
  u->g.agent = &n->agent;
  u->g.inner_port = inner;
  u->g.ttl = ttl;
  u->g.grace = grace;
  if (token) memcpy(u->g.token, token, toklen);
  u->g.toklen = toklen;
  lua_pushinteger(L, outer);
  lua_pushinteger(L, inner);
  return 3;
}

int sb_lua_net_gate_start(lua_State *L, int idx, pid_t pid, sb_err *e) {
  gate_ud *u = luaL_checkudata(L, idx, GATE_META);
  if (!u->net || u->started) return sb_fail(e, SB_EINVAL, "this port is already in use"), -1;
  if (u->g.ttl > 0 && (u->g.pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
    return sb_failf(e, SB_EIO, "pidfd_open: %s", strerror(errno)), -1;
  open_call c = {&u->g, NULL, u->listen_fd, 0};
  u->listen_fd = -1; /* the gate's from here, closed with it */
  sb_netsvc_call(&u->net->svc, call_open_gate, &c);
  u->started = true;
  if (c.result != 0) return sb_failf(e, SB_EIO, "cannot serve the port: %s", uv_strerror(c.result)), -1;
  return 0;
}

bool sb_lua_net_gate_finish(lua_State *L, int idx) {
  gate_ud *u = luaL_testudata(L, idx, GATE_META);
  return u ? gate_shut(u) : false;
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

typedef struct http_ud {
  sb_http_result r;
  sb_mem mem;
} http_ud;

static int http_gc(lua_State *L) {
  http_ud *hu = lua_touserdata(L, 1);
  sb_http_result_free(&hu->mem, &hu->r); /* idempotent: buffers reset */
  return 0;
}

/* core.http_get(sb, url, {timeout=, max_bytes=, max_redirects=}) */
static int l_http_get(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  const char *url = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  sb_err e;
  sb_net *n = NET(sb);
  if (!n || !n->has_policy) {
    sb_fail(&e, SB_EACCES, "http_get is off: the sandbox has no allowed_hosts");
    return sb_push_err(L, &e, NULL, 0);
  }
  sb_http_opts o = {.timeout = 30, .max_bytes = 1 << 20, .max_redirects = 10};
  if (lua_getfield(L, 3, "timeout") == LUA_TNUMBER) o.timeout = lua_tonumber(L, -1);
  if (lua_getfield(L, 3, "max_bytes") == LUA_TNUMBER) o.max_bytes = (size_t)lua_tointeger(L, -1);
  if (lua_getfield(L, 3, "max_redirects") == LUA_TNUMBER) o.max_redirects = (int)lua_tointeger(L, -1);
  lua_pop(L, 3);
  /* the result lives in a userdata so an error raised while building the
   * table (OOM) cannot leak its buffers */
  http_ud *hu = lua_newuserdatauv(L, sizeof *hu, 0);
  memset(hu, 0, sizeof *hu);
  hu->mem = sb->mem;
  if (luaL_newmetatable(L, "sandbox.HttpResult")) {
    lua_pushcfunction(L, http_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  sb_http_result *r = &hu->r;
  if (sb_http_get(&sb->mem, &n->policy, url, &o, r, &e) != 0) {
    sb_http_result_free(&sb->mem, r);
    return sb_push_err(L, &e, NULL, 0);
  }
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
  sb_http_result_free(&sb->mem, r);
  return 1;
}

/* ---- closing ------------------------------------------------------------------ */

void sb_lua_net_close(sb_sandbox *sb) {
  sb_net *n = NET(sb);
  if (!n) return;
  while (n->gates) gate_shut(n->gates);
  if (n->proxy_open) sb_netsvc_call(&n->svc, call_close_proxy, &n->proxy);
  sb_netsvc_stop(&n->svc);
  sb_netagent_stop(&n->agent);
  sb_netpolicy_free(&sb->mem, &n->policy);
  sb_free(&sb->mem, n, sizeof *n);
  sb->net = NULL;
}

void sb_lua_net_open(lua_State *L) {
  static const luaL_Reg fns[] = {{"http_get", l_http_get}, {"expose", l_expose},
                                 {"net_proxy", l_net_proxy}, {"check_host", l_check_host},
                                 {"random_token", l_random_token},
                                 {"host_allowed", m_host_allowed},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
