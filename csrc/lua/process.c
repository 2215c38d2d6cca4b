/* The Process handle of a command (SPEC §5): read, write, wait, kill. */
#include "lua/process.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "base/clock.h"
#include "plat/signame.h"

/* Running handles are anchored in a per-sandbox table {[id] = handle} so
 * callbacks can reach them; a handle refers to its sandbox only weakly, so
 * an unreachable sandbox is still collected and its __gc kills its
 * processes. */
static const char WEAK_META = 0;

typedef struct handle {
  sb_proc *p; /* NULL once released */
  unsigned id;
  pid_t pid;
  bool background;
} handle;

#define OPS(p) ((p)->ops)

/* ---- handles ---------------------------------------------------------- */

static handle *check_handle(lua_State *L, int idx) { return luaL_checkudata(L, idx, "sandbox.Process"); }

/* The runner of the handle's sandbox, or NULL once it is gone or disposed. */
static sb_lua_runner *handle_runner(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);
  lua_rawgeti(L, -1, 1); /* weak: nil once the sandbox is collected */
  sb_sandbox *sb = lua_isnil(L, -1) ? NULL : sb_lua_check(L, -1);
  lua_pop(L, 2);
  if (!sb || sb->closed) return NULL;
  return sb_lua_runner_of(sb);
}

static sb_proc *live_proc(lua_State *L, handle *h) {
  if (!h->p || !h->p->runner) luaL_error(L, "attempt to use a process of a disposed sandbox");
  return h->p;
}

static int h_result(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 2);
  return lua_getfield(L, -1, "result");
}

static int h_wait(lua_State *L) {
  handle *h = check_handle(L, 1);
  double timeout = luaL_optnumber(L, 2, -1);
  if (h_result(L, 1) == LUA_TTABLE) return 1;
  sb_lua_runner *lr = handle_runner(L, 1);
  sb_proc *p = live_proc(L, h);
  if (!lr) luaL_error(L, "attempt to use a process of a disposed sandbox");
  sb_lua_wait_pump(L, lr, p, timeout);
  if (h_result(L, 1) == LUA_TTABLE) return 1;
  sb_err e;
  sb_fail(&e, SB_EAGAIN, "the process is still running");
  return sb_push_err(L, &e, NULL, 0);
}

static int h_running(lua_State *L) {
  handle *h = check_handle(L, 1);
  lua_pushboolean(L, h->p && h->p->runner && !h->p->finished);
  return 1;
}

static int stream_arg(lua_State *L, int idx) {
  static const char *const names[] = {"stdout", "stderr", NULL};
  return luaL_checkoption(L, idx, "stdout", names);
}

/* h:read([stream [, timeout]]): the output that arrived since the last read,
 * "" if none came within timeout (0: do not wait, < 0: wait), nil at EOF. */
static int h_read(lua_State *L) {
  handle *h = check_handle(L, 1);
  int k = stream_arg(L, 2);
  double timeout = luaL_optnumber(L, 3, 0);
  if (!h->p) luaL_error(L, "attempt to read a released process");
  sb_proc *p = h->p;
  if (!p->queued[k])
    luaL_error(L, "h:read: this process's %s goes to its %s callback", k == SB_OUT ? "stdout" : "stderr",
               k == SB_OUT ? "on_stdout" : "on_stderr");
  sb_lua_runner *lr = p->runner ? handle_runner(L, 1) : NULL;
  double deadline = sb_now() + timeout;
  for (bool first = true;; first = false) {
    const char *d;
    size_t n;
    if (sb_proc_pop(p, k, &d, &n)) { /* queued output stays readable after dispose */
      lua_pushlstring(L, d, n);
      return 1;
    }
    if (!p->runner || !lr || sb_proc_stream_done(p, k)) { /* nothing more will come */
      lua_pushnil(L);
      return 1;
    }
    double left = deadline - sb_now();
    if (!first && timeout >= 0 && left <= 0) {
      lua_pushliteral(L, "");
      return 1;
    }
    sb_lua_pump(L, lr, NULL, timeout < 0 ? -1 : left > 0 ? left : 0);
  }
}

static int h_write(lua_State *L) {
  handle *h = check_handle(L, 1);
  size_t n;
  const char *d = luaL_checklstring(L, 2, &n);
  sb_proc *p = live_proc(L, h);
  int r = OPS(p)->write(p, d, n);
  if (r == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  sb_err e;
  sb_fail(&e, r == -ENOMEM ? SB_ENOSPC : SB_EIO, r == -ENOMEM ? "out of memory" : "stdin is closed");
  return sb_push_err(L, &e, NULL, 0);
}

static int h_close_stdin(lua_State *L) {
  handle *h = check_handle(L, 1);
  if (h->p && h->p->runner) OPS(h->p)->close_stdin(h->p);
  return 0;
}

static int parse_signal(lua_State *L, int idx) {
  if (lua_isinteger(L, idx)) return (int)lua_tointeger(L, idx);
  const char *s = luaL_optstring(L, idx, "TERM");
  if (strncmp(s, "SIG", 3) == 0) s += 3;
  for (int sig = 1; sig < NSIG; sig++) {
    const char *a = sb_signame(sig);
    if (a && strcmp(a, s) == 0) return sig;
  }
  return luaL_argerror(L, idx, "unknown signal name");
}

/* h:kill([sig]): the whole tree; TERM (default) escalates to KILL. */
static int h_kill(lua_State *L) {
  handle *h = check_handle(L, 1);
  int sig = parse_signal(L, 2);
  if (h->p && h->p->runner && !h->p->finished) {
    OPS(h->p)->kill(h->p, sig);
    sb_lua_runner *lr = handle_runner(L, 1);
    if (lr) sb_lua_pump(L, lr, NULL, 0);
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int h_gc(lua_State *L) {
  handle *h = lua_touserdata(L, 1);
  if (h->p) {
    sb_proc_release(h->p); /* a detached one (the runner closed) is freed now */
    h->p = NULL;
  }
  return 0;
}

static int h_index(lua_State *L) {
  handle *h = check_handle(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "pid") == 0) {
    if (h->p) h->pid = h->p->pid; /* a start heard later (RemoteSandbox) names it then */
    lua_pushinteger(L, h->pid);
  } else if (strcmp(k, "id") == 0) lua_pushinteger(L, h->id);
  else if (strcmp(k, "background") == 0) lua_pushboolean(L, h->background);
  else if (strcmp(k, "read_dropped") == 0) /* output that went past h:read */
    sb_lua_pushu64(L, h->p ? (uint64_t)(h->p->qdropped[0] + h->p->qdropped[1]) : 0);
  else {
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    if (lua_getfield(L, -1, k) == LUA_TNIL) { /* fields the layer set (an exposed port's url) */
      lua_getiuservalue(L, 1, 2);
      lua_getfield(L, -1, "fields");
      if (lua_istable(L, -1)) lua_getfield(L, -1, k);
      else lua_pushnil(L);
    }
  }
  return 1;
}

static int h_tostring(lua_State *L) {
  handle *h = check_handle(L, 1);
  lua_pushfstring(L, "sandbox.Process %d (pid %d, %s)", (int)h->id, (int)h->pid,
                  h->p && h->p->runner && !h->p->finished ? "running" : "finished");
  return 1;
}

static void push_handle_meta(lua_State *L) {
  if (luaL_newmetatable(L, "sandbox.Process")) {
    static const luaL_Reg methods[] = {
        {"wait", h_wait}, {"read", h_read},       {"write", h_write}, {"close_stdin", h_close_stdin},
        {"kill", h_kill}, {"running", h_running}, {NULL, NULL}};
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "methods");
    lua_pushcfunction(L, h_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, h_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, h_tostring);
    lua_setfield(L, -2, "__tostring");
  }
}

int sb_lua_handle_new(lua_State *L, sb_lua_runner *lr, int sb_idx, int spec_idx) {
  sb_idx = lua_absindex(L, sb_idx);
  spec_idx = lua_absindex(L, spec_idx);
  /* the handle exists before the process, so a memory error leaks nothing */
  handle *h = lua_newuserdatauv(L, sizeof *h, 2);
  memset(h, 0, sizeof *h);
  int hidx = lua_gettop(L);
  push_handle_meta(L);
  lua_setmetatable(L, hidx);
  lua_createtable(L, 1, 0); /* {sandbox}, weak */
  lua_pushvalue(L, sb_idx);
  lua_rawseti(L, -2, 1);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &WEAK_META) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &WEAK_META);
  }
  lua_setmetatable(L, -2);
  lua_setiuservalue(L, hidx, 1);
  lua_createtable(L, 0, 6);
  static const char *const keep[] = {"on_stdout", "on_stderr", "on_exit", "on_end", "fields"};
  for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
    lua_getfield(L, spec_idx, keep[i]);
    lua_setfield(L, -2, keep[i]);
  }
  lua_setiuservalue(L, hidx, 2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, lr->procs_ref);
  lua_pushvalue(L, hidx);
  lua_rawseti(L, -2, (lua_Integer)lr->r->next_id + 1); /* the id start assigns; may raise: nothing to leak yet */
  lua_pop(L, 1);
  return hidx;
}

void sb_lua_handle_bind(lua_State *L, int hidx, sb_proc *p) {
  handle *h = lua_touserdata(L, hidx);
  p->ud = (void *)(intptr_t)p->id;
  h->p = p;
  h->id = p->id;
  h->pid = p->pid;
  h->background = p->background;
}

void sb_lua_handle_drop(lua_State *L, sb_lua_runner *lr) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, lr->procs_ref);
  lua_pushnil(L);
  lua_rawseti(L, -2, (lua_Integer)lr->r->next_id + 1);
  lua_pop(L, 1);
}

void sb_lua_push_processes(lua_State *L, sb_lua_runner *lr) {
  lua_newtable(L);
  if (!lr) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, lr->procs_ref);
  lua_Integer n = 0;
  for (sb_proc *p = lr->r->procs; p; p = p->next) {
    if (!p->background || p->finished) continue;
    if (lua_rawgeti(L, -1, (lua_Integer)(intptr_t)p->ud) == LUA_TUSERDATA) lua_rawseti(L, -3, ++n);
    else lua_pop(L, 1);
  }
  lua_pop(L, 1);
  /* oldest first */
  for (lua_Integer i = 1, j = n; i < j; i++, j--) {
    lua_rawgeti(L, -1, i);
    lua_rawgeti(L, -2, j);
    lua_rawseti(L, -3, i);
    lua_rawseti(L, -2, j);
  }
}
