/* luaopen_sandbox_core: the C module behind `require "sandbox"`.
 *
 * The constructors take option tables the Lua layer has checked and
 * normalised (every default filled in, sizes as integers): a sandbox is the
 * sandbox object (lua/object.c) with its backend, then its parts —
 * confinement, network, commands — each attached by its own file. This is
 * also the one place where the method table of every sandbox is put
 * together from the parts; the Lua layer adds the methods written in Lua. */
#include "lua/module.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/file.h"
#include "base/glob.h"
#include "fs/container.h"
#include "fs/virtual.h"
#include "lua/audit.h"
#include "lua/caps.h"
#include "lua/channel.h"
#include "lua/confine.h"
#include "lua/exec.h"
#include "lua/forkjob.h"
#include "lua/fs.h"
#include "lua/net.h"
#include "lua/object.h"
#include "lua/options.h"
#include "lua/overlay.h"
#include "lua/ports.h"
#include "lua/remote.h"
#include "lua/review.h"
#include "lua/search.h"
#include "lua/tls.h"
#include "sandbox.h"
#include "plat/fd.h"

/* Load opts.files: {["path"] = "content" | true (a directory) | {symlink =
 * "target"}}. Written by the host, so policy does not apply; limits and the
 * rule on links leading out do. */
static void load_files(lua_State *L, int opts, sb_sandbox *sb) {
  if (lua_getfield(L, opts, "files") != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  int t = lua_gettop(L);
  sb_op *op = lua_newuserdatauv(L, 2 * sizeof *op, 0); /* too big for comfort on the C stack */
  sb_op *dir = op + 1;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "files: keys must be path strings");
    size_t n, len = 0;
    const char *path = lua_tolstring(L, -2, &n);
    int vt = lua_type(L, -1);
    const char *link = NULL;
    if (vt == LUA_TTABLE) {
      lua_getfield(L, -1, "symlink");
      link = lua_tolstring(L, -1, &len);
      lua_pop(L, 1); /* the string stays referenced by the table */
    }
    if (vt != LUA_TSTRING && !(vt == LUA_TBOOLEAN && lua_toboolean(L, -1)) && !link)
      luaL_error(L, "files['%s']: value must be a string (contents), true (a directory) or {symlink = target}", path);
    const char *data = vt == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    sb_code c = sb_path_parse(&op->p, path, n, sb->cwd, sb->cwdlen, &op->e);
    if (c == SB_OK && sb_path_names_no_entry(&op->p) && (data || link)) c = sb_fail(&op->e, SB_EISDIR, NULL);
    if (c == SB_OK && data) {
      sb_write_opts o = {.overwrite = true, .parents = true};
      c = sb->fs.be->write(&sb->fs, &op->p, data, len, &o, &op->e);
    } else if (c == SB_OK && link) {
      size_t pl = sb_path_parent_len(&op->p);
      if (pl && (c = sb_path_from_rel(&dir->p, op->p.buf, pl, &op->e)) == SB_OK)
        c = sb->fs.be->mkdir(&sb->fs, &dir->p, true, &op->e);
      if (c == SB_OK) c = sb->fs.be->symlink(&sb->fs, link, len, &op->p, &op->e);
    } else if (c == SB_OK && !sb_path_names_no_entry(&op->p)) {
      c = sb->fs.be->mkdir(&sb->fs, &op->p, true, &op->e);
    }
    if (c != SB_OK) {
      sb_push_err(L, &op->e, path, n);
      luaL_error(L, "files['%s']: %s", path, lua_tostring(L, -2));
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

/* sandbox.virtual: an in-memory tree. */
static int l_virtual(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t cwdlen;
  const char *cwd = sb_opt_str(L, 1, "cwd"); /* normalised: "/" or "/a/b" */
  cwdlen = strlen(cwd);
  sb_sandbox *sb = sb_lua_new(L, &sb_virtual_backend, 1, cwd, cwdlen);
  int ud = lua_gettop(L);
  sb->fs.quota.max_bytes = sb_opt_u64(L, 1, "max_total_bytes");
  sb->fs.quota.max_nodes = sb_opt_u64(L, 1, "max_files");
  sb_err e;
  if (sb_virtual_open(&sb->fs, &e) != SB_OK) luaL_error(L, "not enough memory");
  if (sb_lua_net_attach(L, sb, 1, &e) != 0) {
    sb_lua_release(L, sb);
    return sb_push_err(L, &e, NULL, 0);
  }
  load_files(L, 1, sb);
  lua_settop(L, ud);
  return 1;
}

/* ---- sandbox.container -------------------------------------------------- */

/* Fds opened during construction, closed by __gc unless handed over: a
 * memory error raised half-way through leaks nothing. */
typedef struct fdguard {
  int n;
  int fds[SB_MAX_READ_ROOTS + 1];
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

static int push_open_error(lua_State *L, fdguard *g, int err, const char *what, const char *path) {
  fdguard_close(g);
  sb_err e;
  sb_fail_errno(&e, err);
  lua_pushnil(L);
  lua_pushfstring(L, "%s: cannot open %s (%s): %s", sb_code_name(e.code), what, strerror(err), path);
  lua_pushstring(L, sb_code_name(e.code));
  return 3;
}

/* A ContainerSandbox, or with `overlay` an OverlaySandbox: the same
 * backend, bound to the merged view of the root once the confinement has
 * mounted it. */
/* The overlay's mount: the merged view (and an upper layer in memory) the
 * confinement's init made, handed to the overlay part here so the two
 * parts never call each other. */
static int mount_overlay(lua_State *L, sb_sandbox *sb, int ud, sb_err *e) {
  const char *why = NULL;
  int fd = sb_lua_confine_merged_fd(sb, &why);
  int mem = fd >= 0 ? sb_lua_confine_upper_fd(sb) : -1;
  return sb_lua_overlay_mount(L, sb, ud, 1, fd, why, mem, e);
}

static int make_container(lua_State *L, bool overlay) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *base = sb_opt_str(L, 1, "base_dir");
  const char *mode = sb_opt_str(L, 1, "mode");
  fdguard *g = new_fdguard(L);
  if (sb_opt_bool(L, 1, "create")) {
    int err = mkdir_host(base);
    if (err) return push_open_error(L, g, err, "base_dir", base);
  }
  int rootfd = open(base, SB_O_DIR | O_CLOEXEC);
  if (rootfd < 0) return push_open_error(L, g, errno, "base_dir", base);
  g->fds[g->n++] = rootfd;
  if (lua_getfield(L, 1, "read_roots") == LUA_TTABLE) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    if (n > SB_MAX_READ_ROOTS) luaL_error(L, "at most %d read_roots", SB_MAX_READ_ROOTS);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      const char *rr = lua_tostring(L, -1);
      int fd = rr ? open(rr, SB_O_DIR | O_CLOEXEC) : -1;
      if (fd < 0) return push_open_error(L, g, rr ? errno : EINVAL, "a read root", rr ? rr : "?");
      g->fds[g->n++] = fd;
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);

  /* sb.cwd: the root's real absolute path */
  char cwd[SB_PATH_MAX + 1];
  if (sb_fd_path(rootfd, cwd, sizeof cwd) != 0 && !realpath(base, cwd))
    return push_open_error(L, g, errno, "base_dir", base);
  sb_sandbox *sb = sb_lua_new(L, &sb_container_backend, 1, cwd, strlen(cwd));
  int ud = lua_gettop(L);
  sb_container_opts o = {.rootfd = rootfd,
                         .roots = g->fds + 1,
                         .nroots = (size_t)g->n - 1,
                         .can_read = strchr(mode, 'r') != NULL,
                         .can_write = strchr(mode, 'w') != NULL,
                         .resolver = sb_opt_str(L, 1, "resolver"),
                         .max_disk_usage = sb_opt_u64_or(L, 1, "max_disk_usage", SB_UNLIMITED)};
  g->n = 0; /* from here the backend owns (and on failure closed) the fds */
  sb_err e;
  if (sb_container_open(&sb->fs, &o, &e) != SB_OK) {
    sb_lua_release(L, sb);
    return sb_push_err(L, &e, NULL, 0);
  }
  bool exec = sb_opt_bool(L, 1, "exec");
  sb_lua_layers layers;
  /* parts, in the order they are released backwards: commands go first,
   * an overlay's state last (the mount is gone by then); an overlay needs
   * its namespace even without commands */
  if ((exec && sb_lua_tls_attach(L, sb, 1, &e) != 0) || (overlay && sb_lua_overlay_attach(L, sb, ud, 1, &e) != 0) ||
      ((exec || overlay) &&
       sb_lua_confine_attach(L, sb, ud, 1, sb_lua_overlay_layers(sb, &layers) ? &layers : NULL, &e) != 0) ||
      (overlay && mount_overlay(L, sb, ud, &e) != 0) || sb_lua_net_attach(L, sb, 1, &e) != 0 ||
      (exec && sb_lua_exec_attach(L, sb, ud, 1, &e) != 0)) {
    sb_lua_release(L, sb);
    return sb_push_err(L, &e, NULL, 0);
  }
  if (overlay) {
    lua_pushliteral(L, "overlay");
    sb_lua_setfield(L, ud, "kind");
  }
  lua_pushstring(L, sb->fs.be == &sb_container_backend ? sb_container_resolver(&sb->fs) : "userspace");
  sb_lua_setfield(L, ud, "resolver");
  lua_pushstring(L, mode);
  sb_lua_setfield(L, ud, "mode");
  lua_settop(L, ud);
  return 1;
}

static int l_container(lua_State *L) { return make_container(L, false); }
static int l_overlay(lua_State *L) { return make_container(L, true); }

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

/* core.methods(): the method table, for the Lua layer to add its own. */
static int l_methods(lua_State *L) {
  sb_lua_push_methods(L);
  return 1;
}

/* sb:_footprint(): bytes held by a virtual tree (benchmarks). */
static int l_footprint(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_pushu64(L, sb->fs.be == &sb_virtual_backend ? (uint64_t)sb_virtual_footprint(&sb->fs) : 0);
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

/* core.sleep(seconds): wait (sb:poll, when only the Lua side has work
 * coming and nothing of the C loop's to wait on). */
static int l_sleep(lua_State *L) {
  double s = luaL_checknumber(L, 1);
  if (s > 0) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
  }
  return 0;
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

/* The method table of every sandbox, from each part's list. */
static void assemble_methods(lua_State *L) {
  lua_newtable(L);
  sb_lua_object_methods(L);
  sb_lua_fs_methods(L);
  sb_lua_search_methods(L);
  sb_lua_exec_methods(L);
  sb_lua_net_methods(L);
  sb_lua_set_methods(L);
}

SB_API int luaopen_sandbox_core(lua_State *L) {
  static const luaL_Reg fns[] = {{"virtual", l_virtual},
                                 {"container", l_container},
                                 {"overlay", l_overlay},
                                 {"remote", sb_lua_remote},
                                 {"remote_list", sb_lua_remote_list},
                                 {"capabilities", sb_caps_push},
                                 {"methods", l_methods},
                                 {"check_open", l_check_open},
                                 {"footprint", l_footprint},
                                 {"setfield", l_setfield},
                                 {"codes", l_codes},
                                 {"glob_match", l_glob_match},
                                 {"clock", l_clock},
                                 {"sleep", l_sleep},
                                 {"environ", l_environ},
                                 {"normalize", l_normalize},
                                 {NULL, NULL}};
  assemble_methods(L);
  luaL_newlib(L, fns);
  /* the backends, each with a Lua module sandbox.<kind> */
  static const char *const backends[] = {"virtual", "container", "overlay", "remote"};
  lua_createtable(L, 4, 0);
  for (int i = 0; i < 4; i++) {
    lua_pushstring(L, backends[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "backends");
  sb_lua_exec_open(L);
  sb_lua_net_open(L);
  sb_lua_tls_open(L);
  sb_lua_ports_open(L);
  sb_lua_channel_open(L);
  sb_lua_review_open(L);
  sb_lua_search_job_open(L);
  sb_lua_call_job_open(L);
  sb_lua_audit_open(L);
  lua_pushliteral(L, SANDBOX_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushlightuserdata(L, NULL); /* JSON null: the value lua-cjson uses too */
  lua_setfield(L, -2, "null");
  return 1;
}
