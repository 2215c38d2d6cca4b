/* The command part of a sandbox as the binding holds it (see runner.h):
 * callbacks from the loop through a protected trampoline, result tables,
 * the pump. */
#include "lua/runner.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "lua/options.h"
#include "sandbox.h"
#include "plat/signame.h"

/* Registry key of the state's handler for errors raised by callbacks. */
static const char ERROR_HANDLER = 0;

/* ---- the part ------------------------------------------------------------ */

static void runner_close(lua_State *L, sb_sandbox *sb, void *state) {
  sb_lua_runner *lr = state;
  lr->L = L;
  lr->closing = true;
  lr->err_base = lua_gettop(L);
  if (lr->r) lr->r->ops->close(lr->r); /* processes, loop; results stay readable */
  lua_settop(L, lr->err_base);
  lr->L = NULL;
  luaL_unref(L, LUA_REGISTRYINDEX, lr->procs_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, lr->env_ref);
  sb_free(&sb->fs.mem, lr, sizeof *lr);
}

static const sb_part_class runner_part = {"exec", runner_close};

sb_lua_runner *sb_lua_runner_of(const sb_sandbox *sb) { return sb_part_get(sb, &runner_part); }

/* ---- callbacks from the loop ------------------------------------------ */

enum { CB_DATA, CB_EXIT };

typedef struct cbcall {
  sb_lua_runner *lr;
  sb_proc *p;
  int kind, stream;
  const char *buf;
  size_t len;
} cbcall;

static const char *sig_name(int sig, char *buf, size_t n) {
  const char *a = sb_signame(sig);
  if (a) snprintf(buf, n, "SIG%s", a);
  else snprintf(buf, n, "SIG%d", sig);
  return buf;
}

static void push_output(lua_State *L, sb_proc *p, int k) {
  sb_outbuf *o = &p->cap[k];
  uint64_t dropped = sb_outbuf_dropped(o);
  size_t kept = sb_outbuf_len(o), head = sb_outbuf_head_len(o);
  /* the bytes are put together in a userdata (collected, so a raise in
   * lua_pushlstring leaks nothing), then become the string */
  char *dst = lua_newuserdatauv(L, kept + 64, 0);
  sb_outbuf_copy(o, dst);
  if (dropped) { /* mark the cut between head and tail */
    char mark[64];
    int ml = snprintf(mark, sizeof mark, "\n[... %llu bytes dropped ...]\n", (unsigned long long)dropped);
    memmove(dst + head + (size_t)ml, dst + head, kept - head);
    memcpy(dst + head, mark, (size_t)ml);
    kept += (size_t)ml;
  }
  lua_pushlstring(L, dst, kept);
  lua_remove(L, -2);
}

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

/* A byte count: exact on every Lua, or an error (sb_lua_pushu64). */
static void set_u64(lua_State *L, const char *k, uint64_t v) {
  sb_lua_pushu64(L, v);
  lua_setfield(L, -2, k);
}

static void set_bool(lua_State *L, const char *k, bool v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, k);
}

/* The result table of SPEC §5 from a finished process. */
static void push_result(lua_State *L, sb_proc *p) {
  lua_createtable(L, 0, 16);
  int st = p->status;
  char nm[32];
  if (st == -1) { /* the host reaped it (SIGCHLD ignored, or waitpid(-1)) */
    set_bool(L, "status_lost", true);
    set_int(L, "exit_code", -1);
  }
  if (p->start_code != SB_OK) { /* a start taken later failed: exec.lua makes it nil, msg, code */
    lua_pushstring(L, sb_code_name(p->start_code));
    lua_setfield(L, -2, "start_failed");
  }
  if (p->error[0]) {
    lua_pushstring(L, p->error);
    lua_setfield(L, -2, "error");
  } else if (WIFEXITED(st)) {
    set_int(L, "exit_code", WEXITSTATUS(st));
  } else {
    set_int(L, "exit_code", 128 + WTERMSIG(st));
    lua_pushstring(L, sig_name(WTERMSIG(st), nm, sizeof nm));
    lua_setfield(L, -2, "signal");
  }
  set_bool(L, "timed_out", p->timed_out);
  if (p->kill_sig) {
    lua_pushstring(L, p->timed_out ? "timeout" : "kill");
    lua_setfield(L, -2, "killed_by");
  }
  if (p->oom) set_bool(L, "oom", true); /* the memory limit's OOM killer struck */
  if (p->pids_hit) set_bool(L, "pids_limit_hit", true); /* a fork was refused by the pids limit */
  push_output(L, p, SB_OUT);
  lua_setfield(L, -2, "stdout");
  push_output(L, p, SB_ERR);
  lua_setfield(L, -2, "stderr");
  uint64_t d0 = sb_outbuf_dropped(&p->cap[0]), d1 = sb_outbuf_dropped(&p->cap[1]);
  set_bool(L, "truncated", d0 + d1 > 0);
  set_u64(L, "dropped_bytes", d0 + d1);
  set_u64(L, "stdout_dropped", d0);
  set_u64(L, "stderr_dropped", d1);
  set_u64(L, "output_bytes", p->cap[0].total + p->cap[1].total); /* what the command wrote, kept or not */
  set_bool(L, "output_incomplete", p->output_incomplete);
  if (p->background) set_u64(L, "read_dropped", p->qdropped[0] + p->qdropped[1]);
  lua_pushnumber(L, p->t_end - p->t0);
  lua_setfield(L, -2, "duration");
  set_int(L, "pid", p->pid);
}

static int trampoline(lua_State *L) {
  cbcall *c = lua_touserdata(L, 1);
  sb_proc *p = c->p;
  sb_lua_runner *lr = c->lr;
  lua_rawgeti(L, LUA_REGISTRYINDEX, lr->procs_ref);
  int procs = lua_gettop(L);
  lua_Integer id = (lua_Integer)(intptr_t)p->ud;
  if (lua_rawgeti(L, procs, id) != LUA_TUSERDATA) return 0;
  lua_getiuservalue(L, -1, 2); /* the handle's table: callbacks, result */
  int t = lua_gettop(L);
  if (c->kind == CB_DATA) {
    if (!lr->closing && lua_getfield(L, t, c->stream == SB_OUT ? "on_stdout" : "on_stderr") == LUA_TFUNCTION) {
      lua_pushlstring(L, c->buf, c->len);
      lua_call(L, 1, 0);
    }
    return 0;
  }
  push_result(L, p);
  int res = lua_gettop(L);
  if (lr->closing && p->kill_sig && !p->timed_out) { /* the sandbox's dispose ended it */
    lua_pushliteral(L, "dispose");
    lua_setfield(L, res, "killed_by");
  }
  /* the layer's own end hook (an exposed port closing) may amend it */
  if (lua_getfield(L, t, "on_end") == LUA_TFUNCTION) {
    lua_pushvalue(L, res);
    lua_call(L, 1, 0);
  } else {
    lua_pop(L, 1);
  }
  lua_pushvalue(L, res);
  lua_setfield(L, t, "result");
  lua_pushnil(L);
  lua_rawseti(L, procs, id); /* finished: no longer anchored */
  if (!lr->closing && lua_getfield(L, t, "on_exit") == LUA_TFUNCTION) {
    lua_pushvalue(L, res);
    lua_call(L, 1, 0);
  }
  return 0;
}

/* A callback's error goes to the state's error handler when the host set
 * one: handler(err, {callback=, id=, pid=}). Otherwise (or when the handler
 * fails too) the first error stays on the stack for the pump to raise. */
static void report_error(lua_State *L, sb_lua_runner *lr, const cbcall *c) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &ERROR_HANDLER) == LUA_TFUNCTION) {
    lua_insert(L, -2);
    lua_createtable(L, 0, 3);
    lua_pushstring(L, c->kind == CB_EXIT ? "on_exit" : c->stream == SB_OUT ? "on_stdout" : "on_stderr");
    lua_setfield(L, -2, "callback");
    set_int(L, "id", (lua_Integer)(intptr_t)c->p->ud);
    set_int(L, "pid", c->p->pid);
    if (lua_pcall(L, 2, 0, 0) == LUA_OK) return;
  } else {
    lua_pop(L, 1);
  }
  /* keep the first error where the pump will find it */
  if (lua_gettop(L) > lr->err_base + 1) lua_pop(L, 1);
}

static void run_protected(cbcall *c) {
  lua_State *L = c->lr->L;
  if (!L || !lua_checkstack(L, 10)) return;
  lua_pushcfunction(L, trampoline);
  lua_pushlightuserdata(L, c);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) report_error(L, c->lr, c);
}

static void hook_data(sb_proc *p, int stream, const char *buf, size_t len) {
  cbcall c = {p->runner->hooks.ud, p, CB_DATA, stream, buf, len};
  run_protected(&c);
}

static void hook_exit(sb_proc *p) {
  cbcall c = {p->runner->hooks.ud, p, CB_EXIT, 0, NULL, 0};
  run_protected(&c);
}

sb_lua_runner *sb_lua_runner_attach(lua_State *L, sb_sandbox *sb, sb_runner *r, int opts) {
  opts = lua_absindex(L, opts);
  sb_lua_runner *lr = sb_malloc(&sb->fs.mem, sizeof *lr);
  if (!lr) {
    r->ops->close(r);
    luaL_error(L, "not enough memory");
  }
  memset(lr, 0, sizeof *lr);
  lr->r = r;
  lr->procs_ref = lr->env_ref = LUA_NOREF;
  r->hooks.on_data = hook_data;
  r->hooks.on_exit = hook_exit;
  r->hooks.ud = lr;
  sb_part_add(L, sb, &runner_part, lr); /* from here the sandbox's release frees it */
  lr->timeout = sb_opt_num(L, opts, "exec_timeout");
  lr->allow_shell = sb_opt_bool(L, opts, "allow_shell");
  lr->max_background = (int)sb_opt_u64(L, opts, "max_background_processes");
  lua_newtable(L);
  lr->procs_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  if (lua_getfield(L, opts, "environment") != LUA_TTABLE) luaL_error(L, "internal: option 'environment' missing");
  lr->env_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return lr;
}

/* ---- the pump ------------------------------------------------------------ */

bool sb_lua_pump(lua_State *L, sb_lua_runner *lr, sb_proc *p, double timeout) {
  if (lr->r->running) luaL_error(L, "cannot run the sandbox's loop from inside one of its callbacks");
  lua_State *saved = lr->L;
  int saved_base = lr->err_base;
  lr->L = L;
  lr->err_base = lua_gettop(L);
  bool done = lr->r->ops->run(lr->r, p, timeout);
  lr->L = saved;
  int errs = lua_gettop(L) - lr->err_base;
  lr->err_base = saved_base;
  if (errs > 0) lua_error(L); /* the error left on the stack */
  return done;
}

/* Pump while waiting for p: its full queues no longer hold it back. A
 * callback error raised by the pump must not leave p counted as waited. */
static int wait_pump_k(lua_State *L) {
  sb_lua_pump(L, lua_touserdata(L, 1), lua_touserdata(L, 2), lua_tonumber(L, 3));
  return 0;
}

void sb_lua_wait_pump(lua_State *L, sb_lua_runner *lr, sb_proc *p, double timeout) {
  sb_proc_wait_begin(p);
  lua_pushcfunction(L, wait_pump_k);
  lua_pushlightuserdata(L, lr);
  lua_pushlightuserdata(L, p);
  lua_pushnumber(L, timeout);
  int rc = lua_pcall(L, 3, 0, 0);
  sb_proc_wait_end(p);
  if (rc != LUA_OK) lua_error(L);
}

/* ---- the state's error handler --------------------------------------------- */

int sb_lua_set_error_handler(lua_State *L) {
  if (!lua_isnoneornil(L, 1)) luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ERROR_HANDLER);
  return 0;
}

void sandbox_set_error_handler(lua_State *L, lua_CFunction handler) {
  if (handler) lua_pushcfunction(L, handler);
  else lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ERROR_HANDLER);
}
