/* The review part's functions for Lua: core.diff, core.review_scan,
 * core.review_entry (lua/sandbox/diff.lua, lua/sandbox/overlay.lua). */
#ifndef SB_LUA_REVIEW_H
#define SB_LUA_REVIEW_H

#include "lua/compat.h"

/* Add them to the table on top of the stack. */
void sb_lua_review_open(lua_State *L);

#endif
