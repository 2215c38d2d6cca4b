/* luaopen_sandbox_core: the C module behind `require "sandbox"`.
 * Constructors take option tables already checked by lua/sandbox/options.lua;
 * they still read them defensively (a host may call core directly). */
#include <string.h>
#include <time.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/container.h"
#include "base/clock.h"
#include "sandbox.h"
#include "lua/caps.h"
#include "base/glob.h"
#include "lua/object.h"
#include "lua/exec.h"
#include "lua/net.h"
#include "fs/virtual.h"

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
  if (sb_lua_net_attach(L, sb, 1, &e) != 0) {
    sb_lua_release(L, sb);
    return sb_push_err(L, &e, NULL, 0);
  }
  load_files(L, 1, sb);
  lua_settop(L, ud);
  return 1;
}

/* ---- sandbox.container -------------------------------------------------- */

#define MAX_READ_ROOTS 64

/* Fds opened during construction, closed by __gc unless handed over: a
 * memory error raised half-way through leaks nothing. */
typedef struct fdguard {
  int n;
  int fds[MAX_READ_ROOTS + 1];
} fdguard;

static void fdguard_close(fdguard *g) {
  for (int i = 0; i < g->n; i++)
    if (g->fds[i] >= 0) close(g->fds[i]);
  g->n = 0;
}

static int fdguard_gc(lua_State *L) {
  fdguard_close(lua_touserdata(L, 1));
  return 0;
}

static fdguard *new_fdguard(lua_State *L) {
  fdguard *g = lua_newuserdatauv(L, sizeof *g, 0);
  g->n = 0;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, fdguard_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  return g;
}

/* mkdir -p for the host path given as base_dir (trusted host config). */
static int mkdir_host(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n >= sizeof buf) return ENAMETOOLONG;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return errno;
    buf[i] = c;
  }
  return 0;
}

static int push_open_error(lua_State *L, fdguard *g, int err, const char *what,
                           const char *path) {
  fdguard_close(g);
  sb_err e;
  sb_fail_errno(&e, err);
  lua_pushnil(L);
  lua_pushfstring(L, "%s: cannot open %s (%s): %s", sb_code_name(e.code), what, strerror(err), path);
  lua_pushstring(L, sb_code_name(e.code));
  return 3;
}

static const char *str_field(lua_State *L, int t, const char *k, const char *def) {
  const char *v = lua_getfield(L, t, k) == LUA_TSTRING ? lua_tostring(L, -1) : def;
  lua_pop(L, 1); /* the string stays alive in the options table */
  return v;
}

static int l_container(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *base = str_field(L, 1, "base_dir", NULL);
  if (!base) luaL_error(L, "base_dir is required");
  const char *mode = str_field(L, 1, "mode", "rw");
  const char *resolver = str_field(L, 1, "resolver", "auto");
  lua_getfield(L, 1, "create");
  bool create = lua_toboolean(L, -1);
  lua_pop(L, 1);

  fdguard *g = new_fdguard(L);
  if (create) {
    int err = mkdir_host(base);
    if (err) return push_open_error(L, g, err, "base_dir", base);
  }
  int rootfd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) return push_open_error(L, g, errno, "base_dir", base);
  g->fds[g->n++] = rootfd;
  if (lua_getfield(L, 1, "read_roots") == LUA_TTABLE) {
    lua_Integer n = luaL_len(L, -1);
    if (n > MAX_READ_ROOTS) luaL_error(L, "at most %d read_roots", MAX_READ_ROOTS);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      const char *rr = lua_tostring(L, -1);
      int fd = rr ? open(rr, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
      if (fd < 0) return push_open_error(L, g, rr ? errno : EINVAL, "a read root", rr ? rr : "?");
      g->fds[g->n++] = fd;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);

  /* sb.cwd: the root's real absolute path */
  char lnk[48], cwd[SB_PATH_MAX + 1];
  snprintf(lnk, sizeof lnk, "/proc/self/fd/%d", rootfd);
  ssize_t cl = readlink(lnk, cwd, sizeof cwd - 1);
  if (cl <= 0 && !realpath(base, cwd)) return push_open_error(L, g, errno, "base_dir", base);
  if (cl > 0) cwd[cl] = '\0';
  sb_sandbox *sb = sb_lua_new(L, &sb_rootfs_backend, 1, cwd, strlen(cwd));
  int ud = lua_gettop(L);
  sb_rootfs_opts o = {
      .rootfd = rootfd, .roots = g->fds + 1, .nroots = (size_t)g->n - 1,
      .can_read = strchr(mode, 'r') != NULL, .can_write = strchr(mode, 'w') != NULL,
      .resolver = resolver,
      .max_disk_usage = lua_getfield(L, 1, "max_disk_usage") == LUA_TNUMBER
                            ? (uint64_t)lua_tointeger(L, -1) : SB_UNLIMITED};
  lua_pop(L, 1);
  g->n = 0; /* from here the backend owns (and on failure closed) the fds */
  sb_err e;
  if (sb_rootfs_open(sb, &o, &e) != SB_OK) {
    sb_lua_release(L, sb);
    return sb_push_err(L, &e, NULL, 0);
  }
  if (sb_lua_net_attach(L, sb, 1, &e) != 0) {
    sb_lua_release(L, sb);
    return sb_push_err(L, &e, NULL, 0);
  }
  lua_getfield(L, 1, "exec");
  bool exec = lua_isnil(L, -1) || lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (exec) {
    sb_lua_exec_opts xo = {.grace = 2, .drain = 2, .max_output = 1 << 20, .max_background = 3};
    if (lua_getfield(L, 1, "kill_grace") == LUA_TNUMBER) xo.grace = lua_tonumber(L, -1);
    if (lua_getfield(L, 1, "max_output_bytes") == LUA_TNUMBER)
      xo.max_output = (size_t)lua_tointeger(L, -1);
    if (lua_getfield(L, 1, "max_background_processes") == LUA_TNUMBER)
      xo.max_background = (int)lua_tointeger(L, -1);
    lua_pop(L, 3);
    sb_lua_exec_attach(L, sb, &xo);
    if (sb_lua_confine(L, sb, 1, &e) != 0) {
      sb_lua_release(L, sb);
      return sb_push_err(L, &e, NULL, 0);
    }
    lua_pushboolean(L, 1);
    sb_lua_setfield(L, ud, "has_exec");
  }
  lua_pushstring(L, sb_rootfs_resolver(sb));
  sb_lua_setfield(L, ud, "resolver");
  lua_pushstring(L, mode);
  sb_lua_setfield(L, ud, "mode");
  lua_settop(L, ud);
  return 1;
}

/* core.normalize(sb, path): the clean root-relative form of an agent path
 * ("" for the root), or nil, msg, code from the front door. */
static int l_normalize(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_op *op = lua_newuserdatauv(L, sizeof *op, 0);
  op->name = "normalize";
  op->parsed = op->show_raw = op->no_path = false;
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK) {
    const char *raw = op->raw;
    return sb_push_err(L, &op->e, raw, op->rawlen > 200 ? 200 : op->rawlen);
  }
  char clean[SB_PATH_MAX + 1];
  size_t n = sb_path_clean(&op->p, clean);
  lua_pushlstring(L, clean, n);
  return 1;
}

/* core.check_open(sb, what): raises "what: attempt to use a disposed
 * sandbox" at the position of the Lua method's caller (level 2), so the
 * error points at the user's line, not into the Lua layer. */
static int l_check_open(lua_State *L) {
  sb_sandbox *sb = sb_lua_check(L, 1);
  if (!sb->closed) return 0;
  luaL_where(L, 2);
  lua_pushfstring(L, "%s: attempt to use a disposed sandbox", luaL_optstring(L, 2, "sandbox"));
  lua_concat(L, 2);
  return lua_error(L);
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
  lua_pushnumber(L, sb_now());
  return 1;
}

/* core.glob_match(pattern, path): the matcher rules and glob use. */
static int l_glob_match(lua_State *L) {
  size_t pl, sl;
  const char *p = luaL_checklstring(L, 1, &pl), *s = luaL_checklstring(L, 2, &sl);
  lua_pushboolean(L, sb_glob_match(p, pl, s, sl));
  return 1;
}

/* core.environ(): the host environment as a table (for inherit_env). */
static int l_environ(lua_State *L) {
  extern char **environ;
  lua_newtable(L);
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || eq == *e) continue;
    lua_pushlstring(L, *e, (size_t)(eq - *e));
    lua_pushstring(L, eq + 1);
    lua_rawset(L, -3);
  }
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
                                 {"container", l_container},
                                 {"capabilities", sb_caps_push},
                                 {"methods", l_methods},
                                 {"check_open", l_check_open},
                                 {"footprint", l_footprint},
                                 {"setfield", l_setfield},
                                 {"codes", l_codes},
                                 {"glob_match", l_glob_match},
                                 {"clock", l_clock},
                                 {"environ", l_environ},
                                 {"normalize", l_normalize},
                                 {NULL, NULL}};
  luaL_newlib(L, fns);
  sb_lua_exec_open(L);
  sb_lua_net_open(L);
  lua_pushliteral(L, SANDBOX_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushlightuserdata(L, NULL); /* JSON null: the value lua-cjson uses too */
  lua_setfield(L, -2, "null");
  return 1;
}
