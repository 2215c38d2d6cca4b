#include "lua/review.h"

#include <string.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "fs/container.h"
#include "lua/confine.h"
#include "lua/object.h"
#include "review/diff.h"
#include "review/scan.h"

/* core.diff(a, b, context) -> hunks, added, removed, nhunks, binary.
 * Checked by lua/sandbox/diff.lua; binary inputs are not diffed. */
static int l_diff(lua_State *L) {
  size_t alen, blen;
  const char *a = luaL_checklstring(L, 1, &alen), *b = luaL_checklstring(L, 2, &blen);
  lua_Integer ctx = luaL_checkinteger(L, 3);
  luaL_argcheck(L, ctx >= 0 && ctx <= SB_DIFF_MAX_CONTEXT, 3, "context out of range");
  if (sb_diff_is_binary(a, alen) || sb_diff_is_binary(b, blen)) {
    int same = alen == blen && memcmp(a, b, alen) == 0;
    lua_pushliteral(L, "");
    lua_pushinteger(L, 0);
    lua_pushinteger(L, 0);
    lua_pushinteger(L, same ? 0 : 1);
    lua_pushboolean(L, 1);
    return 5;
  }
  sb_mem m;
  sb_mem_init(&m, L);
  sb_buf out = {0};
  sb_diff_stat st;
  sb_err e = {0};
  if (sb_diff_text(&m, a, alen, b, blen, (unsigned)ctx, &out, &st, &e) != SB_OK) {
    sb_buf_free(&m, &out);
    return luaL_error(L, "diff: %s", e.msg ? e.msg : sb_code_text(e.code));
  }
  lua_pushlstring(L, out.p ? out.p : "", out.len);
  sb_buf_free(&m, &out);
  lua_pushinteger(L, (lua_Integer)st.added);
  lua_pushinteger(L, (lua_Integer)st.removed);
  lua_pushinteger(L, (lua_Integer)st.hunks);
  lua_pushboolean(L, 0);
  return 5;
}

static const char *const TYPES[] = {"file", "dir", "link", "whiteout", "other"};

static void push_entry(lua_State *L, const sb_scan_entry *e) {
  lua_createtable(L, 0, 5);
  lua_pushlstring(L, e->path, e->plen);
  lua_setfield(L, -2, "path");
  lua_pushstring(L, TYPES[e->type]);
  lua_setfield(L, -2, "type");
  if (e->opaque) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "opaque");
  }
  lua_pushinteger(L, (lua_Integer)e->size);
  lua_setfield(L, -2, "size");
  char fp[64]; /* what tells two states of a file apart without reading it */
  snprintf(fp, sizeof fp, "%s:%llu:%lld.%09ld", TYPES[e->type], (unsigned long long)e->size, (long long)e->mtime_sec,
           e->mtime_nsec);
  lua_pushstring(L, fp);
  lua_setfield(L, -2, "fingerprint");
}

typedef struct scan_ud {
  lua_State *L;
  lua_Integer n;
  int only; /* one type, or -1 */
} scan_ud;

static int scan_cb(void *ud, const sb_scan_entry *e) {
  scan_ud *u = ud;
  if (u->only >= 0 && e->type != u->only) return 0;
  if (!lua_checkstack(u->L, 4)) return 1;
  push_entry(u->L, e);
  lua_rawseti(u->L, -2, ++u->n);
  return 0;
}

static int open_root(lua_State *L, const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
  }
  return fd;
}

/* core.review_scan(dir [, type]) -> {{path, type, opaque, size,
 * fingerprint}, ...} in name order (only entries of that type: "link", ...),
 * or nil, msg. */
static int l_scan(lua_State *L) {
  static const char *const only[] = {"file", "dir", "link", "whiteout", "other", "all", NULL};
  int type = luaL_checkoption(L, 2, "all", only);
  int fd = open_root(L, luaL_checkstring(L, 1));
  if (fd < 0) return 2;
  lua_newtable(L);
  scan_ud u = {L, 0, type == 5 ? -1 : type};
  int err = sb_scan_tree(fd, scan_cb, &u);
  close(fd);
  if (err) {
    lua_pushnil(L);
    lua_pushstring(L, strerror(err));
    return 2;
  }
  return 1;
}

/* core.review_entry(dir, rel) -> entry | false (not there) | nil, msg. */
static int l_entry(lua_State *L) {
  int fd = open_root(L, luaL_checkstring(L, 1));
  if (fd < 0) return 2;
  sb_scan_entry e;
  int err = sb_scan_one(fd, luaL_checkstring(L, 2), &e);
  close(fd);
  if (err == ENOENT || err == ENOTDIR) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (err) {
    lua_pushnil(L);
    lua_pushstring(L, strerror(err));
    return 2;
  }
  push_entry(L, &e);
  return 1;
}

/* core.review_merged(helper, sb): the review's helper (a plain
 * ContainerSandbox over base_dir) works in the overlay sb's merged view from
 * here, through the same unmasked mount the sandbox's own file operations
 * use (never through the sandbox's init, which no one may reach). true, or
 * nil, msg. */
static int l_merged(lua_State *L) {
  sb_sandbox *h = sb_lua_check_open(L, 1);
  sb_sandbox *sb = sb_lua_check_open(L, 2);
  if (h->fs.be != &sb_container_backend) luaL_argerror(L, 1, "a ContainerSandbox");
  const char *why = NULL;
  int fd = sb_lua_confine_merged_fd(sb, &why);
  if (fd < 0) {
    lua_pushnil(L);
    lua_pushstring(L, why && *why ? why : "the overlay has no merged view");
    return 2;
  }
  sb_container_set_root(&h->fs, fd, -1);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.review_changed(sb): the review's helper changed sb's upper layer
 * (a discard, a restore): what sb caches about the layer is stale. */
static int l_changed(lua_State *L) {
  sb_sandbox *sb = sb_lua_check(L, 1);
  if (sb->fs.impl && sb->fs.be->cmd) sb->fs.be->cmd->changed(&sb->fs);
  return 0;
}

void sb_lua_review_open(lua_State *L) {
  static const luaL_Reg fns[] = {{"diff", l_diff},
                                 {"review_scan", l_scan},
                                 {"review_entry", l_entry},
                                 {"review_merged", l_merged},
                                 {"review_changed", l_changed},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
