/* core.call_start(sb, fn, ...): any call of a sandbox's made in a forked
 * copy of this process (lua/forkjob.c), its answer taken on a later turn:
 * what lets a RemoteSandbox's file calls, each one or more round trips to
 * the engine, finish later without a thread (sandbox/forked.lua). The copy
 * calls fn(...) on its copy of the Lua state with the collector stopped (no
 * finaliser of the host's may run there: a handle's would kill the host's
 * command), its audit entries collected instead of reported, and sends back
 * what fn returned (nil, booleans, numbers, strings and tables of them) and
 * those entries, which the host then reports as if the call had been made
 * here. Only for calls whose effects live outside this process (a remote
 * engine's files): what fn changes in the copy's memory is lost with it. */
#include <string.h>
#include <sys/wait.h>

#include "base/err.h"
#include "lua/audit.h"
#include "lua/forkjob.h"

#define CALL_MT "sandbox.CallJob"
#define DEPTH_MAX 32 /* nested tables a value may have */

typedef struct call {
  sb_forkjob fj;
  bool done; /* the result was handed out */
  /* for the copy: the call as it stands on the caller's stack */
  lua_State *L;
  sb_sandbox *sb;
  int first, n; /* fn's index, and the number of its arguments */
} call;

/* ---- values across the pipe: a tag byte, then what the tag says ----------- */

enum { V_NIL = 'N', V_FALSE = 'F', V_TRUE = 'T', V_INT = 'I', V_NUM = 'D', V_STR = 'S', V_TABLE = 'A' };

typedef struct enc {
  lua_State *L;
  sb_mem *m;
  sb_buf *b;
  const char *bad; /* why a value cannot go, or NULL */
} enc;

static void put(enc *w, const void *p, size_t n) {
  if (!w->bad && sb_buf_append(w->m, w->b, p, n) != 0) w->bad = "not enough memory";
}

static void put_u32(enc *w, uint32_t v) { put(w, &v, sizeof v); }

static void put_value(enc *w, int idx, int depth) {
  char tag;
  switch (lua_type(w->L, idx)) {
  case LUA_TNIL:
    tag = V_NIL;
    put(w, &tag, 1);
    return;
  case LUA_TBOOLEAN:
    tag = lua_toboolean(w->L, idx) ? V_TRUE : V_FALSE;
    put(w, &tag, 1);
    return;
  case LUA_TNUMBER:
#if LUA_VERSION_NUM >= 503
    if (lua_isinteger(w->L, idx)) {
      lua_Integer i = lua_tointeger(w->L, idx);
      tag = V_INT;
      put(w, &tag, 1);
      put(w, &i, sizeof i);
      return;
    }
#endif
    {
      lua_Number d = lua_tonumber(w->L, idx);
      tag = V_NUM;
      put(w, &tag, 1);
      put(w, &d, sizeof d);
    }
    return;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(w->L, idx, &n);
    if (n > UINT32_MAX) {
      w->bad = "a string over 4 GiB";
      return;
    }
    tag = V_STR;
    put(w, &tag, 1);
    put_u32(w, (uint32_t)n);
    put(w, s, n);
    return;
  }
  case LUA_TTABLE: {
    if (depth >= DEPTH_MAX || !lua_checkstack(w->L, 3)) {
      w->bad = "tables nested too deep";
      return;
    }
    idx = lua_absindex(w->L, idx);
    tag = V_TABLE;
    put(w, &tag, 1);
    uint32_t pairs = 0;
    size_t at = w->b->len;
    put_u32(w, 0); /* the count, filled in below */
    lua_pushnil(w->L);
    while (!w->bad && lua_next(w->L, idx)) {
      put_value(w, -2, depth + 1);
      put_value(w, -1, depth + 1);
      lua_pop(w->L, 1);
      pairs++;
    }
    if (w->bad) return; /* lua_next left the key: the copy stops anyway */
    memcpy(w->b->p + at, &pairs, sizeof pairs);
    return;
  }
  default: w->bad = "a value that cannot leave its process (a function, a userdata or a thread)";
  }
}

typedef struct dec {
  lua_State *L;
  const char *p, *end;
} dec;

static bool take(dec *r, void *out, size_t n) {
  if ((size_t)(r->end - r->p) < n) return false;
  memcpy(out, r->p, n);
  r->p += n;
  return true;
}

/* One value pushed; false (nothing pushed) when the bytes are not one. */
static bool get_value(dec *r, int depth) {
  char tag;
  if (!take(r, &tag, 1) || !lua_checkstack(r->L, 3)) return false;
  switch (tag) {
  case V_NIL: lua_pushnil(r->L); return true;
  case V_FALSE: lua_pushboolean(r->L, 0); return true;
  case V_TRUE: lua_pushboolean(r->L, 1); return true;
  case V_INT: {
    lua_Integer i;
    if (!take(r, &i, sizeof i)) return false;
    lua_pushinteger(r->L, i);
    return true;
  }
  case V_NUM: {
    lua_Number d;
    if (!take(r, &d, sizeof d)) return false;
    lua_pushnumber(r->L, d);
    return true;
  }
  case V_STR: {
    uint32_t n;
    if (!take(r, &n, sizeof n) || (size_t)(r->end - r->p) < n) return false;
    lua_pushlstring(r->L, r->p, n);
    r->p += n;
    return true;
  }
  case V_TABLE: {
    uint32_t pairs;
    if (depth >= DEPTH_MAX || !take(r, &pairs, sizeof pairs)) return false;
    lua_newtable(r->L);
    for (uint32_t i = 0; i < pairs; i++) {
      if (!get_value(r, depth + 1)) goto bad;
      if (lua_isnil(r->L, -1) || !get_value(r, depth + 1)) {
        lua_pop(r->L, 1);
        goto bad;
      }
      lua_rawset(r->L, -3);
    }
    return true;
  bad:
    lua_pop(r->L, 1);
    return false;
  }
  default: return false;
  }
}

/* ---- the copy --------------------------------------------------------------- */

/* What the copy sends: ok (1 byte), the number of values, the values, then
 * the audit entries as one table (nil when there is no audit). */
static void run_copy(void *arg, int wfd) {
  call *c = arg;
  lua_State *L = c->L;
  lua_gc(L, LUA_GCSTOP, 0);
  int entries = 0;
  if (c->sb->audit) { /* the copy's events are kept for the host */
    lua_newtable(L);
    entries = lua_gettop(L);
    sb_lua_audit_collect(L, c->sb, entries);
  }
  int base = lua_gettop(L);
  lua_checkstack(L, c->n + 1);
  for (int i = 0; i <= c->n; i++) lua_pushvalue(L, c->first + i);
  char ok = lua_pcall(L, c->n, LUA_MULTRET, 0) == 0;
  int nres = lua_gettop(L) - base;
  sb_buf b = {0};
  enc w = {.L = L, .m = &c->sb->fs.mem, .b = &b};
  put(&w, &ok, 1);
  put_u32(&w, (uint32_t)nres);
  for (int i = 1; i <= nres; i++) put_value(&w, base + i, 0);
  if (entries) put_value(&w, entries, 0);
  else put(&w, &(char){V_NIL}, 1);
  if (w.bad) { /* say why instead: an error the caller sees */
    const char *why = w.bad;
    b.len = 0;
    w.bad = NULL;
    ok = 0;
    put(&w, &ok, 1);
    put_u32(&w, 1);
    lua_pushfstring(L, "call in a forked copy: it returned %s", why);
    put_value(&w, -1, 0);
    put(&w, &(char){V_NIL}, 1);
  }
  if (!w.bad) sb_forkjob_write(wfd, b.p, b.len);
}

/* ---- the host --------------------------------------------------------------- */

static int call_gc(lua_State *L) {
  sb_forkjob_free(&((call *)luaL_checkudata(L, 1, CALL_MT))->fj);
  return 0;
}

/* core.call_start(sb, fn, ...) -> job | nil, msg, code (EAGAIN: no process
 * or pipe to be had; the caller may then call fn itself). */
static int l_call_start(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  int top = lua_gettop(L);
  call *c = sb_forkjob_new(L, sizeof *c, CALL_MT);
  c->L = L;
  c->sb = sb;
  c->first = 2;
  c->n = top - 2;
  sb_err e = {.code = SB_OK};
  if (sb_forkjob_start(L, sb, &c->fj, run_copy, c, &e) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, e.msg ? e.msg : sb_code_text(e.code));
    lua_pushstring(L, sb_code_name(e.code));
    return 3;
  }
  return 1;
}

/* job:result() -> false while the copy runs; then, once, true, ok, ...: ok
 * and fn's values, or false and the error it raised (a string). */
static int m_result(lua_State *L) {
  call *c = luaL_checkudata(L, 1, CALL_MT);
  if (c->done) return luaL_error(L, "call job: the result was already taken");
  if (!sb_forkjob_poll(L, &c->fj)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  c->done = true;
  lua_getiuservalue(L, 1, 1);
  sb_sandbox *sb = sb_lua_check(L, -1);
  int base = lua_gettop(L);
  const sb_buf *got = &c->fj.got;
  dec r = {.L = L, .p = got->p, .end = got->p + got->len};
  char ok = 0;
  uint32_t nres = 0;
  bool whole = take(&r, &ok, 1) && take(&r, &nres, sizeof nres) && nres < 256 && lua_checkstack(L, (int)nres + 4);
  lua_pushboolean(L, 1);
  lua_pushboolean(L, ok);
  for (uint32_t i = 0; whole && i < nres; i++) whole = get_value(&r, 0);
  if (whole && get_value(&r, 0) && r.p == r.end) {
    if (lua_istable(L, -1)) /* the copy's events, numbered and written here */
      for (int i = 1; i <= (int)lua_rawlen(L, -1); i++) {
        lua_rawgeti(L, -1, i);
        sb_lua_audit_emit(L, sb, -1);
        lua_pop(L, 1);
      }
    lua_pop(L, 1);
    return lua_gettop(L) - base;
  }
  lua_settop(L, base);
  lua_pushboolean(L, 1);
  lua_pushboolean(L, 0);
  if (WIFSIGNALED(c->fj.status))
    lua_pushfstring(L, "the call's process ended by signal %d without an answer", WTERMSIG(c->fj.status));
  else lua_pushliteral(L, "the call's process ended without an answer");
  return 3;
}

/* job:cancel(): stop the copy (idempotent); result() then raises. */
static int m_cancel(lua_State *L) {
  call *c = luaL_checkudata(L, 1, CALL_MT);
  sb_forkjob_stop(&c->fj);
  c->done = true;
  return 0;
}

void sb_lua_call_job_open(lua_State *L) {
  if (luaL_newmetatable(L, CALL_MT)) {
    static const luaL_Reg methods[] = {{"result", m_result}, {"cancel", m_cancel}, {NULL, NULL}};
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, call_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_call_start);
  lua_setfield(L, -2, "call_start");
}
