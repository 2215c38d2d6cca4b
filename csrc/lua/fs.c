/* The file methods of the Sandbox interface (SPEC §3, §4): read_file,
 * write_file, stat, exists, readdir, mkdir, remove, rename, symlink,
 * readlink, realpath. Each: front door -> policy -> backend -> push ->
 * audit. What symlinks mean is the backends' one contract (fs/backend.h);
 * the messages that advise what to do instead are made here, once. */
#include "lua/fs.h"

#include <stdint.h>
#include <string.h>

#include "fs/dirlist.h"
#include "lua/object.h"
#include "lua/options.h"

/* ---- symlinks: where a final link leads, for the advice ------------------- */

/* Where the final link p leads, as a clean root-relative path in out (cap >=
 * 2 * SB_PATH_MAX + 2): SB_OK, SB_EESCAPE when outside, SB_ELOOP, or
 * another code. Hop by hop, each link's text joined to its real directory,
 * so a dangling target (what a write would create) is found too. */
static sb_code link_leads(sb_sandbox *sb, const sb_path *p, char *out, size_t cap, sb_err *e) {
  sb_fs *fs = &sb->fs;
  sb_path curp, *cur = &curp;
  *cur = *p;
  for (int hop = 0; hop <= 40; hop++) {
    sb_bytes b;
    sb_stat st;
    sb_code c = fs->be->realpath(fs, cur, false, &b, e);
    if (c == SB_ENOENT && hop > 0) return SB_OK; /* out: where a write would make it, parents and all */
    if (c != SB_OK) return c;
    size_t rlen = b.len;
    memcpy(out, b.p, rlen + 1);
    if ((c = sb_path_from_rel(cur, out, rlen, e)) != SB_OK) return c;
    c = fs->be->stat(fs, cur, false, &st, e);
    if (c == SB_ENOENT || (c == SB_OK && st.type != SB_T_SYMLINK)) return SB_OK; /* out names it */
    if (c != SB_OK) return c;
    if ((c = fs->be->readlink(fs, cur, &b, e)) != SB_OK) return c;
    char text[SB_PATH_MAX + 1], dir[2 * SB_PATH_MAX + 2];
    size_t tlen = b.len, dlen = rlen;
    memcpy(text, b.p, tlen);
    while (dlen > 0 && out[dlen - 1] != '/') dlen--; /* the link's directory */
    if (dlen > 0) dlen--;
    memcpy(dir, out, dlen);
    long n = sb_link_join(dir, dlen, text, tlen, out, cap);
    if (n < 0) return SB_EESCAPE;
    if ((c = sb_path_from_rel(cur, out, (size_t)n, e)) != SB_OK) return c;
  }
  return SB_ELOOP;
}

/* write_file found a link where the file would go (writes never follow
 * one): say where it leads and what to write instead, or that it leads out. */
static void advise_link_write(sb_sandbox *sb, sb_op *op) {
  char to[2 * SB_PATH_MAX + 2];
  sb_err e2;
  sb_code c = link_leads(sb, &op->p, to, sizeof to, &e2);
  if (c == SB_EESCAPE)
    sb_fail(&op->e, SB_EESCAPE, "this is a symbolic link leading outside the sandbox: it is not written through");
  else if (c == SB_OK)
    sb_failf(&op->e, SB_ELOOP,
             "this is a symbolic link to '%.*s' (writes never follow a link): write to '%.*s' "
             "instead, or remove the link first",
             200, to, 200, to);
}

/* "x/." names x only as a directory to look in: remove and rename refuse
 * it, as the kernel does, whatever x is (a missing x: ENOENT, a file:
 * ENOTDIR, a directory: EINVAL). */
static sb_code refuse_dot_final(sb_sandbox *sb, sb_op *op) {
  if (!op->p.dot_final) return SB_OK;
  sb_stat st;
  sb_code c = sb->fs.be->stat(&sb->fs, &op->p, true, &st, &op->e);
  if (c != SB_OK) return c;
  return sb_fail(&op->e, SB_EINVAL, "a path ending in '/.' names no entry of its own: use the path without it");
}

/* ---- renames never carry a denied path out from under its rule --------- */

typedef struct moved {
  const sb_policy *pol;
  size_t flen; /* the real source's length: entries below start with it */
  char to[SB_PATH_MAX + 1]; /* where it goes */
  size_t tlen;
  char path[2 * SB_PATH_MAX + 2]; /* an entry's new path */
  char hit[SB_PATH_MAX + 1]; /* the first entry that would leave its rule */
} moved;

static int moved_fn(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref) {
  (void)ent;
  (void)ref;
  moved *m = ud;
  if (rlen < m->flen || !sb_policy_denied(m->pol, rel, rlen)) return SB_WALK_CONTINUE;
  size_t n = m->tlen + (rlen - m->flen);
  memcpy(m->path, m->to, m->tlen);
  memcpy(m->path + m->tlen, rel + m->flen, rlen - m->flen);
  m->path[n] = '\0';
  if (sb_policy_denied(m->pol, m->path, n)) return SB_WALK_SKIP; /* still denied there, all of it */
  size_t k = rlen < SB_PATH_MAX ? rlen : SB_PATH_MAX;
  memcpy(m->hit, rel, k);
  m->hit[k] = '\0';
  return SB_WALK_STOP;
}

/* Moving a directory must not carry a denied path out from under its rule
 * (deny "secrets/key", then move "secrets" to "pub"): refused when an entry
 * below it is denied where it is and would not be where it goes. Commands
 * cannot do it either: their view pins every directory above a masked
 * path (confine/rules.c). */
static sb_code rename_keeps_denied(sb_sandbox *sb, sb_op *op, sb_op *to) {
  const sb_policy *pol = &sb->policy;
  if (pol->deny.n == 0) return SB_OK;
  sb_fs *fs = &sb->fs;
  sb_stat st;
  sb_err e;
  if (fs->be->stat(fs, &op->p, false, &st, &e) != SB_OK || st.type != SB_T_DIR) return SB_OK;
  moved *m = sb_malloc(&fs->mem, sizeof *m);
  sb_path *from = sb_malloc(&fs->mem, sizeof *from);
  sb_code c = m && from ? SB_OK : sb_fail_oom(&op->e);
  sb_bytes b;
  if (c == SB_OK) {
    m->pol = pol;
    m->hit[0] = '\0';
    /* the real paths: where the entries are, and where they would be */
    if (fs->be->realpath(fs, &to->p, false, &b, &e) == SB_OK && b.len <= SB_PATH_MAX) {
      memcpy(m->to, b.p, b.len + 1);
      m->tlen = b.len;
    } else {
      memcpy(m->to, to->p.buf, to->p.len + 1);
      m->tlen = to->p.len;
    }
    if (fs->be->realpath(fs, &op->p, false, &b, &e) != SB_OK || sb_path_from_rel(from, b.p, b.len, &e) != SB_OK)
      *from = op->p;
    m->flen = from->len;
    if (fs->be->walk(fs, from, 0, moved_fn, m, &e) != SB_OK && !m->hit[0])
      c = sb_failf(&op->e, e.code, "cannot check what the move would carry out of the deny rules: %s",
                   e.msg ? e.msg : sb_code_name(e.code));
    else if (m->hit[0])
      c = sb_failf(&op->e, SB_EACCES,
                   "moving it would carry '%.200s', which the sandbox rules deny, to where "
                   "they do not: move what is allowed instead",
                   m->hit);
  }
  if (m) sb_free(&fs->mem, m, sizeof *m);
  if (from) sb_free(&fs->mem, from, sizeof *from);
  return c;
}

/* ---- methods ------------------------------------------------------------ */

static int m_read_file(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  SB_OP(op, "read_file");
  sb_bytes v;
  /* the bytes land in the sandbox's scratch buffer, then one copy makes the
   * string: the Lua API gives no string that may be written after it is
   * made, and a userdata or luaL_Buffer would need the same one copy */
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK || sb_lua_guard(sb, op, &op->p, SB_ACC_READ, SB_KIND_FILE) != SB_OK ||
      sb->fs.be->read(&sb->fs, &op->p, &v, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  lua_pushlstring(L, v.p, v.len);
  sb_buf_trim(&sb->fs.mem, &sb->fs.scratch, 1 << 20);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)v.len);
  return 1;
}

static const sb_optspec write_opts[] = {{"overwrite", LUA_TBOOLEAN}, {"parents", LUA_TBOOLEAN}, {NULL, 0}};

static int m_write_file(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  size_t len;
  if (lua_type(L, 3) != LUA_TSTRING) luaL_typeerror(L, 3, "string");
  const char *data = lua_tolstring(L, 3, &len);
  sb_lua_check_opts(L, 4, "write_file", write_opts);
  sb_write_opts o = {.overwrite = sb_lua_opt_bool(L, 4, "overwrite", true) && sb->policy.allow_overwrite,
                     .parents = sb_lua_opt_bool(L, 4, "parents", true)};
  SB_OP(op, "write_file");
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK) return sb_lua_fail(L, sb, op);
  if (sb_path_names_no_entry(&op->p)) {
    sb_fail(&op->e, op->p.ncomp ? SB_EINVAL : SB_EISDIR, "a file path is needed");
    return sb_lua_fail(L, sb, op);
  }
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_WRITE, SB_KIND_FILE) != SB_OK ||
      sb_policy_write_size(&sb->policy, len, &op->e) != SB_OK ||
      sb->fs.be->write(&sb->fs, &op->p, data, len, &o, &op->e) != SB_OK) {
    if (op->e.code == SB_ELOOP) advise_link_write(sb, op);
    return sb_lua_fail(L, sb, op);
  }
  lua_pushboolean(L, 1);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)len);
  return 1;
}

/* Result tables are built with keys and type names interned once, as
 * upvalues of the methods (lua_setfield would look each C string up). */
static const char *const KEYS[] = {"type",         "size", "mtime",     "mode",    "name",
                                   "is_directory", "file", "directory", "symlink", "other"};
enum { K_TYPE = 1, K_SIZE, K_MTIME, K_MODE, K_NAME, K_ISDIR, K_FILE, K_DIR, K_SYMLINK, K_OTHER, K_COUNT = K_OTHER };

static void set_key(lua_State *L, int key) { /* t[key] = value on top; t below it */
  lua_pushvalue(L, lua_upvalueindex(key));
  lua_insert(L, -2);
  lua_rawset(L, -3);
}

static void push_type(lua_State *L, int t) {
  lua_pushvalue(L,
                lua_upvalueindex(t == SB_T_FILE          ? K_FILE
                                     : t == SB_T_DIR     ? K_DIR
                                     : t == SB_T_SYMLINK ? K_SYMLINK
                                                         : K_OTHER));
}

static void push_stat(lua_State *L, const sb_stat *st) {
  lua_createtable(L, 0, 4);
  push_type(L, st->type);
  set_key(L, K_TYPE);
  sb_lua_pushu64(L, st->size);
  set_key(L, K_SIZE);
  lua_pushnumber(L, st->mtime);
  set_key(L, K_MTIME);
  lua_pushinteger(L, st->mode);
  set_key(L, K_MODE);
}

static const sb_optspec stat_opts[] = {{"follow", LUA_TBOOLEAN}, {NULL, 0}};

static int m_stat(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_check_opts(L, 3, "stat", stat_opts);
  bool follow = sb_lua_opt_bool(L, 3, "follow", false);
  SB_OP(op, "stat");
  sb_stat st;
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK || sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_UNKNOWN) != SB_OK ||
      sb->fs.be->stat(&sb->fs, &op->p, follow, &st, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  if (st.type == SB_T_FILE && sb->policy.has_allow && sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_FILE) != SB_OK)
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
    sb_code c = sb->fs.be->stat(&sb->fs, &op->p, true, &st, &op->e);
    if (c == SB_OK)
      found = st.type != SB_T_FILE || !sb->policy.has_allow ||
          sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_FILE) == SB_OK;
    else if (c != SB_ENOENT && c != SB_ENOTDIR && c != SB_EACCES) return sb_lua_fail(L, sb, op);
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
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK || sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_DIR) != SB_OK ||
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
    sb_lua_pushu64(L, d->size);
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
  if (sb_lua_arg_path(L, sb, 2, op) != SB_OK || sb_lua_guard(sb, op, &op->p, SB_ACC_MODIFY, SB_KIND_DIR) != SB_OK)
    return sb_lua_fail(L, sb, op);
  if (sb_path_names_no_entry(&op->p)) {
    /* the root (or a "..") always exists: like `mkdir -p .` */
    if (!parents) {
      sb_fail(&op->e, SB_EEXIST, NULL);
      return sb_lua_fail(L, sb, op);
    }
    sb_stat st;
    if (sb->fs.be->stat(&sb->fs, &op->p, true, &st, &op->e) != SB_OK) return sb_lua_fail(L, sb, op);
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
  if (!sb->policy.has_ext_write || sb->fs.be->stat(&sb->fs, p, false, &st, &e) != SB_OK) return SB_KIND_UNKNOWN;
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
  if (refuse_dot_final(sb, op) != SB_OK ||
      sb_lua_guard(sb, op, &op->p, SB_ACC_MODIFY, kind_for_ext(sb, &op->p)) != SB_OK ||
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
  if (refuse_dot_final(sb, op) != SB_OK) return sb_lua_fail(L, sb, op);
  if (refuse_dot_final(sb, to) != SB_OK) {
    op->e = to->e;
    return sb_lua_fail(L, sb, op);
  }
  int kind = kind_for_ext(sb, &op->p);
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_MODIFY, kind) != SB_OK ||
      sb_lua_guard(sb, op, &to->p, SB_ACC_MODIFY, kind) != SB_OK || rename_keeps_denied(sb, op, to) != SB_OK ||
      sb->fs.be->rename(&sb->fs, &op->p, &to->p, overwrite, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  lua_pushboolean(L, 1);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

/* A new link's target judged as the kernel will resolve it (SPEC §6.1):
 * through the links already in the tree, a chain included, it must stay
 * inside (a missing component is where resolution stops; the text from
 * there is judged as written, by the policy). */
static sb_code link_stays_inside(sb_sandbox *sb, sb_op *op, const char *target, size_t tlen) {
  if (sb->policy.allow_escaping_links || (tlen && target[0] == '/')) return SB_OK; /* the policy's */
  sb_fs *fs = &sb->fs;
  sb_err e;
  sb_bytes b;
  sb_path *dir = sb_malloc(&fs->mem, sizeof *dir);
  char *joined = sb_malloc(&fs->mem, 2 * SB_PATH_MAX + 2);
  sb_code c = dir && joined ? SB_OK : sb_fail_oom(&op->e);
  if (c == SB_OK && sb_path_from_rel(dir, op->p.buf, sb_path_parent_len(&op->p), &e) == SB_OK &&
      fs->be->realpath(fs, dir, true, &b, &e) == SB_OK) {
    long n = sb_link_join(b.p, b.len, target, tlen, joined, 2 * SB_PATH_MAX + 2);
    if (n >= 0 && sb_path_from_rel(dir, joined, (size_t)n, &e) == SB_OK &&
        fs->be->realpath(fs, dir, true, &b, &e) == SB_EESCAPE)
      c = sb_fail(&op->e, SB_EESCAPE,
                  "the link target leads outside the sandbox through a link on its way "
                  "(allow_escaping_links = true makes it anyway; reading through it stays EESCAPE)");
  }
  if (dir) sb_free(&fs->mem, dir, sizeof *dir);
  if (joined) sb_free(&fs->mem, joined, 2 * SB_PATH_MAX + 2);
  return c;
}

/* sb:symlink(target, path): a link at path with the text target (SPEC §4). */
static int m_symlink(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  size_t tlen;
  if (lua_type(L, 2) != LUA_TSTRING) luaL_typeerror(L, 2, "string");
  const char *target = lua_tolstring(L, 2, &tlen);
  SB_OP(op, "symlink");
  if (sb_lua_arg_path(L, sb, 3, op) != SB_OK) return sb_lua_fail(L, sb, op);
  if (sb_path_names_no_entry(&op->p)) {
    sb_fail(&op->e, SB_EEXIST, "a path for the new link is needed");
    return sb_lua_fail(L, sb, op);
  }
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_WRITE, SB_KIND_FILE) != SB_OK ||
      link_stays_inside(sb, op, target, tlen) != SB_OK ||
      sb->fs.be->symlink(&sb->fs, target, tlen, &op->p, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  lua_pushboolean(L, 1);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)tlen);
  return 1;
}

/* Push what a backend call handed out (a link's text, a real path). */
static int push_bytes(lua_State *L, sb_sandbox *sb, sb_op *op, sb_code c, const sb_bytes *b) {
  if (c != SB_OK) return sb_lua_fail(L, sb, op);
  lua_pushlstring(L, b->p, b->len);
  sb_lua_audit_ok(L, sb, op, -1);
  return 1;
}

static int m_readlink(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  SB_OP(op, "readlink");
  sb_bytes b = {0};
  sb_code c = sb_lua_arg_path(L, sb, 2, op);
  if (c == SB_OK) c = sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_UNKNOWN);
  if (c == SB_OK) c = sb->fs.be->readlink(&sb->fs, &op->p, &b, &op->e);
  return push_bytes(L, sb, op, c, &b);
}

/* sb:realpath(path): the clean root-relative path that path really names,
 * every link followed while inside. */
static int m_realpath(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  SB_OP(op, "realpath");
  sb_bytes b = {0};
  sb_code c = sb_lua_arg_path(L, sb, 2, op);
  if (c == SB_OK) c = sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_UNKNOWN);
  if (c == SB_OK) c = sb->fs.be->realpath(&sb->fs, &op->p, true, &b, &op->e);
  return push_bytes(L, sb, op, c, &b);
}

void sb_lua_fs_methods(lua_State *L) {
  static const luaL_Reg fns[] = {{"read_file", m_read_file}, {"write_file", m_write_file}, {"stat", m_stat},
                                 {"exists", m_exists},       {"readdir", m_readdir},       {"mkdir", m_mkdir},
                                 {"remove", m_remove},       {"rename", m_rename},         {"symlink", m_symlink},
                                 {"readlink", m_readlink},   {"realpath", m_realpath},     {NULL, NULL}};
  /* result tables are built with keys and type names interned once, as
   * upvalues (lua_setfield would look each C string up) */
  for (int i = 0; i < K_COUNT; i++) lua_pushstring(L, KEYS[i]);
  luaL_setfuncs(L, fns, K_COUNT);
}
