/* The network part of a sandbox (SPEC §5 phase 2): the host policy
 * (allowed_hosts, denied_hosts), sb:http_get, the allowlist proxy commands
 * go through, and exposed ports. Every backend has the policy and http_get;
 * the proxy and ports need commands in their own network namespace (the
 * confinement part's). A port attaches to a command from the Lua layer
 * (core.gate_start after spawn, core.gate_finish when it ends): the runner
 * never sees it. */
#ifndef SB_LUA_NET_H
#define SB_LUA_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "lua/object.h"
#include "net/agent.h"
#include "net/gate.h"
#include "net/hosts.h"
#include "net/proxy.h"
#include "net/service.h"

/* The part's state (shared by lua/net.c and lua/ports.c). */
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
  sb_net *net; /* NULL once closed */
  int listen_fd; /* until started */
  bool started;
  gate_ud *next;
};

/* The network part's class (lua/net.c makes and closes it); its state is
 * shared with lua/ports.c, which finds it here without calling net.c. */
extern const sb_part_class sb_lua_net_part;
static inline sb_net *sb_lua_net(const sb_sandbox *sb) { return sb_part_get(sb, &sb_lua_net_part); }

/* Read allowed_hosts / denied_hosts at opts into the net part. -1 with e on
 * a bad entry (nothing kept). Raises on OOM. */
int sb_lua_net_attach(lua_State *L, sb_sandbox *sb, int opts, sb_err *e);

/* The one reader of the `secrets` option (checked by lua/sandbox/net.lua)
 * at opts: fn(ud, i, rule, header, value) for each entry in order, while
 * it returns true. The number of entries, or -1 with e on a bad one. */
typedef bool (*sb_lua_secret_fn)(void *ud, size_t i, const sb_hostrule *rule, const char *header, size_t hlen,
                                 const char *value, size_t vlen);
long sb_lua_net_secrets(lua_State *L, int opts, sb_lua_secret_fn fn, void *ud, sb_err *e);

void sb_lua_net_methods(lua_State *L); /* host_allowed */
/* core.http_get, check_host, random_token, and the ports' functions */
void sb_lua_net_open(lua_State *L);

#endif
