/* sandbox: safe places for Lua agents to work. The one public C header.
 *
 * A host that loads the module with `require "sandbox"` (the shared module
 * sandbox/core.so plus the Lua files) needs nothing here. A host linking the
 * static library (libsandbox.a: the C core, the Lua layer compiled in, and a
 * private copy of libuv whose symbols are not exported) opens it with
 *
 *   luaL_openlibs(L);                 // `package` at least: the layer uses require
 *   luaL_requiref(L, "sandbox", luaopen_sandbox, 0);
 *
 * Every function takes the lua_State it works on; there is no process-global
 * state, so states on different threads are independent. Memory comes from
 * the state's allocator (lua_getallocf) except libuv's own small bookkeeping.
 */
#ifndef SANDBOX_H
#define SANDBOX_H

#include <lua.h>

#define SANDBOX_VERSION "0.1.0"

/* SB_API: exported from the shared module too (only luaopen_*); the rest is
 * linked from libsandbox.a and never exported from a host's binary. */
#if defined(__GNUC__)
#define SB_API __attribute__((visibility("default")))
#else
#define SB_API
#endif

/* The C module `sandbox.core` (constructors, methods). */
SB_API int luaopen_sandbox_core(lua_State *L);

/* Static library only: registers `sandbox`, `sandbox.core` and the Lua
 * modules of the layer in package.preload, so `require` finds them without
 * any file on disk. */
void sandbox_preload(lua_State *L);

/* Static library only: sandbox_preload, then requires and returns the
 * `sandbox` module (for luaL_requiref). */
SB_API int luaopen_sandbox(lua_State *L);

/* Errors raised inside on_stdout / on_stderr / on_exit callbacks go to
 * `handler(err, info)` (info: {callback=, id=, pid=}) instead of being
 * re-raised by the poll/read/wait/exec call that ran them. NULL restores the
 * default. The same as sandbox.set_error_handler(fn) from Lua. */
void sandbox_set_error_handler(lua_State *L, lua_CFunction handler);

/* Driving background commands from the host's own loop, from Lua:
 *   sb:backend_fd()       an fd that turns readable when there is work
 *   sb:backend_timeout()  ms until a timer is due (-1: none)
 *   sb:poll()             runs what is ready, never blocks */

#endif
