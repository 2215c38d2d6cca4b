/* The Lua binding of the Sandbox interface (SPEC §3): one set of methods for
 * every backend. Each method: front door -> policy -> backend -> push ->
 * audit. Misuse raises; environmental failures return nil, msg, code. */
#include "lua/object.h"
#include "lua/exec.h"
#include "lua/net.h"

#include <string.h>
#include <time.h>

/* Registry keys: addresses of immutable statics (no mutable global state). */
static const char SB_CLASS = 0;
static const char SB_FIELDS_META = 0;

sb_sandbox *sb_lua_check(lua_State *L, int idx) {
  void *p = lua_touserdata(L, idx);
  if (p && lua_getmetatable(L, idx)) {
    int t = lua_rawgetp(L, -1, &SB_CLASS);
    lua_pop(L, 2);
    if (t == LUA_TBOOLEAN) return p;
  }
  luaL_typeerror(L, idx, "sandbox");
  return NULL;
}

sb_sandbox *sb_lua_check_open(lua_State *L, int idx) {
  sb_sandbox *sb = sb_lua_check(L, idx);
  if (sb->closed) luaL_error(L, "attempt to use a disposed sandbox");
  return sb;
}

/* ---- options ---------------------------------------------------------- */

void sb_lua_check_opts(lua_State *L, int idx, const char *fn, const sb_optspec *spec) {
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx)) luaL_error(L, "%s: options must be a table", fn);
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "%s: option names must be strings", fn);
    const char *k = lua_tostring(L, -2);
    const sb_optspec *s = spec;
    while (s->name && strcmp(s->name, k) != 0) s++;
    if (!s->name) luaL_error(L, "%s: unknown option '%s'", fn, k);
    int t = lua_type(L, -1);
    if (t != s->type)
      luaL_error(L, "%s: option '%s' must be a %s, got %s", fn, k, lua_typename(L, s->type),
                 lua_typename(L, t));
    if (t == LUA_TNUMBER && !lua_isinteger(L, -1) && strcmp(k, "timeout") != 0)
      luaL_error(L, "%s: option '%s' must be an integer", fn, k);
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

/* ---- paths, policy, results, audit ------------------------------------ */

sb_code sb_lua_arg_path(lua_State *L, sb_sandbox *sb, int idx, sb_op *op) {
  if (lua_type(L, idx) != LUA_TSTRING) luaL_typeerror(L, idx, "string");
  op->raw = lua_tolstring(L, idx, &op->rawlen);
  sb_code c = sb_path_parse(&op->p, op->raw, op->rawlen, sb->cwd, sb->cwdlen, &op->e);
  op->parsed = c == SB_OK;
  return c;
}

sb_code sb_lua_guard(sb_sandbox *sb, sb_op *op, const sb_path *p, sb_access acc, int kind) {
  char tmp[SB_PATH_MAX + 1];
  const char *c = p->buf;
  size_t n = p->len;
  if (p->dotdot) {
    n = sb_path_clean(p, tmp);
    c = tmp;
  }
  return sb_policy_check(&sb->policy, acc, c, n, kind, &op->e);
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void op_path(const sb_op *op, const char **p, size_t *n) {
  if (op->parsed && !op->show_raw) {
    *p = op->p.buf;
    *n = op->p.len;
  } else {
    *p = op->raw;
    *n = op->rawlen > 200 ? 200 : op->rawlen;
  }
}

static void audit(lua_State *L, sb_sandbox *sb, sb_op *op, bool ok, lua_Integer size) {
  if (sb->audit_ref == LUA_NOREF) return;
  const char *p;
  size_t n;
  op_path(op, &p, &n);
  lua_rawgeti(L, LUA_REGISTRYINDEX, sb->audit_ref);
  lua_createtable(L, 0, 6);
  lua_pushstring(L, op->name);
  lua_setfield(L, -2, "op");
  if (p) {
    if (n) lua_pushlstring(L, p, n);
    else lua_pushliteral(L, ".");
    lua_setfield(L, -2, "path");
  }
  if (size >= 0) {
    lua_pushinteger(L, size);
    lua_setfield(L, -2, "size");
  }
  lua_pushboolean(L, ok);
  lua_setfield(L, -2, "ok");
  if (!ok) {
    lua_pushstring(L, sb_code_name(op->e.code));
    lua_setfield(L, -2, "code");
  }
  lua_pushnumber(L, wall_now());
  lua_setfield(L, -2, "time");
  lua_call(L, 1, 0);
}

int sb_lua_fail(lua_State *L, sb_sandbox *sb, sb_op *op) {
  const char *p;
  size_t n;
  op_path(op, &p, &n);
  sb_push_err(L, &op->e, op->no_path ? NULL : p, n);
  audit(L, sb, op, false, -1);
  return 3;
}

void sb_lua_audit_ok(lua_State *L, sb_sandbox *sb, sb_op *op, lua_Integer size) {
  audit(L, sb, op, true, size);
}

/* ---- methods ------------------------------------------------------------ */


#define OP(var, nm)                                                              \
  sb_op var##_storage;                                                           \
  sb_op *var = &var##_storage;                                                   \
  var->name = nm;                                                                \
  var->parsed = var->show_raw = var->no_path = false

static int m_read_file(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  OP(op, "read_file");
  sb_view v;
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK ||
      sb_lua_guard(sb, op, &op->p, SB_ACC_READ, SB_KIND_FILE) != SB_OK ||
      sb->be->read(sb, &op->p, &v, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  lua_pushlstring(L, v.p, v.len);
  sb_buf_trim(&sb->mem, &sb->scratch, 1 << 20);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)v.len);
  return 1;
}

static const sb_optspec write_opts[] = {
    {"overwrite", LUA_TBOOLEAN}, {"parents", LUA_TBOOLEAN}, {NULL, 0}};

static int m_write_file(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  size_t len;
  if (lua_type(L, 3) != LUA_TSTRING) luaL_typeerror(L, 3, "string");
  const char *data = lua_tolstring(L, 3, &len);
  sb_lua_check_opts(L, 4, "write_file", write_opts);
  sb_write_opts o = {
      .overwrite = sb_lua_opt_bool(L, 4, "overwrite", true) && sb->policy.allow_overwrite,
      .parents = sb_lua_opt_bool(L, 4, "parents", true)};
  OP(op, "write_file");
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK) return sb_lua_fail(L, sb, op);
  if (sb_path_names_no_entry(&op->p)) {
    sb_fail(&op->e, op->p.ncomp ? SB_EINVAL : SB_EISDIR, "a file path is needed");
    return sb_lua_fail(L, sb, op);
  }
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_WRITE, SB_KIND_FILE) != SB_OK ||
      sb_policy_write_size(&sb->policy, len, &op->e) != SB_OK ||
      sb->be->write(sb, &op->p, data, len, &o, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  lua_pushboolean(L, 1);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)len);
  return 1;
}

/* Result tables are built with keys and type names interned once, as
 * upvalues of the methods (lua_setfield would look each C string up). */
static const char *const KEYS[] = {"type", "size", "mtime", "mode", "name", "is_directory",
                                   "file", "directory", "symlink", "other"};
enum { K_TYPE = 1, K_SIZE, K_MTIME, K_MODE, K_NAME, K_ISDIR, K_FILE, K_DIR, K_SYMLINK, K_OTHER,
       K_COUNT = K_OTHER };

static void set_key(lua_State *L, int key) { /* t[key] = value on top; t below it */
  lua_pushvalue(L, lua_upvalueindex(key));
  lua_insert(L, -2);
  lua_rawset(L, -3);
}

static void push_type(lua_State *L, int t) {
  lua_pushvalue(L, lua_upvalueindex(t == SB_T_FILE ? K_FILE : t == SB_T_DIR ? K_DIR
                                    : t == SB_T_SYMLINK ? K_SYMLINK : K_OTHER));
}

static void push_stat(lua_State *L, const sb_stat *st) {
  lua_createtable(L, 0, 4);
  push_type(L, st->type);
  set_key(L, K_TYPE);
  lua_pushinteger(L, (lua_Integer)st->size);
  set_key(L, K_SIZE);
  lua_pushnumber(L, st->mtime);
  set_key(L, K_MTIME);
  lua_pushinteger(L, st->mode);
  set_key(L, K_MODE);
}

static int m_stat(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  OP(op, "stat");
  sb_stat st;
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK ||
      sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_UNKNOWN) != SB_OK ||
      sb->be->stat(sb, &op->p, &st, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  if (st.type == SB_T_FILE && sb->policy.has_allow &&
      sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_FILE) != SB_OK)
    return sb_lua_fail(L, sb, op);
  push_stat(L, &st);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

static int m_exists(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  OP(op, "exists");
  sb_stat st;
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK) return sb_lua_fail(L, sb, op);
  bool found = false;
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_UNKNOWN) == SB_OK) {
    sb_code c = sb->be->stat(sb, &op->p, &st, &op->e);
    if (c == SB_OK)
      found = st.type != SB_T_FILE || !sb->policy.has_allow ||
              sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_FILE) == SB_OK;
    else if (c != SB_ENOENT && c != SB_ENOTDIR && c != SB_EACCES)
      return sb_lua_fail(L, sb, op);
  }
  lua_pushboolean(L, found);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

static bool entry_visible(sb_sandbox *sb, const sb_path *dir, const sb_dirent *d) {
  const sb_policy *pol = &sb->policy;
  if (!pol->deny.n && !pol->has_allow) return true;
  char tmp[SB_PATH_MAX + 1];
  size_t n = sb_path_clean(dir, tmp);
  if (n + 1 + d->namelen > SB_PATH_MAX) return false;
  if (n) tmp[n++] = '/';
  memcpy(tmp + n, d->name, d->namelen);
  n += d->namelen;
  return sb_policy_visible(pol, tmp, n, d->type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE);
}

static int m_readdir(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  OP(op, "readdir");
  sb_dirlist *dl = &sb->dl;
  sb_dirlist_reset(sb, dl);
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK ||
      sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_DIR) != SB_OK ||
      sb->be->readdir(sb, &op->p, dl, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  sb_dirlist_sort(dl);
  lua_createtable(L, (int)dl->n, 0);
  lua_Integer k = 0;
  for (size_t i = 0; i < dl->n; i++) {
    const sb_dirent *d = &dl->v[i];
    if (!entry_visible(sb, &op->p, d)) continue;
    lua_createtable(L, 0, 4);
    lua_pushlstring(L, d->name, d->namelen);
    set_key(L, K_NAME);
    push_type(L, d->type);
    set_key(L, K_TYPE);
    lua_pushboolean(L, d->type == SB_T_DIR);
    set_key(L, K_ISDIR);
    lua_pushinteger(L, (lua_Integer)d->size);
    set_key(L, K_SIZE);
    lua_rawseti(L, -2, ++k);
  }
  sb_dirlist_reset(sb, dl);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

static const sb_optspec mkdir_opts[] = {{"parents", LUA_TBOOLEAN}, {NULL, 0}};

static int m_mkdir(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_check_opts(L, 3, "mkdir", mkdir_opts);
  bool parents = sb_lua_opt_bool(L, 3, "parents", true);
  OP(op, "mkdir");
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK ||
      sb_lua_guard(sb, op, &op->p, SB_ACC_MODIFY, SB_KIND_DIR) != SB_OK)
    return sb_lua_fail(L, sb, op);
  if (sb_path_names_no_entry(&op->p)) {
    /* the root (or a "..") always exists: like `mkdir -p .` */
    if (!parents) {
      sb_fail(&op->e, SB_EEXIST, NULL);
      return sb_lua_fail(L, sb, op);
    }
    sb_stat st;
    if (sb->be->stat(sb, &op->p, &st, &op->e) != SB_OK) return sb_lua_fail(L, sb, op);
  } else if (sb->be->mkdir(sb, &op->p, parents, &op->e) != SB_OK) {
    return sb_lua_fail(L, sb, op);
  }
  lua_pushboolean(L, 1);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

/* Kind of an existing entry, only when an extension allowlist needs it. */
static int kind_for_ext(sb_sandbox *sb, const sb_path *p) {
  sb_stat st;
  sb_err e;
  if (!sb->policy.has_ext_write || sb->be->stat(sb, p, &st, &e) != SB_OK) return SB_KIND_UNKNOWN;
  return st.type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE;
}

static const sb_optspec remove_opts[] = {{"recursive", LUA_TBOOLEAN}, {NULL, 0}};

static int m_remove(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_check_opts(L, 3, "remove", remove_opts);
  bool recursive = sb_lua_opt_bool(L, 3, "recursive", false);
  OP(op, "remove");
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK) return sb_lua_fail(L, sb, op);
  if (sb_path_names_no_entry(&op->p)) {
    sb_fail(&op->e, SB_EINVAL, "the sandbox root cannot be removed");
    return sb_lua_fail(L, sb, op);
  }
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_MODIFY, kind_for_ext(sb, &op->p)) != SB_OK ||
      sb->be->remove(sb, &op->p, recursive, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  lua_pushboolean(L, 1);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

static const sb_optspec rename_opts[] = {{"overwrite", LUA_TBOOLEAN}, {NULL, 0}};

static int m_rename(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_check_opts(L, 4, "rename", rename_opts);
  bool overwrite = sb_lua_opt_bool(L, 4, "overwrite", false) && sb->policy.allow_overwrite;
  OP(op, "rename");
  OP(to, "rename");
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK) return sb_lua_fail(L, sb, op);
  if (sb_lua_arg_path(L, sb, 3, to) != SB_OK) {
    op->e = to->e;
    return sb_lua_fail(L, sb, op);
  }
  if (sb_path_names_no_entry(&op->p) || sb_path_names_no_entry(&to->p)) {
    sb_fail(&op->e, SB_EINVAL, "the sandbox root cannot be renamed or replaced");
    return sb_lua_fail(L, sb, op);
  }
  int kind = kind_for_ext(sb, &op->p);
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_MODIFY, kind) != SB_OK ||
      sb_lua_guard(sb, op, &to->p, SB_ACC_MODIFY, kind) != SB_OK ||
      sb->be->rename(sb, &op->p, &to->p, overwrite, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  lua_pushboolean(L, 1);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

static int m_exec_unsupported(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  (void)sb;
  if (lua_type(L, 2) != LUA_TSTRING) luaL_typeerror(L, 2, "string");
  sb_err e;
  sb_fail(&e, SB_ENOTSUP, "this sandbox cannot run commands (it is virtual, or exec = false)");
  return sb_push_err(L, &e, NULL, 0);
}

void sb_lua_release(lua_State *L, sb_sandbox *sb) {
  if (sb->closed) return;
  sb->closed = true;
  sb_lua_exec_close(L, sb); /* commands first: they run in the tree */
  sb_lua_net_close(sb);     /* then their ports, the proxy, the helpers */
  if (sb->be && sb->be->close) sb->be->close(sb);
  sb_policy_free(&sb->policy, &sb->mem);
  sb_buf_free(&sb->mem, &sb->scratch);
  sb_buf_free(&sb->mem, &sb->results);
  sb_buf_free(&sb->mem, &sb->index);
  sb_dirlist_free(sb, &sb->dl);
  sb_free(&sb->mem, sb->cwd, sb->cwdlen + 1);
  sb->cwd = NULL;
  if (sb->audit_ref != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, sb->audit_ref);
    sb->audit_ref = LUA_NOREF;
  }
}

static int m_dispose(lua_State *L) {
  sb_lua_release(L, sb_lua_check(L, 1));
  return 0;
}

static int m_tostring(lua_State *L) {
  sb_sandbox *sb = sb_lua_check(L, 1);
  if (sb->closed) lua_pushfstring(L, "sandbox.%s (disposed)", sb->be->kind);
  else lua_pushfstring(L, "sandbox.%s (%s)", sb->be->kind, sb->cwd);
  return 1;
}

static const luaL_Reg methods[] = {
    {"read_file", m_read_file}, {"write_file", m_write_file},
    {"stat", m_stat},           {"exists", m_exists},
    {"readdir", m_readdir},     {"mkdir", m_mkdir},
    {"remove", m_remove},       {"rename", m_rename},
    {"exec", m_exec_unsupported}, {"exec_shell", m_exec_unsupported},
    {"processes", sb_lua_exec_processes}, {"poll", sb_lua_exec_poll},
    {"backend_fd", sb_lua_exec_backend_fd}, {"backend_timeout", sb_lua_exec_backend_timeout},
    {"dispose", m_dispose},     {"close", m_dispose},
    {NULL, NULL}};

/* ---- construction ------------------------------------------------------- */

static void push_fields_meta(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &SB_FIELDS_META) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 1);
  lua_createtable(L, 0, (int)(sizeof methods / sizeof methods[0]) + 4);
  for (int i = 0; i < K_COUNT; i++) lua_pushstring(L, KEYS[i]);
  luaL_setfuncs(L, methods, K_COUNT);
  sb_lua_open_search(L);
  lua_setfield(L, -2, "__index");
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &SB_FIELDS_META);
}

void sb_lua_setfield(lua_State *L, int ud_idx, const char *name) {
  ud_idx = lua_absindex(L, ud_idx);
  lua_getiuservalue(L, ud_idx, 1);
  lua_insert(L, -2);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

sb_sandbox *sb_lua_new(lua_State *L, const sb_backend *be, int opts_idx,
                       const char *cwd, size_t cwdlen) {
  opts_idx = lua_absindex(L, opts_idx);
  sb_sandbox *sb = lua_newuserdatauv(L, sizeof *sb, 1);
  memset(sb, 0, sizeof *sb);
  sb->audit_ref = LUA_NOREF;
  sb->be = be;
  sb_mem_init(&sb->mem, L);
  sb->quota.max_bytes = sb->quota.max_nodes = SB_UNLIMITED;

  /* Per-instance fields (kind, cwd, ...) in front of the shared methods. */
  lua_createtable(L, 0, 48);
  push_fields_meta(L);
  /* the methods are copied in: one __index step per call instead of two */
  lua_getfield(L, -1, "__index");
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -6);
  }
  lua_pop(L, 1);
  lua_setmetatable(L, -2);
  lua_pushstring(L, be->kind);
  lua_setfield(L, -2, "kind");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "has_exec");
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, -3, 1);

  lua_createtable(L, 0, 7);
  lua_insert(L, -2);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, m_dispose);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, m_dispose);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, m_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "sandbox.Sandbox");
  lua_setfield(L, -2, "__name");
  lua_pushliteral(L, "sandbox objects are not accessible");
  lua_setfield(L, -2, "__metatable");
  lua_pushboolean(L, 1);
  lua_rawsetp(L, -2, &SB_CLASS);
  lua_setmetatable(L, -2);

  /* From here on __gc frees whatever has been set up. */
  if (!(sb->cwd = sb_memdup(&sb->mem, cwd, cwdlen))) luaL_error(L, "not enough memory");
  sb->cwdlen = cwdlen;
  lua_pushlstring(L, cwd, cwdlen);
  sb_lua_setfield(L, -2, "cwd");
  sb_policy_load(L, opts_idx, &sb->policy, &sb->mem);
  if (lua_getfield(L, opts_idx, "audit") == LUA_TFUNCTION)
    sb->audit_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  else
    lua_pop(L, 1);
  return sb;
}

/* The methods table, so the Lua layer can add methods written in Lua. */
void sb_lua_push_methods(lua_State *L) {
  push_fields_meta(L);
  lua_getfield(L, -1, "__index");
  lua_remove(L, -2);
}
