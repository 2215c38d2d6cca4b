/* sandbox.remote (SPEC §15): the RemoteSandbox's constructor. */
#ifndef SB_LUA_REMOTE_H
#define SB_LUA_REMOTE_H

#include "lua/object.h"

/* core.remote(opts): the normalised options of sandbox.remote; the sandbox,
 * or nil, msg, code. */
int sb_lua_remote(lua_State *L);
/* core.remote_list(opts): {api_url, api_key, timeouts} checked; the engine's
 * sandboxes for the key as {sandbox_id, template, state}, or nil, msg, code. */
int sb_lua_remote_list(lua_State *L);

#endif
