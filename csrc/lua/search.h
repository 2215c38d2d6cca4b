/* The search methods of every sandbox (lua/search.c). */
#ifndef SB_LUA_SEARCH_H
#define SB_LUA_SEARCH_H

#include "lua/compat.h"

/* glob, grep, snapshot into the table on top. */
void sb_lua_search_methods(lua_State *L);

#endif
