/* The file methods of the Sandbox interface (SPEC §3): read_file,
 * write_file, stat, exists, readdir, mkdir, remove, rename. Each: front door
 * -> policy -> backend -> push -> audit. */
#include "lua/fs.h"

#include <string.h>

#include "fs/dirlist.h"
#include "lua/object.h"
#include "lua/options.h"

/* ---- methods ------------------------------------------------------------ */



static int m_read_file(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  SB_OP(op, "read_file");
  sb_bytes v;
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK ||
      sb_lua_guard(sb, op, &op->p, SB_ACC_READ, SB_KIND_FILE) != SB_OK ||
      sb->fs.be->read(&sb->fs, &op->p, &v, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  lua_pushlstring(L, v.p, v.len);
  sb_buf_trim(&sb->fs.mem, &sb->fs.scratch, 1 << 20);
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
  SB_OP(op, "write_file");
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK) return sb_lua_fail(L, sb, op);
  if (sb_path_names_no_entry(&op->p)) {
    sb_fail(&op->e, op->p.ncomp ? SB_EINVAL : SB_EISDIR, "a file path is needed");
    return sb_lua_fail(L, sb, op);
  }
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_WRITE, SB_KIND_FILE) != SB_OK ||
      sb_policy_write_size(&sb->policy, len, &op->e) != SB_OK ||
      sb->fs.be->write(&sb->fs, &op->p, data, len, &o, &op->e) != SB_OK)
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
  SB_OP(op, "stat");
  sb_stat st;
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK ||
      sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_UNKNOWN) != SB_OK ||
      sb->fs.be->stat(&sb->fs, &op->p, &st, &op->e) != SB_OK)
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
  SB_OP(op, "exists");
  sb_stat st;
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK) return sb_lua_fail(L, sb, op);
  bool found = false;
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_UNKNOWN) == SB_OK) {
    sb_code c = sb->fs.be->stat(&sb->fs, &op->p, &st, &op->e);
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
  SB_OP(op, "readdir");
  sb_dirlist *dl = &sb->dl;
  sb_dirlist_reset(&sb->fs.mem, dl);
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK ||
      sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_DIR) != SB_OK ||
      sb->fs.be->readdir(&sb->fs, &op->p, dl, &op->e) != SB_OK)
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
  sb_dirlist_reset(&sb->fs.mem, dl);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

static const sb_optspec mkdir_opts[] = {{"parents", LUA_TBOOLEAN}, {NULL, 0}};

static int m_mkdir(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_check_opts(L, 3, "mkdir", mkdir_opts);
  bool parents = sb_lua_opt_bool(L, 3, "parents", true);
  SB_OP(op, "mkdir");
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
    if (sb->fs.be->stat(&sb->fs, &op->p, &st, &op->e) != SB_OK) return sb_lua_fail(L, sb, op);
  } else if (sb->fs.be->mkdir(&sb->fs, &op->p, parents, &op->e) != SB_OK) {
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
  if (!sb->policy.has_ext_write || sb->fs.be->stat(&sb->fs, p, &st, &e) != SB_OK) return SB_KIND_UNKNOWN;
  return st.type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE;
}

static const sb_optspec remove_opts[] = {{"recursive", LUA_TBOOLEAN}, {NULL, 0}};

static int m_remove(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_check_opts(L, 3, "remove", remove_opts);
  bool recursive = sb_lua_opt_bool(L, 3, "recursive", false);
  SB_OP(op, "remove");
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK) return sb_lua_fail(L, sb, op);
  if (sb_path_names_no_entry(&op->p)) {
    sb_fail(&op->e, SB_EINVAL, "the sandbox root cannot be removed");
    return sb_lua_fail(L, sb, op);
  }
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_MODIFY, kind_for_ext(sb, &op->p)) != SB_OK ||
      sb->fs.be->remove(&sb->fs, &op->p, recursive, &op->e) != SB_OK)
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
  SB_OP(op, "rename");
  SB_OP(to, "rename");
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
      sb->fs.be->rename(&sb->fs, &op->p, &to->p, overwrite, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  lua_pushboolean(L, 1);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

void sb_lua_fs_methods(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"read_file", m_read_file}, {"write_file", m_write_file}, {"stat", m_stat},
      {"exists", m_exists},       {"readdir", m_readdir},       {"mkdir", m_mkdir},
      {"remove", m_remove},       {"rename", m_rename},         {NULL, NULL}};
  /* result tables are built with keys and type names interned once, as
   * upvalues (lua_setfield would look each C string up) */
  for (int i = 0; i < K_COUNT; i++) lua_pushstring(L, KEYS[i]);
  luaL_setfuncs(L, fns, K_COUNT);
}
