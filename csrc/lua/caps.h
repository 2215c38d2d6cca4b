/* What this kernel can enforce: sandbox.capabilities(). */
#ifndef SB_LUA_CAPS_H
#define SB_LUA_CAPS_H

#include "lua/compat.h"

/* Push {openat2=, pidfd=, landlock_abi=, ...}; a lua_CFunction. */
int sb_caps_push(lua_State *L);

#endif
