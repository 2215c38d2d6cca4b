/* The sandbox object (see object.h). Misuse raises; environmental failures
 * return nil, msg, code. */
#include "lua/object.h"

#include <string.h>

#include "fs/dirlist.h"
#include "lua/options.h"

/* Registry keys: addresses of immutable statics (no mutable global state). */
static const char SB_CLASS = 0;
static const char SB_METHODS = 0;

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

/* ---- parts -------------------------------------------------------------- */

void sb_part_add(lua_State *L, sb_sandbox *sb, const sb_part_class *cls, void *state) {
  if (sb->nparts == SB_MAX_PARTS) {
    cls->close(L, sb, state);
    luaL_error(L, "internal: a sandbox holds at most %d parts", SB_MAX_PARTS);
  }
  sb->parts[sb->nparts].cls = cls;
  sb->parts[sb->nparts].state = state;
  sb->nparts++;
}

void *sb_part_get(const sb_sandbox *sb, const sb_part_class *cls) {
  for (int i = 0; i < sb->nparts; i++)
    if (sb->parts[i].cls == cls) return sb->parts[i].state;
  return NULL;
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

int sb_push_err(lua_State *L, const sb_err *e, const char *path, size_t plen) {
  sb_code c = e->code;
  const char *msg = e->msg ? e->msg : sb_code_text(c);
  lua_pushnil(L);
  if (path) {
    /* paths may hold any byte but NUL was refused; pushlstring keeps length */
    if (plen) lua_pushlstring(L, path, plen);
    else lua_pushliteral(L, ".");
    const char *p = lua_tostring(L, -1);
    lua_pushfstring(L, "%s: %s: %s", sb_code_name(c), msg, p);
    lua_remove(L, -2);
  } else {
    lua_pushfstring(L, "%s: %s", sb_code_name(c), msg);
  }
  lua_pushstring(L, sb_code_name(c));
  return 3;
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
  if (!sb->audit || op->unaudited) return;
  sb_audit_file f = {.op = op->name, .ok = ok, .size = size, .code = ok ? NULL : sb_code_name(op->e.code)};
  op_path(op, &f.path, &f.plen);
  if (f.path && !f.plen) f.path = ".", f.plen = 1;
  sb->audit_hooks->file(L, sb, &f);
}

int sb_lua_fail(lua_State *L, sb_sandbox *sb, sb_op *op) {
  const char *p;
  size_t n;
  op_path(op, &p, &n);
  sb_push_err(L, &op->e, op->no_path ? NULL : p, n);
  audit(L, sb, op, false, -1);
  return 3;
}

void sb_lua_audit_ok(lua_State *L, sb_sandbox *sb, sb_op *op, lua_Integer size) { audit(L, sb, op, true, size); }

/* ---- lifetime ------------------------------------------------------------ */

void sb_lua_release(lua_State *L, sb_sandbox *sb) {
  if (sb->closed) return;
  sb->closed = true;
  while (sb->nparts > 0) { /* newest first: commands before what they run in */
    sb->nparts--;
    sb->parts[sb->nparts].cls->close(L, sb, sb->parts[sb->nparts].state);
  }
  sb_dirlist_free(&sb->fs.mem, &sb->dl);
  sb_fs_close(&sb->fs);
  sb_policy_free(&sb->policy, &sb->fs.mem);
  sb_free(&sb->fs.mem, sb->cwd, sb->cwdlen + 1);
  sb->cwd = NULL;
  if (sb->audit_hooks) sb->audit_hooks->close(L, sb); /* last: "disposed" follows what the parts' close said */
}

static int m_dispose(lua_State *L) {
  sb_lua_release(L, sb_lua_check(L, 1));
  return 0;
}

static int m_tostring(lua_State *L) {
  sb_sandbox *sb = sb_lua_check(L, 1);
  lua_getiuservalue(L, 1, 1);
  lua_getfield(L, -1, "kind"); /* the sandbox's kind: an overlay runs on the container backend */
  const char *kind = lua_isstring(L, -1) ? lua_tostring(L, -1) : sb->fs.be->kind;
  if (sb->closed) lua_pushfstring(L, "sandbox.%s (disposed)", kind);
  else lua_pushfstring(L, "sandbox.%s (%s)", kind, sb->cwd);
  return 1;
}

void sb_lua_object_methods(lua_State *L) {
  static const luaL_Reg fns[] = {{"dispose", m_dispose}, {"close", m_dispose}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}

void sb_lua_set_methods(lua_State *L) { lua_rawsetp(L, LUA_REGISTRYINDEX, &SB_METHODS); }

void sb_lua_push_methods(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &SB_METHODS) != LUA_TTABLE) luaL_error(L, "sandbox.core is not open");
}

/* ---- construction ------------------------------------------------------- */

void sb_lua_setfield(lua_State *L, int ud_idx, const char *name) {
  ud_idx = lua_absindex(L, ud_idx);
  lua_getiuservalue(L, ud_idx, 1);
  lua_insert(L, -2);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

/* The policy from the normalised shared options (rules, extensions, size
 * limits); raises on out-of-memory, the sandbox's release frees it. */
static void load_policy(lua_State *L, int opts, sb_sandbox *sb);

sb_sandbox *sb_lua_new(lua_State *L, const sb_backend *be, int opts_idx, const char *cwd, size_t cwdlen) {
  opts_idx = lua_absindex(L, opts_idx);
  sb_sandbox *sb = lua_newuserdatauv(L, sizeof *sb, 1);
  memset(sb, 0, sizeof *sb);
  sb_policy_init(&sb->policy);
  sb_mem m;
  sb_mem_init(&m, L);
  sb_fs_init(&sb->fs, be, &m, &sb->policy);

  /* Per-instance fields (kind, cwd, ...) with the methods copied in: one
   * table lookup per call instead of an __index chain. */
  lua_createtable(L, 0, 48);
  sb_lua_push_methods(L);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -5);
  }
  lua_pop(L, 1);
  lua_pushstring(L, be->kind);
  lua_setfield(L, -2, "kind");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "has_exec");
  lua_setiuservalue(L, -2, 1);

  lua_createtable(L, 0, 7);
  lua_getiuservalue(L, -2, 1);
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
  if (!(sb->cwd = sb_memdup(&sb->fs.mem, cwd, cwdlen))) luaL_error(L, "not enough memory");
  sb->cwdlen = cwdlen;
  lua_pushlstring(L, cwd, cwdlen);
  sb_lua_setfield(L, -2, "cwd");
  load_policy(L, opts_idx, sb);
  /* a copy for the Lua layer (generate_from_template bounds what it builds) */
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)sb->policy.max_read_bytes);
  lua_setfield(L, -2, "max_read_bytes");
  lua_pushinteger(L, (lua_Integer)sb->policy.max_write_bytes);
  lua_setfield(L, -2, "max_write_bytes");
  sb_lua_setfield(L, -2, "limits");
  return sb;
}

static void load_list(lua_State *L, int t, const char *key, sb_sandbox *sb, int list) {
  if (lua_getfield(L, t, key) == LUA_TTABLE) {
    sb_policy_given(&sb->policy, list);
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      if (!s) luaL_error(L, "%s[%d] must be a string", key, (int)i);
      if (!sb_policy_add(&sb->policy, &sb->fs.mem, list, s, len)) luaL_error(L, "not enough memory");
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

static void load_policy(lua_State *L, int opts, sb_sandbox *sb) {
  sb_policy *p = &sb->policy;
  p->max_read_bytes = sb_opt_u64(L, opts, "max_read_bytes");
  p->max_write_bytes = sb_opt_u64(L, opts, "max_write_bytes");
  p->allow_overwrite = sb_opt_bool(L, opts, "allow_overwrite");
  p->read_only = sb_opt_bool(L, opts, "read_only");
  p->allow_escaping_links = sb_opt_bool(L, opts, "allow_escaping_links");
  if (lua_getfield(L, opts, "rules") == LUA_TTABLE) {
    load_list(L, -1, "deny", sb, SB_POLICY_DENY);
    load_list(L, -1, "allow", sb, SB_POLICY_ALLOW);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, opts, "extensions") == LUA_TTABLE) {
    load_list(L, -1, "read", sb, SB_POLICY_EXT_READ);
    load_list(L, -1, "write", sb, SB_POLICY_EXT_WRITE);
  }
  lua_pop(L, 1);
}
