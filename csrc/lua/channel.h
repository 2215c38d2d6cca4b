/* The process's own stdio as a line channel (the MCP server's stdio
 * transport) and the signals that end a server or a passed-through command
 * as events it can act on (dispose, forward) instead of a death. */
#ifndef SB_LUA_CHANNEL_H
#define SB_LUA_CHANNEL_H

#include "lua/compat.h"

/* Add core.channel to the table on top of the stack. */
void sb_lua_channel_open(lua_State *L);

#endif
