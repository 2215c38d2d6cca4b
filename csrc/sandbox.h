/* sandbox: safe places for Lua agents to work. The one public C header.
 *
 * For a host that loads the module with `require`, nothing here is needed.
 * A host linking statically opens it with
 *   luaL_requiref(L, "sandbox.core", luaopen_sandbox_core, 0); lua_pop(L, 1);
 */
#ifndef SANDBOX_H
#define SANDBOX_H

#include <lua.h>

#define SANDBOX_VERSION "0.1.0"

#if defined(__GNUC__)
#define SB_API __attribute__((visibility("default")))
#else
#define SB_API
#endif

/* The C module `sandbox.core` (constructors, methods). */
SB_API int luaopen_sandbox_core(lua_State *L);

#endif
