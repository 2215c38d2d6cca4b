#include "lua/audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/log.h"
#include "base/clock.h"
#include "lua/audit_line.h"

#define CHECK_EVERY 256 /* lines between two looks at the writer's state */

struct sb_audit {
  sb_mem m;
  int fn_ref; /* the audit function, or LUA_NOREF */
  int collect_ref; /* in a forked copy: the table of events for the host */
  sb_auditlog *log; /* audit_log, or NULL */
  sb_netlog net;
  lua_Integer seq;
  unsigned since_check; /* lines since the writer's state was last read */
  bool draining;
  sb_buf line; /* the line being encoded */
};

/* ---- the stream --------------------------------------------------------------- */

/* An event only the audit function hears (the log is what failed). */
static void tell(lua_State *L, sb_audit *a, const sb_auditlog_state *st) {
  if (a->fn_ref == LUA_NOREF) {
    fprintf(stderr, "sandbox: audit_error: %s\n", st->error); /* never a silent stop */
    return;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->fn_ref);
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, ++a->seq);
  lua_setfield(L, -2, "seq");
  lua_pushnumber(L, sb_wall());
  lua_setfield(L, -2, "time");
  lua_pushliteral(L, "audit_error");
  lua_setfield(L, -2, "kind");
  lua_pushstring(L, st->error);
  lua_setfield(L, -2, "message");
  lua_pushinteger(L, (lua_Integer)st->lost);
  lua_setfield(L, -2, "lost");
  lua_pushinteger(L, (lua_Integer)st->queued);
  lua_setfield(L, -2, "buffered");
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);
}

/* Hear the writer: a write that failed is told once per reason (the
 * writer retries every second and records the lines it had to drop). */
static void check(lua_State *L, sb_audit *a) {
  sb_auditlog_state st;
  if (sb_auditlog_state_get(a->log, &st, true) && st.error[0]) tell(L, a, &st);
}

/* A line for the writer; every CHECK_EVERY lines, a look at how it fares. */
static void add_line(lua_State *L, sb_audit *a, const char *body, size_t len) {
  sb_auditlog_add(a->log, body, len);
  if (++a->since_check >= CHECK_EVERY) {
    a->since_check = 0;
    check(L, a);
  }
}

/* A flush point (a command's end, a pump turn, dispose): the writer is
 * asked to write now (without waiting) and heard. */
static void flush(lua_State *L, sb_audit *a, bool now) {
  if (!a->log) return;
  if (now) sb_auditlog_flush(a->log, false);
  check(L, a);
}

static void emit(lua_State *L, sb_sandbox *sb, int idx, bool protect);

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

/* The network servers' records, in the order they were made. */
static void drain(lua_State *L, sb_sandbox *sb, bool protect) {
  sb_audit *a = sb->audit;
  sb_netevent *v;
  uint64_t dropped;
  size_t n = sb_netlog_take(&a->net, &v, &dropped);
  if (!n && !dropped) return;
  a->draining = true;
  for (size_t i = 0; i < n; i++) {
    const sb_netevent *ev = &v[i];
    lua_createtable(L, 0, 12);
    lua_pushnumber(L, ev->time);
    lua_setfield(L, -2, "time");
    set_str(L, "kind", ev->what == SB_NE_END ? "net_end" : ev->what == SB_NE_SECRET ? "secret_injected" : "net");
    set_str(L, "server", ev->server);
    if (ev->host[0]) set_str(L, "host", ev->host);
    if (ev->port) set_int(L, "port", ev->port);
    if (ev->method[0]) set_str(L, "method", ev->method);
    if (ev->what == SB_NE_END) {
      set_int(L, "bytes_up", (lua_Integer)ev->up);
      set_int(L, "bytes_down", (lua_Integer)ev->down);
    } else if (ev->what == SB_NE_SECRET) {
      set_str(L, "header", ev->why); /* the name only: the value never leaves the proxy */
    } else {
      lua_pushboolean(L, ev->what == SB_NE_ALLOW);
      lua_setfield(L, -2, "allowed");
      set_str(L, "rule", ev->why);
      if (ev->status) set_int(L, "status", ev->status);
    }
    emit(L, sb, -1, protect);
    lua_pop(L, 1);
  }
  free(v);
  if (dropped) {
    lua_createtable(L, 0, 4);
    set_str(L, "kind", "audit_lost");
    set_str(L, "source", "network");
    set_int(L, "lost", (lua_Integer)dropped);
    emit(L, sb, -1, protect);
    lua_pop(L, 1);
  }
  a->draining = false;
}

static void emit(lua_State *L, sb_sandbox *sb, int idx, bool protect) {
  sb_audit *a = sb->audit;
  if (!a) return;
  idx = lua_absindex(L, idx);
  if (lua_getfield(L, idx, "time") == LUA_TNIL) {
    lua_pushnumber(L, sb_wall());
    lua_setfield(L, idx, "time");
  }
  if (lua_getfield(L, idx, "kind") == LUA_TNIL) {
    lua_pushliteral(L, "file");
    lua_setfield(L, idx, "kind");
  }
  lua_pop(L, 2);
  if (a->collect_ref != LUA_NOREF) { /* a forked copy: the host numbers and writes it */
    lua_rawgeti(L, LUA_REGISTRYINDEX, a->collect_ref);
    lua_pushvalue(L, idx);
    lua_rawseti(L, -2, (int)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
    return;
  }
  if (!a->draining) drain(L, sb, protect);
  lua_pushinteger(L, ++a->seq);
  lua_setfield(L, idx, "seq");
  if (a->log) {
    a->line.len = 0;
    sb_aline w = {.L = L, .m = &a->m, .b = &a->line};
    sb_aline_event(&w, idx);
    if (!w.bad && a->line.len > 1) add_line(L, a, a->line.p, a->line.len - 1); /* the log closes it */
    sb_buf_trim(&a->m, &a->line, 16 * 1024);
  }
  if (a->fn_ref != LUA_NOREF) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, a->fn_ref);
    lua_pushvalue(L, idx);
    if (!protect) lua_call(L, 1, 0);
    else if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);
  }
}

void sb_lua_audit_emit(lua_State *L, sb_sandbox *sb, int idx) { emit(L, sb, idx, false); }

/* A file operation: straight into the log's line when nobody needs its
 * table (no audit function, not a copy): the common case costs a few
 * hundred nanoseconds, not a table's worth. */
static void audit_file(lua_State *L, sb_sandbox *sb, const sb_audit_file *f) {
  sb_audit *a = sb->audit;
  if (!a) return;
  if (a->fn_ref != LUA_NOREF || a->collect_ref != LUA_NOREF) {
    lua_createtable(L, 0, 8);
    set_str(L, "op", f->op);
    if (f->path) {
      lua_pushlstring(L, f->path, f->plen);
      lua_setfield(L, -2, "path");
    }
    if (f->size >= 0) set_int(L, "size", f->size);
    lua_pushboolean(L, f->ok);
    lua_setfield(L, -2, "ok");
    if (f->code) set_str(L, "code", f->code);
    emit(L, sb, -1, false);
    lua_pop(L, 1);
    return;
  }
  if (!a->draining) drain(L, sb, false);
  a->line.len = 0;
  sb_aline w = {.L = L, .m = &a->m, .b = &a->line};
  sb_aline_lit(&w, "{\"seq\":");
  sb_aline_int(&w, ++a->seq);
  sb_aline_lit(&w, ",\"time\":");
  sb_aline_time(&w, sb_wall());
  sb_aline_lit(&w, ",\"kind\":\"file\"");
  if (f->code) { /* the keys in order, as the general encoder writes them */
    sb_aline_lit(&w, ",\"code\":");
    sb_aline_str(&w, f->code, strlen(f->code));
  }
  sb_aline_lit(&w, f->ok ? ",\"ok\":true,\"op\":" : ",\"ok\":false,\"op\":");
  sb_aline_str(&w, f->op, strlen(f->op));
  if (f->path) {
    sb_aline_lit(&w, ",\"path\":");
    sb_aline_str(&w, f->path, f->plen);
  }
  if (f->size >= 0) {
    sb_aline_lit(&w, ",\"size\":");
    sb_aline_int(&w, f->size);
  }
  if (!w.bad) add_line(L, a, a->line.p, a->line.len);
}

sb_netlog *sb_lua_audit_netlog(sb_sandbox *sb) { return sb->audit ? &sb->audit->net : NULL; }

void sb_lua_audit_collect(lua_State *L, sb_sandbox *sb, int idx) {
  if (!sb->audit) return;
  lua_pushvalue(L, idx);
  sb->audit->collect_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

static void audit_free(lua_State *L, sb_audit *a) {
  sb_auditlog_close(a->log);
  sb_netlog_free(&a->net);
  luaL_unref(L, LUA_REGISTRYINDEX, a->fn_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, a->collect_ref);
  sb_buf_free(&a->m, &a->line);
  sb_free(&a->m, a, sizeof *a);
}

static void audit_close(lua_State *L, sb_sandbox *sb) {
  sb_audit *a = sb->audit;
  if (!a) return;
  if (a->collect_ref == LUA_NOREF) {
    lua_createtable(L, 0, 4);
    lua_pushliteral(L, "disposed");
    lua_setfield(L, -2, "kind");
    emit(L, sb, -1, true);
    lua_pop(L, 1);
    if (a->log) { /* the last lines written before the sandbox is gone, and how that went */
      sb_auditlog_flush(a->log, true);
      check(L, a);
    }
  }
  sb->audit = NULL;
  sb->audit_hooks = NULL;
  audit_free(L, a);
}

static const sb_audit_hooks HOOKS = {audit_file, audit_close};

/* ---- core functions ------------------------------------------------------------ */

/* core.audit_start(sb, created, fn | nil, path | nil) -> true | nil, msg, code:
 * the stream begins with the `created` event. */
static int l_audit_start(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *path = luaL_optstring(L, 4, NULL);
  if (sb->audit) return luaL_error(L, "audit_start: the sandbox's audit has begun");
  sb_audit *a = sb_malloc(&sb->fs.mem, sizeof *a);
  if (!a) return luaL_error(L, "not enough memory");
  memset(a, 0, sizeof *a);
  a->m = sb->fs.mem;
  a->fn_ref = a->collect_ref = LUA_NOREF;
  if (sb_netlog_init(&a->net) != 0) {
    sb_free(&a->m, a, sizeof *a);
    return luaL_error(L, "not enough memory");
  }
  sb_err e = {.code = SB_OK};
  if (path && !(a->log = sb_auditlog_open(path, &e))) {
    audit_free(L, a);
    return sb_push_err(L, &e, NULL, 0);
  }
  if (lua_isfunction(L, 3)) {
    lua_pushvalue(L, 3);
    a->fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  sb->audit = a;
  sb->audit_hooks = &HOOKS;
  emit(L, sb, 2, false);
  flush(L, a, true);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.audit(sb, event): a no-op without audit or once disposed. */
static int l_audit(lua_State *L) {
  sb_sandbox *sb = sb_lua_check(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  emit(L, sb, 2, false);
  return 0;
}

/* core.audited(sb): does the sandbox keep an audit stream? */
static int l_audited(lua_State *L) {
  lua_pushboolean(L, sb_lua_check(L, 1)->audit != NULL);
  return 1;
}

/* core.audit_flush(sb, now): the network's records in; the log written when
 * due (now: at once). */
static int l_audit_flush(lua_State *L) {
  sb_sandbox *sb = sb_lua_check(L, 1);
  if (!sb->audit || sb->audit->collect_ref != LUA_NOREF) return 0;
  drain(L, sb, false);
  flush(L, sb->audit, lua_toboolean(L, 2));
  return 0;
}

/* core.audit_state(sb) -> {events, lines, buffered, lost, error} or nil. */
static int l_audit_state(lua_State *L) {
  sb_sandbox *sb = sb_lua_check(L, 1);
  sb_audit *a = sb->audit;
  if (!a) return 0;
  lua_createtable(L, 0, 5);
  set_int(L, "events", a->seq);
  sb_auditlog_state st = {0};
  if (a->log) sb_auditlog_state_get(a->log, &st, false);
  set_int(L, "lines", (lua_Integer)st.lines);
  set_int(L, "buffered", (lua_Integer)st.queued);
  set_int(L, "lost", (lua_Integer)st.lost);
  if (st.error[0]) set_str(L, "error", st.error);
  return 1;
}

/* core.sha256(s) -> 64 hex digits. */
static int l_sha256(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char hex[65];
  if (!sb_sha256_hex(s, n, hex)) return luaL_error(L, "sha256: libcrypto cannot compute SHA-256");
  lua_pushlstring(L, hex, 64);
  return 1;
}

void sb_lua_audit_open(lua_State *L) {
  static const luaL_Reg fns[] = {{"audit_start", l_audit_start},
                                 {"audit", l_audit},
                                 {"audited", l_audited},
                                 {"audit_flush", l_audit_flush},
                                 {"audit_state", l_audit_state},
                                 {"sha256", l_sha256},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
