#include "lua/options.h"

#include <string.h>

/* ---- normalised constructor options ------------------------------------ */

static int field(lua_State *L, int t, const char *key, int want, bool required) {
  int type = lua_getfield(L, t, key);
  if (type == want) return type;
  if (type == LUA_TNIL && !required) return type;
  return luaL_error(L, "internal: option '%s' is %s, expected a normalised %s", key, lua_typename(L, type),
                    lua_typename(L, want));
}

bool sb_opt_bool(lua_State *L, int t, const char *key) {
  field(L, t, key, LUA_TBOOLEAN, true);
  bool v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

double sb_opt_num(lua_State *L, int t, const char *key) {
  field(L, t, key, LUA_TNUMBER, true);
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

double sb_opt_num_or(lua_State *L, int t, const char *key, double none) {
  double v = field(L, t, key, LUA_TNUMBER, false) == LUA_TNIL ? none : lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

static uint64_t to_u64(lua_State *L, const char *key) {
  if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
    luaL_error(L, "internal: option '%s' must be a normalised non-negative integer", key);
  return (uint64_t)lua_tointeger(L, -1);
}

uint64_t sb_opt_u64(lua_State *L, int t, const char *key) {
  field(L, t, key, LUA_TNUMBER, true);
  uint64_t v = to_u64(L, key);
  lua_pop(L, 1);
  return v;
}

uint64_t sb_opt_u64_or(lua_State *L, int t, const char *key, uint64_t none) {
  uint64_t v = field(L, t, key, LUA_TNUMBER, false) == LUA_TNIL ? none : to_u64(L, key);
  lua_pop(L, 1);
  return v;
}

const char *sb_opt_str(lua_State *L, int t, const char *key) {
  field(L, t, key, LUA_TSTRING, true);
  const char *v = lua_tostring(L, -1);
  lua_pop(L, 1); /* the string stays alive in the options table */
  return v;
}

const char *sb_opt_str_or(lua_State *L, int t, const char *key, const char *none) {
  const char *v = field(L, t, key, LUA_TSTRING, false) == LUA_TNIL ? none : lua_tostring(L, -1);
  lua_pop(L, 1);
  return v;
}

/* ---- per-call method options ------------------------------------------- */

void sb_lua_check_opts(lua_State *L, int idx, const char *fn, const sb_optspec *spec) {
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx)) luaL_error(L, "%s: options must be a table", fn);
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "%s: option names must be strings", fn);
    const char *k = lua_tostring(L, -2);
    const sb_optspec *s = spec;
    while (s->name && strcmp(s->name, k) != 0) s++;
    if (!s->name) luaL_error(L, "%s: unknown option '%s'", fn, k);
    int t = lua_type(L, -1);
    if (t != s->type)
      luaL_error(L, "%s: option '%s' must be a %s, got %s", fn, k, lua_typename(L, s->type), lua_typename(L, t));
    if (t == LUA_TNUMBER && !lua_isinteger(L, -1)) luaL_error(L, "%s: option '%s' must be an integer", fn, k);
    lua_pop(L, 1);
  }
}

bool sb_lua_opt_bool(lua_State *L, int idx, const char *k, bool def) {
  if (!lua_istable(L, idx)) return def;
  bool v = lua_getfield(L, idx, k) == LUA_TBOOLEAN ? lua_toboolean(L, -1) : def;
  lua_pop(L, 1);
  return v;
}

lua_Integer sb_lua_opt_int(lua_State *L, int idx, const char *k, lua_Integer def) {
  if (!lua_istable(L, idx)) return def;
  lua_Integer v = lua_getfield(L, idx, k) == LUA_TNUMBER ? lua_tointeger(L, -1) : def;
  lua_pop(L, 1);
  return v;
}

/* The string stays valid while the option table is on the stack. */
const char *sb_lua_opt_str(lua_State *L, int idx, const char *k, size_t *len) {
  if (!lua_istable(L, idx)) return NULL;
  const char *s = lua_getfield(L, idx, k) == LUA_TSTRING ? lua_tolstring(L, -1, len) : NULL;
  lua_pop(L, 1);
  return s;
}
