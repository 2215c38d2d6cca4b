/* The Lua layer compiled into the static library (generated table). */
#ifndef SB_LUA_LAYER_H
#define SB_LUA_LAYER_H

#include <stddef.h>

typedef struct sb_lua_module {
  const char *name; /* for require: "sandbox", "sandbox.exec", ... */
  const char *chunkname; /* "@lua/sandbox/exec.lua": error messages point at the source */
  const char *src;
  size_t len;
} sb_lua_module;

extern const sb_lua_module sb_lua_layer[]; /* ends with a NULL name */

#endif
