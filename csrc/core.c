/* luaopen_sandbox_core: the C module behind `require "sandbox"`.
 * Constructors take option tables already checked by lua/sandbox/options.lua;
 * they still read them defensively (a host may call core directly). */
#include <string.h>
#include <time.h>

#include "sandbox.h"
#include "sb_glob.h"
#include "sb_lua.h"
#include "vfs.h"

void sb_lua_push_methods(lua_State *L);

/* Normalise an absolute cwd: collapse separators, drop "." and a trailing
 * slash. ".." is refused by the options layer; here it is kept literal. */
static size_t norm_cwd(const char *s, size_t n, char *out, size_t cap) {
  size_t len = 0, i = 0;
  while (i < n) {
    while (i < n && s[i] == '/') i++;
    size_t b = i;
    while (i < n && s[i] != '/') i++;
    if (i == b || (i - b == 1 && s[b] == '.')) continue;
    if (len + 1 + (i - b) >= cap) break;
    out[len++] = '/';
    memcpy(out + len, s + b, i - b);
    len += i - b;
  }
  if (len == 0) out[len++] = '/';
  out[len] = '\0';
  return len;
}

static lua_Integer int_field(lua_State *L, int t, const char *k, lua_Integer def) {
  lua_Integer v = lua_getfield(L, t, k) == LUA_TNUMBER ? lua_tointeger(L, -1) : def;
  lua_pop(L, 1);
  return v < 0 ? 0 : v;
}

/* Load opts.files: {["path"] = "content" | true (a directory)}. Written by
 * the host, so policy does not apply; limits do. */
static void load_files(lua_State *L, int opts, sb_sandbox *sb) {
  if (lua_getfield(L, opts, "files") != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  int t = lua_gettop(L);
  sb_op *op = lua_newuserdatauv(L, sizeof *op, 0); /* too big for comfort on the C stack */
  lua_pushnil(L);
  while (lua_next(L, t)) {
    if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "files: keys must be path strings");
    size_t n, len = 0;
    const char *path = lua_tolstring(L, -2, &n);
    int vt = lua_type(L, -1);
    if (vt != LUA_TSTRING && !(vt == LUA_TBOOLEAN && lua_toboolean(L, -1)))
      luaL_error(L, "files['%s']: value must be a string (contents) or true (a directory)", path);
    const char *data = vt == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    sb_code c = sb_path_parse(&op->p, path, n, sb->cwd, sb->cwdlen, &op->e);
    if (c == SB_OK && sb_path_names_no_entry(&op->p) && data)
      c = sb_fail(&op->e, SB_EISDIR, NULL);
    if (c == SB_OK && data) {
      sb_write_opts o = {.overwrite = true, .parents = true};
      c = sb->be->write(sb, &op->p, data, len, &o, &op->e);
    } else if (c == SB_OK && !sb_path_names_no_entry(&op->p)) {
      c = sb->be->mkdir(sb, &op->p, true, &op->e);
    }
    if (c != SB_OK) {
      sb_push_err(L, &op->e, path, n);
      luaL_error(L, "files['%s']: %s", path, lua_tostring(L, -2));
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

static int l_virtual(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  char cwd[SB_PATH_MAX + 1];
  size_t cwdlen = 1;
  strcpy(cwd, "/");
  if (lua_getfield(L, 1, "cwd") == LUA_TSTRING) {
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    if (n == 0 || s[0] != '/') luaL_error(L, "cwd must be an absolute path");
    cwdlen = norm_cwd(s, n, cwd, sizeof cwd);
  }
  lua_pop(L, 1);
  sb_sandbox *sb = sb_lua_new(L, &sb_vfs_backend, 1, cwd, cwdlen);
  int ud = lua_gettop(L);
  sb->quota.max_bytes = (uint64_t)int_field(L, 1, "max_total_bytes", 64 << 20);
  sb->quota.max_nodes = (uint64_t)int_field(L, 1, "max_files", 100000);
  sb_err e;
  if (sb_vfs_open(sb, &e) != SB_OK) luaL_error(L, "not enough memory");
  load_files(L, 1, sb);
  lua_settop(L, ud);
  return 1;
}

static int l_methods(lua_State *L) {
  sb_lua_push_methods(L);
  return 1;
}

/* sb:_footprint(): bytes held by a virtual tree (benchmarks). */
static int l_footprint(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  lua_pushinteger(L, sb->be == &sb_vfs_backend ? (lua_Integer)sb_vfs_footprint(sb) : 0);
  return 1;
}

static int l_setfield(lua_State *L) {
  sb_lua_check(L, 1);
  luaL_checkstring(L, 2);
  lua_settop(L, 3);
  sb_lua_setfield(L, 1, lua_tostring(L, 2));
  return 0;
}

/* core.clock(): CLOCK_MONOTONIC seconds, for benchmarks (os.clock is CPU). */
static int l_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + ts.tv_nsec / 1e9);
  return 1;
}

/* core.glob_match(pattern, path): the matcher rules and glob use. */
static int l_glob_match(lua_State *L) {
  size_t pl, sl;
  const char *p = luaL_checklstring(L, 1, &pl), *s = luaL_checklstring(L, 2, &sl);
  lua_pushboolean(L, sb_glob_match(p, pl, s, sl));
  return 1;
}

static int l_codes(lua_State *L) {
  lua_createtable(L, SB_NCODES - 1, 0);
  for (int c = 1; c < SB_NCODES; c++) {
    lua_pushstring(L, sb_code_name((sb_code)c));
    lua_rawseti(L, -2, c);
  }
  return 1;
}

SB_API int luaopen_sandbox_core(lua_State *L) {
  static const luaL_Reg fns[] = {{"virtual", l_virtual},
                                 {"methods", l_methods},
                                 {"footprint", l_footprint},
                                 {"setfield", l_setfield},
                                 {"codes", l_codes},
                                 {"glob_match", l_glob_match},
                                 {"clock", l_clock},
                                 {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_pushliteral(L, SANDBOX_VERSION);
  lua_setfield(L, -2, "version");
  return 1;
}
