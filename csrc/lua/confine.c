/* From a container's options to the confinement of its commands:
 * confine, allow_outbound, memory/cpu/pids/file_size limits, user,
 * read_paths (checked by lua/sandbox/options.lua). */
#include "fs/container.h"
#include "lua/exec.h"

#define MAX_READ_PATHS 32

static bool opt_bool(lua_State *L, int t, const char *k, bool def) {
  bool v = lua_getfield(L, t, k) == LUA_TBOOLEAN ? lua_toboolean(L, -1) : def;
  lua_pop(L, 1);
  return v;
}

static double opt_num(lua_State *L, int t, const char *k) {
  double v = lua_getfield(L, t, k) == LUA_TNUMBER ? lua_tonumber(L, -1) : 0;
  lua_pop(L, 1);
  return v < 0 ? 0 : v;
}

int sb_lua_confine(lua_State *L, sb_sandbox *sb, int opts, sb_err *e) {
  opts = lua_absindex(L, opts);
  int ro[64];
  const char *extra[MAX_READ_PATHS + 1];
  size_t nextra = 0;
  sb_confine_opts co = {
      .confine = opt_bool(L, opts, "confine", true),
      .allow_outbound = opt_bool(L, opts, "allow_outbound", false),
      .limits = {.memory = (uint64_t)opt_num(L, opts, "memory_limit"),
                 .pids = (uint64_t)opt_num(L, opts, "pids_limit"),
                 .cpu = opt_num(L, opts, "cpu_limit")},
      .file_size = (uint64_t)opt_num(L, opts, "file_size_limit"),
      .root_fd = sb_rootfs_rootfd(sb),
      .ro_fds = ro,
      .nro = sb_rootfs_read_roots(sb, ro, sizeof ro / sizeof *ro),
      .extra_rx = extra,
  };
  if (lua_getfield(L, opts, "user") == LUA_TTABLE) {
    co.drop_user = true;
    lua_getfield(L, -1, "uid");
    co.uid = (uid_t)lua_tointeger(L, -1);
    lua_getfield(L, -2, "gid");
    co.gid = (gid_t)lua_tointeger(L, -1);
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, opts, "read_paths") == LUA_TTABLE) { /* strings stay in opts */
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n && nextra < MAX_READ_PATHS; i++) {
      lua_rawgeti(L, -1, i);
      extra[nextra++] = lua_tostring(L, -1);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  extra[nextra] = NULL;
  if (sb_lua_exec_confine(sb, &co, e) != 0) return -1;
  sb_lua_exec_push_confinement(L, sb, co.confine);
  sb_lua_setfield(L, -2, "confinement");
  return 0;
}
