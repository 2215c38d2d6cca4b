/* What this kernel can enforce: sandbox.capabilities(). */
#ifndef SB_CAPS_H
#define SB_CAPS_H

#include <stdbool.h>
#include <lua.h>

/* Push {openat2=, pidfd=, landlock_abi=, ...}; a lua_CFunction. */
int sb_caps_push(lua_State *L);
/* Does this kernel give pidfds (pidfd_open)? */
bool sb_caps_have_pidfd(void);

#endif
