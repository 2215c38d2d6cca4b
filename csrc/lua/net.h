/* Network for Lua (SPEC §5 phase 2): the host policy of a sandbox
 * (allowed_hosts, denied_hosts), sb:http_get, the allowlist proxy its
 * commands go through, and exposed ports. Both backends have the policy and
 * http_get; the proxy and ports need a container's commands. */
#ifndef SB_LUA_NET_H
#define SB_LUA_NET_H

#include <stdbool.h>
#include <sys/types.h>

#include "lua/object.h"

/* Read allowed_hosts / denied_hosts at opts into sb->net. -1 with e on a bad
 * entry (nothing kept). Raises on OOM. */
int sb_lua_net_attach(lua_State *L, sb_sandbox *sb, int opts, sb_err *e);
/* Close the proxy and every port, stop the service thread and the
 * namespace agent, free the policy (dispose, __gc; after the commands). */
void sb_lua_net_close(sb_sandbox *sb);

/* The gate at idx (from core.expose) starts serving for the process pid.
 * 0, or -1 with e. */
int sb_lua_net_gate_start(lua_State *L, int idx, pid_t pid, sb_err *e);
/* The process behind the gate at idx finished: close it. Returns whether
 * its idle TTL killed the process. */
bool sb_lua_net_gate_finish(lua_State *L, int idx);

void sb_lua_net_open(lua_State *L); /* core.http_get, core.expose, core.net_proxy, core.check_host */

#endif
