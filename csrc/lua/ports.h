/* The network part's servers for commands (lua/ports.c): the allowlist
 * proxy and exposed ports. */
#ifndef SB_LUA_PORTS_H
#define SB_LUA_PORTS_H

#include "lua/compat.h"

struct sb_net;

/* Close the proxy and every port, stop the service thread and the
 * namespace agent (the network part's close, before its policy goes). */
void sb_lua_ports_close(struct sb_net *n);
void sb_lua_ports_open(lua_State *L); /* core.expose, net_proxy, gate_start, gate_finish */

#endif
