/* Opening the module in a host that links libsandbox.a: the Lua layer comes
 * from sb_lua_layer[] (compiled in), the C core from luaopen_sandbox_core. */
#include "lua/compat.h"

#include "lua_layer.h"
#include "sandbox.h"

/* package.preload loader: upvalue 1 is the index into sb_lua_layer. */
static int load_module(lua_State *L) {
  const sb_lua_module *m = &sb_lua_layer[lua_tointeger(L, lua_upvalueindex(1))];
  if (luaL_loadbuffer(L, m->src, m->len, m->chunkname) != LUA_OK) return lua_error(L);
  lua_pushstring(L, m->name);
  lua_call(L, 1, 1);
  return 1;
}

void sandbox_preload(lua_State *L) {
#ifdef LUA_PRELOAD_TABLE
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
#else /* 5.1, LuaJIT: package.preload, reached through the loaded modules */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, "_LOADED");
  luaL_getsubtable(L, -1, "package");
  luaL_getsubtable(L, -1, "preload");
  lua_replace(L, -3);
  lua_pop(L, 1);
#endif
  lua_pushcfunction(L, luaopen_sandbox_core);
  lua_setfield(L, -2, "sandbox.core");
  for (lua_Integer i = 0; sb_lua_layer[i].name; i++) {
    lua_pushinteger(L, i);
    lua_pushcclosure(L, load_module, 1);
    lua_setfield(L, -2, sb_lua_layer[i].name);
  }
  lua_pop(L, 1);
}

SB_API int luaopen_sandbox(lua_State *L) {
  sandbox_preload(L);
  if (lua_getglobal(L, "require") != LUA_TFUNCTION)
    return luaL_error(L, "sandbox needs the package library (luaL_openlibs or luaopen_package)");
  lua_pushliteral(L, "sandbox");
  lua_call(L, 1, 1);
  return 1;
}
