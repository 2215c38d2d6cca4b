#include "lua/review.h"

#include <string.h>

#include "review/diff.h"

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

void sb_lua_review_open(lua_State *L) {
  lua_pushcfunction(L, l_diff);
  lua_setfield(L, -2, "diff");
}
