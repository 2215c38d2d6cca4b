/* The review part's functions for Lua (core.diff). */
#ifndef SB_LUA_REVIEW_H
#define SB_LUA_REVIEW_H

#include "lua/compat.h"

/* Add core.diff to the table on top of the stack. */
void sb_lua_review_open(lua_State *L);

#endif
