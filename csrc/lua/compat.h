/* What differs between the Lua versions the module builds for (SPEC §14):
 * Lua 5.4, 5.3, 5.1 and LuaJIT 2.1. The binding is written against the 5.4
 * API; this header supplies what an older header lacks, under the 5.4
 * names, and nothing else. Every C file of the binding includes it instead
 * of lua.h and lauxlib.h.
 *
 * User values: 5.4 has n per userdata; 5.3 has one, 5.1 an environment
 * table. Below 5.4 a userdata made with n > 0 gets one table as that single
 * value, and user value i is its field [i] (all of ours are tables or nil).
 *
 * Integers: 5.1 and LuaJIT keep every number as a double, so an integer
 * above 2^53 cannot be represented; lua_isinteger there means "a number
 * with an integral value within 2^53", and sb_lua_pushu64 refuses (raises)
 * rather than round a larger value. */
#ifndef SB_LUA_COMPAT_H
#define SB_LUA_COMPAT_H

#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>

#if !defined(LUA_VERSION_NUM) || (LUA_VERSION_NUM != 501 && LUA_VERSION_NUM != 503 && LUA_VERSION_NUM != 504)
#error "sandbox builds against Lua 5.4, 5.3, 5.1 or LuaJIT 2.1 headers (make LUA=lua5.4|lua5.3|lua5.1|luajit)"
#endif

#if defined(__has_include)
#if __has_include(<luajit.h>) && LUA_VERSION_NUM == 501
#include <luajit.h>
#endif
#endif

#define SB_LUA_EXACT_INT ((lua_Integer)1 << 53) /* integers a double holds exactly */

#ifndef LUA_OK
#define LUA_OK 0
#endif

/* ---- 5.1 and LuaJIT ------------------------------------------------------ */
#if LUA_VERSION_NUM == 501

static inline int sb_compat_absindex(lua_State *L, int i) {
  return i > 0 || i <= LUA_REGISTRYINDEX ? i : lua_gettop(L) + i + 1;
}
#define lua_absindex sb_compat_absindex
#define lua_rawlen(L, i) lua_objlen((L), (i))
#define luaL_len(L, i) ((lua_Integer)lua_objlen((L), (i)))

/* The getters return the type of what they pushed, as from 5.3 on. */
#define lua_getfield(L, i, k) (lua_getfield((L), (i), (k)), lua_type((L), -1))
#define lua_rawgeti(L, i, n) (lua_rawgeti((L), (i), (n)), lua_type((L), -1))
#define lua_rawget(L, i) (lua_rawget((L), (i)), lua_type((L), -1))
#define lua_gettable(L, i) (lua_gettable((L), (i)), lua_type((L), -1))
#undef lua_getglobal
#define lua_getglobal(L, k) lua_getfield((L), LUA_GLOBALSINDEX, (k))

static inline int sb_compat_rawgetp(lua_State *L, int i, const void *p) {
  i = lua_absindex(L, i);
  lua_pushlightuserdata(L, (void *)(uintptr_t)p);
  return lua_rawget(L, i);
}
#define lua_rawgetp sb_compat_rawgetp

static inline void sb_compat_rawsetp(lua_State *L, int i, const void *p) {
  i = lua_absindex(L, i);
  lua_pushlightuserdata(L, (void *)(uintptr_t)p);
  lua_insert(L, -2);
  lua_rawset(L, i);
}
#define lua_rawsetp sb_compat_rawsetp

static inline int sb_compat_isinteger(lua_State *L, int i) {
  if (lua_type(L, i) != LUA_TNUMBER) return 0;
  lua_Number n = lua_tonumber(L, i);
  return n == (lua_Number)(lua_Integer)n && n >= -(lua_Number)SB_LUA_EXACT_INT && n <= (lua_Number)SB_LUA_EXACT_INT;
}
#define lua_isinteger sb_compat_isinteger

static inline int sb_compat_getsubtable(lua_State *L, int i, const char *name) {
  i = lua_absindex(L, i);
  if (lua_getfield(L, i, name) == LUA_TTABLE) return 1;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, i, name);
  return 0;
}
#define luaL_getsubtable sb_compat_getsubtable

#ifndef LUAJIT_VERSION /* PUC 5.1: LuaJIT 2.1 has these */
static inline void sb_compat_setfuncs(lua_State *L, const luaL_Reg *l, int nup) {
  luaL_checkstack(L, nup + 1, "too many upvalues");
  for (; l->name; l++) {
    for (int k = 0; k < nup; k++) lua_pushvalue(L, -nup);
    lua_pushcclosure(L, l->func, nup);
    lua_setfield(L, -(nup + 2), l->name);
  }
  lua_pop(L, nup);
}
#define luaL_setfuncs sb_compat_setfuncs
#define luaL_newlib(L, l) (lua_newtable(L), luaL_setfuncs((L), (l), 0))
#define luaL_setmetatable(L, tname) (luaL_getmetatable((L), (tname)), lua_setmetatable((L), -2))
#endif

static inline const char *sb_compat_tolstring(lua_State *L, int i, size_t *len) {
  i = lua_absindex(L, i);
  if (!luaL_callmeta(L, i, "__tostring")) {
    switch (lua_type(L, i)) {
    case LUA_TNUMBER:
    case LUA_TSTRING: lua_pushvalue(L, i); break;
    case LUA_TBOOLEAN: lua_pushstring(L, lua_toboolean(L, i) ? "true" : "false"); break;
    case LUA_TNIL: lua_pushliteral(L, "nil"); break;
    default: lua_pushfstring(L, "%s: %p", luaL_typename(L, i), lua_topointer(L, i));
    }
  }
  return lua_tolstring(L, -1, len);
}
#define luaL_tolstring sb_compat_tolstring

static inline void sb_compat_requiref(lua_State *L, const char *name, lua_CFunction open, int global) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, "_LOADED");
  if (lua_getfield(L, -1, name) == LUA_TNIL || !lua_toboolean(L, -1)) {
    lua_pop(L, 1);
    lua_pushcfunction(L, open);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, name);
  }
  lua_remove(L, -2);
  if (global) {
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_GLOBALSINDEX, name);
  }
}
#define luaL_requiref sb_compat_requiref

#define sb_compat_getuv(L, i) lua_getfenv((L), (i))
#define sb_compat_setuv(L, i) lua_setfenv((L), (i))
#endif /* 5.1 */

/* ---- 5.3 ----------------------------------------------------------------- */
#if LUA_VERSION_NUM == 503
#define sb_compat_getuv(L, i) lua_getuservalue((L), (i))
#define sb_compat_setuv(L, i) lua_setuservalue((L), (i))
#endif

/* ---- below 5.4: user values, luaL_typeerror ------------------------------ */
#if LUA_VERSION_NUM < 504
static inline void *sb_compat_newuserdatauv(lua_State *L, size_t size, int nuv) {
  void *p = lua_newuserdata(L, size);
  if (nuv > 0) {
    lua_createtable(L, nuv, 0);
    sb_compat_setuv(L, -2);
  }
  return p;
}
#define lua_newuserdatauv sb_compat_newuserdatauv

static inline int sb_compat_getiuservalue(lua_State *L, int i, int n) {
  sb_compat_getuv(L, i);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return LUA_TNONE;
  }
  lua_rawgeti(L, -1, n);
  lua_remove(L, -2);
  return lua_type(L, -1);
}
#define lua_getiuservalue sb_compat_getiuservalue

static inline int sb_compat_setiuservalue(lua_State *L, int i, int n) {
  i = lua_absindex(L, i);
  sb_compat_getuv(L, i);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 2);
    return 0;
  }
  lua_insert(L, -2);
  lua_rawseti(L, -2, n);
  lua_pop(L, 1);
  return 1;
}
#define lua_setiuservalue sb_compat_setiuservalue

static inline int sb_compat_typeerror(lua_State *L, int arg, const char *tname) {
  const char *got = luaL_typename(L, arg);
  return luaL_argerror(L, arg, lua_pushfstring(L, "%s expected, got %s", tname, got));
}
#define luaL_typeerror sb_compat_typeerror
#endif

/* Push an unsigned 64-bit count (a size, an offset, bytes dropped): as an
 * integer where the Lua has them, else as a number while it is exact. */
static inline void sb_lua_pushu64(lua_State *L, uint64_t v) {
#if LUA_VERSION_NUM == 501
  if (v > (uint64_t)SB_LUA_EXACT_INT)
    luaL_error(L, "a count of %f is too large for this Lua (numbers are doubles)", (double)v);
#endif
  lua_pushinteger(L, (lua_Integer)v);
}

#endif
