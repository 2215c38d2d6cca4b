/* The network part's servers for commands (SPEC §5 phase 2): the
 * allowlist proxy inside the commands' network namespace, and exposed
 * ports (the gate in front of a background command's port). Both live on
 * the sandbox's service thread (net/service.h); everything here runs on the
 * Lua state's thread and talks to them only through sb_netsvc_call. */
#include "lua/ports.h"

#include "lua/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exec/local.h"
#include "lua/audit.h"
#include "lua/confine.h"
#include "lua/exec.h"
#include "lua/tls.h"
#include "plat/fd.h"
#include "plat/proc.h"

#define GATE_META "sandbox.Gate"

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
  sb_net *n = sb_lua_net(sb);
  sb_lua_confine_ready(sb); /* the commands' network, made at first need */
  sb_confine *c = sb_lua_confine(sb);
  const sb_netns *ns = c ? sb_confine_netns(c) : NULL;
  if (!ns && c && c->refuse) { /* commands are refused: say why, not what would help otherwise */
    sb_failf(e, SB_ENOTSUP, "%s", c->why);
    return -1;
  }
  if (!ns) {
    sb_failf(e, SB_EINVAL,
             "%s needs the sandbox's commands in their own network (allow_outbound = "
             "false): with outbound access they could go around it",
             what);
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
  sb_net *n = sb_lua_net(sb);
  if (!n || !n->has_policy) return 0;
  if (!n->proxy_open) {
    sb_err e;
    if (net_ready(sb, "allowed_hosts", &e) != 0) return sb_push_err(L, &e, NULL, 0);
    int fd = sb_netagent_listen(&n->agent, 0, &n->proxy_port);
    if (fd < 0) {
      sb_failf(&e, SB_EIO, "cannot open the proxy's port: %s", strerror(-fd));
      return sb_push_err(L, &e, NULL, 0);
    }
    n->proxy.log = sb_lua_audit_netlog(sb);
    n->proxy.ca = sb_lua_tls_ca(sb); /* CONNECTs to hosts with a secret are intercepted with it */
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
  int fd = sb_socket_cloexec(ss.ss_family, SOCK_STREAM, true), one = 1;
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
  sb_net *n = sb_lua_net(sb);
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
    if (getenv("SANDBOX_NO_PIDFD") /* test switch */ || !sb_local_have_pidfd()) {
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
  u->g.log = sb_lua_audit_netlog(sb);
  u->g.inner_port = inner;
  u->g.ttl = ttl;
  u->g.grace = grace;
  if (token) memcpy(u->g.token, token, toklen);
  u->g.toklen = toklen;
  lua_pushinteger(L, outer);
  lua_pushinteger(L, inner);
  return 3;
}

/* core.gate_start(gate, pid) -> true | nil, msg, code: the port starts
 * serving for the command that was given it. */
static int l_gate_start(lua_State *L) {
  gate_ud *u = luaL_checkudata(L, 1, GATE_META);
  pid_t pid = (pid_t)luaL_checkinteger(L, 2);
  sb_err e;
  if (!u->net || u->started) {
    sb_fail(&e, SB_EINVAL, "this port is already in use");
    return sb_push_err(L, &e, NULL, 0);
  }
  if (u->g.ttl > 0 && (u->g.pidfd = sb_pidfd_open(pid)) < 0) {
    sb_failf(&e, SB_EIO, "pidfd_open: %s", strerror(errno));
    return sb_push_err(L, &e, NULL, 0);
  }
  open_call c = {&u->g, NULL, u->listen_fd, 0};
  u->listen_fd = -1; /* the gate's from here, closed with it */
  sb_netsvc_call(&u->net->svc, call_open_gate, &c);
  u->started = true;
  if (c.result != 0) {
    sb_failf(&e, SB_EIO, "cannot serve the port: %s", uv_strerror(c.result));
    return sb_push_err(L, &e, NULL, 0);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.gate_finish(gate) -> whether the idle TTL killed the command: its
 * command ended, the port closes with it. */
static int l_gate_finish(lua_State *L) {
  lua_pushboolean(L, gate_shut(luaL_checkudata(L, 1, GATE_META)));
  return 1;
}

void sb_lua_ports_close(sb_net *n) {
  while (n->gates) gate_shut(n->gates);
  if (n->proxy_open) sb_netsvc_call(&n->svc, call_close_proxy, &n->proxy);
  sb_netsvc_stop(&n->svc);
  sb_netagent_stop(&n->agent);
}

void sb_lua_ports_open(lua_State *L) {
  static const luaL_Reg fns[] = {{"expose", l_expose},
                                 {"net_proxy", l_net_proxy},
                                 {"gate_start", l_gate_start},
                                 {"gate_finish", l_gate_finish},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
