/* Lua binding of command execution: core.spawn, process handles, and the
 * sandbox methods poll and processes.
 *
 * Lua is called from inside the libuv loop only through a pcall'd
 * trampoline: no error can longjmp through libuv. The first error a
 * callback raises is left on the Lua stack of the function pumping the loop
 * (no allocation needed) and re-raised when the loop returns. */
#include "lua/exec.h"
#include "base/clock.h"

#include "sandbox.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "confine/confine.h"
#include "exec/proc.h"
#include "fs/container.h"
#include "lua/net.h"

/* Running handles are anchored in a per-sandbox table {[id] = handle}
 * (registry ref procs_ref) so callbacks can reach them; a handle refers to
 * its sandbox only weakly, so an unreachable sandbox is still collected and
 * its __gc kills its processes. */
static const char WEAK_META = 0;

typedef struct exec_ctx {
  sb_exec ex;
  sb_confine conf;
  bool ready; /* loop created (lazily, at the first command) */
  bool closing; /* disposing: results are built, user callbacks not called */
  int procs_ref;
  sb_exec_config cfg;
  int max_background;
  lua_State *L;   /* the state pumping the loop right now */
  int err_base;   /* stack top when the pump started */
} exec_ctx;

typedef struct handle {
  sb_proc *p; /* NULL once released */
  unsigned id;
  pid_t pid;
  bool background;
} handle;

#define X(sb) ((exec_ctx *)(sb)->exec)

/* Registry key of the state's handler for errors raised by callbacks. */
static const char ERROR_HANDLER = 0;

/* ---- callbacks from the loop ------------------------------------------ */

enum { CB_DATA, CB_EXIT };

typedef struct cbcall {
  sb_proc *p;
  int kind, stream;
  const char *buf;
  size_t len;
} cbcall;

static const char *sig_name(int sig, char *buf, size_t n) {
  const char *a = sigabbrev_np(sig);
  if (a) snprintf(buf, n, "SIG%s", a);
  else snprintf(buf, n, "SIG%d", sig);
  return buf;
}

static void push_output(lua_State *L, sb_proc *p, int k) {
  sb_outbuf *o = &p->cap[k];
  uint64_t dropped = sb_outbuf_dropped(o);
  size_t kept = sb_outbuf_len(o), head = sb_outbuf_head_len(o);
  luaL_Buffer b;
  char *dst = luaL_buffinitsize(L, &b, kept + 64);
  sb_outbuf_copy(o, dst);
  if (dropped) { /* mark the cut between head and tail */
    char mark[64];
    int ml = snprintf(mark, sizeof mark, "\n[... %llu bytes dropped ...]\n", (unsigned long long)dropped);
    memmove(dst + head + (size_t)ml, dst + head, kept - head);
    memcpy(dst + head, mark, (size_t)ml);
    kept += (size_t)ml;
  }
  luaL_pushresultsize(&b, kept);
}

/* The result table of SPEC §5 from a finished process. */
static void push_result(lua_State *L, sb_proc *p) {
  lua_createtable(L, 0, 16);
  int st = p->status;
  char nm[32];
  if (st == -1) { /* the host reaped it (SIGCHLD ignored, or waitpid(-1)) */
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "status_lost");
    lua_pushinteger(L, -1);
  } else if (WIFEXITED(st)) {
    lua_pushinteger(L, WEXITSTATUS(st));
  } else {
    lua_pushinteger(L, 128 + WTERMSIG(st));
    lua_pushstring(L, sig_name(WTERMSIG(st), nm, sizeof nm));
    lua_setfield(L, -3, "signal");
  }
  lua_setfield(L, -2, "exit_code");
  lua_pushboolean(L, p->timed_out);
  lua_setfield(L, -2, "timed_out");
  if (p->kill_sig) {
    lua_pushstring(L, p->timed_out ? "timeout" : "kill");
    lua_setfield(L, -2, "killed_by");
  }
  if (p->oom) { /* the memory limit's OOM killer struck */
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "oom");
  }
  if (p->pids_hit) { /* a fork was refused by the pids limit */
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "pids_limit_hit");
  }
  push_output(L, p, SB_OUT);
  lua_setfield(L, -2, "stdout");
  push_output(L, p, SB_ERR);
  lua_setfield(L, -2, "stderr");
  uint64_t d0 = sb_outbuf_dropped(&p->cap[0]), d1 = sb_outbuf_dropped(&p->cap[1]);
  lua_pushboolean(L, d0 + d1 > 0);
  lua_setfield(L, -2, "truncated");
  lua_pushinteger(L, (lua_Integer)(d0 + d1));
  lua_setfield(L, -2, "dropped_bytes");
  lua_pushinteger(L, (lua_Integer)d0);
  lua_setfield(L, -2, "stdout_dropped");
  lua_pushinteger(L, (lua_Integer)d1);
  lua_setfield(L, -2, "stderr_dropped");
  lua_pushboolean(L, p->output_incomplete);
  lua_setfield(L, -2, "output_incomplete");
  if (p->background) {
    lua_pushinteger(L, (lua_Integer)(p->qdropped[0] + p->qdropped[1]));
    lua_setfield(L, -2, "read_dropped");
  }
  lua_pushnumber(L, p->t_end - p->t0);
  lua_setfield(L, -2, "duration");
  lua_pushinteger(L, p->pid);
  lua_setfield(L, -2, "pid");
}

static int trampoline(lua_State *L) {
  cbcall *c = lua_touserdata(L, 1);
  sb_proc *p = c->p;
  exec_ctx *x = p->ex->hook_ud;
  lua_rawgeti(L, LUA_REGISTRYINDEX, x->procs_ref);
  int procs = lua_gettop(L);
  lua_Integer id = (lua_Integer)(intptr_t)p->ud;
  if (lua_rawgeti(L, procs, id) != LUA_TUSERDATA) return 0;
  lua_getiuservalue(L, -1, 2); /* the handle's table: callbacks, result */
  int t = lua_gettop(L);
  if (c->kind == CB_DATA) {
    if (!x->closing &&
        lua_getfield(L, t, c->stream == SB_OUT ? "on_stdout" : "on_stderr") == LUA_TFUNCTION) {
      lua_pushlstring(L, c->buf, c->len);
      lua_call(L, 1, 0);
    }
    return 0;
  }
  push_result(L, p);
  lua_getfield(L, t, "gate"); /* an exposed port closes with its command */
  if (sb_lua_net_gate_finish(L, -1)) {
    lua_pushliteral(L, "port_ttl");
    lua_setfield(L, -3, "killed_by");
  }
  lua_pop(L, 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, t, "result");
  lua_pushnil(L);
  lua_rawseti(L, procs, id); /* finished: no longer anchored */
  if (!x->closing && lua_getfield(L, t, "on_exit") == LUA_TFUNCTION) {
    lua_insert(L, -2);
    lua_call(L, 1, 0);
  }
  return 0;
}

/* A callback's error goes to the state's error handler when the host set
 * one: handler(err, {callback=, id=, pid=}). Otherwise (or when the handler
 * fails too) the first error stays on the stack for the pump to raise. */
static void report_error(lua_State *L, exec_ctx *x, const cbcall *c) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &ERROR_HANDLER) == LUA_TFUNCTION) {
    lua_insert(L, -2);
    lua_createtable(L, 0, 3);
    lua_pushstring(L, c->kind == CB_EXIT ? "on_exit" : c->stream == SB_OUT ? "on_stdout" : "on_stderr");
    lua_setfield(L, -2, "callback");
    lua_pushinteger(L, (lua_Integer)(intptr_t)c->p->ud);
    lua_setfield(L, -2, "id");
    lua_pushinteger(L, c->p->pid);
    lua_setfield(L, -2, "pid");
    if (lua_pcall(L, 2, 0, 0) == LUA_OK) return;
  } else {
    lua_pop(L, 1);
  }
  /* keep the first error where the pump will find it */
  if (lua_gettop(L) > x->err_base + 1) lua_pop(L, 1);
}

static void run_protected(exec_ctx *x, cbcall *c) {
  lua_State *L = x->L;
  if (!L || !lua_checkstack(L, 10)) return;
  lua_pushcfunction(L, trampoline);
  lua_pushlightuserdata(L, c);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) report_error(L, x, c);
}

static void hook_data(sb_proc *p, int stream, const char *buf, size_t len) {
  exec_ctx *x = p->ex->hook_ud;
  cbcall c = {p, CB_DATA, stream, buf, len};
  run_protected(x, &c);
}

static void hook_exit(sb_proc *p) {
  exec_ctx *x = p->ex->hook_ud;
  cbcall c = {p, CB_EXIT, 0, NULL, 0};
  run_protected(x, &c);
}

/* Pump the loop from a Lua C function; raises the first callback error. */
static bool pump(lua_State *L, exec_ctx *x, sb_proc *p, double timeout) {
  if (x->ex.running) luaL_error(L, "cannot run the sandbox's loop from inside one of its callbacks");
  lua_State *saved = x->L;
  int saved_base = x->err_base;
  x->L = L;
  x->err_base = lua_gettop(L);
  bool done = sb_exec_run(&x->ex, p, timeout);
  x->L = saved;
  int errs = lua_gettop(L) - x->err_base;
  x->err_base = saved_base;
  if (errs > 0) lua_error(L); /* the error left on the stack */
  return done;
}

/* Pump while waiting for p: its full queues no longer hold it back. A
 * callback error raised by the pump must not leave p counted as waited. */
static int wait_pump_k(lua_State *L) {
  exec_ctx *x = lua_touserdata(L, 1);
  sb_proc *p = lua_touserdata(L, 2);
  pump(L, x, p, lua_tonumber(L, 3));
  return 0;
}

static void wait_pump(lua_State *L, exec_ctx *x, sb_proc *p, double timeout) {
  sb_proc_wait_begin(p);
  lua_pushcfunction(L, wait_pump_k);
  lua_pushlightuserdata(L, x);
  lua_pushlightuserdata(L, p);
  lua_pushnumber(L, timeout);
  int rc = lua_pcall(L, 3, 0, 0);
  sb_proc_wait_end(p);
  if (rc != LUA_OK) lua_error(L);
}

/* ---- handles ---------------------------------------------------------- */

static handle *check_handle(lua_State *L, int idx) {
  return luaL_checkudata(L, idx, "sandbox.Process");
}

static exec_ctx *handle_ctx(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);
  lua_rawgeti(L, -1, 1); /* weak: nil once the sandbox is collected */
  sb_sandbox *sb = lua_isnil(L, -1) ? NULL : sb_lua_check(L, -1);
  lua_pop(L, 2);
  if (!sb || sb->closed || !sb->exec) return NULL;
  return X(sb);
}

static sb_proc *live_proc(lua_State *L, handle *h) {
  if (!h->p || !h->p->ex) luaL_error(L, "attempt to use a process of a disposed sandbox");
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
  exec_ctx *x = handle_ctx(L, 1);
  sb_proc *p = live_proc(L, h);
  if (!x) luaL_error(L, "attempt to use a process of a disposed sandbox");
  wait_pump(L, x, p, timeout);
  if (h_result(L, 1) == LUA_TTABLE) return 1;
  sb_err e;
  sb_fail(&e, SB_EAGAIN, "the process is still running");
  return sb_push_err(L, &e, NULL, 0);
}

static int h_running(lua_State *L) {
  handle *h = check_handle(L, 1);
  lua_pushboolean(L, h->p && h->p->ex && !h->p->finished);
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
  exec_ctx *x = p->ex ? handle_ctx(L, 1) : NULL;
  double deadline = sb_now() + timeout;
  for (bool first = true;; first = false) {
    const char *d;
    size_t n;
    if (sb_proc_pop(p, k, &d, &n)) {
      lua_pushlstring(L, d, n);
      return 1;
    }
    if (sb_proc_stream_done(p, k) || !p->ex || !x) { /* nothing more will come */
      lua_pushnil(L);
      return 1;
    }
    double left = deadline - sb_now();
    if (!first && timeout >= 0 && left <= 0) {
      lua_pushliteral(L, "");
      return 1;
    }
    pump(L, x, NULL, timeout < 0 ? -1 : left > 0 ? left : 0);
  }
}

static int h_write(lua_State *L) {
  handle *h = check_handle(L, 1);
  size_t n;
  const char *d = luaL_checklstring(L, 2, &n);
  sb_proc *p = live_proc(L, h);
  int r = sb_proc_write(p, d, n);
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
  if (h->p && h->p->ex) sb_proc_close_stdin(h->p);
  return 0;
}

static int parse_signal(lua_State *L, int idx) {
  if (lua_isinteger(L, idx)) return (int)lua_tointeger(L, idx);
  const char *s = luaL_optstring(L, idx, "TERM");
  if (strncmp(s, "SIG", 3) == 0) s += 3;
  for (int sig = 1; sig < NSIG; sig++) {
    const char *a = sigabbrev_np(sig);
    if (a && strcmp(a, s) == 0) return sig;
  }
  return luaL_argerror(L, idx, "unknown signal name");
}

/* h:kill([sig]): the whole tree; TERM (default) escalates to KILL. */
static int h_kill(lua_State *L) {
  handle *h = check_handle(L, 1);
  int sig = parse_signal(L, 2);
  if (h->p && h->p->ex && !h->p->finished) {
    sb_proc_kill(h->p, sig);
    exec_ctx *x = handle_ctx(L, 1);
    if (x) pump(L, x, NULL, 0);
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int h_gc(lua_State *L) {
  handle *h = lua_touserdata(L, 1);
  if (h->p) {
    sb_proc_release(h->p);
    h->p = NULL;
  }
  return 0;
}

static int h_index(lua_State *L) {
  handle *h = check_handle(L, 1);
  const char *k = luaL_checkstring(L, 2);
  if (strcmp(k, "pid") == 0) lua_pushinteger(L, h->pid);
  else if (strcmp(k, "id") == 0) lua_pushinteger(L, h->id);
  else if (strcmp(k, "background") == 0) lua_pushboolean(L, h->background);
  else if (strcmp(k, "read_dropped") == 0) /* output that went past h:read (see exec_proc.h) */
    lua_pushinteger(L, h->p ? (lua_Integer)(h->p->qdropped[0] + h->p->qdropped[1]) : 0);
  else if (!strcmp(k, "url") || !strcmp(k, "port") || !strcmp(k, "child_port") || !strcmp(k, "token")) {
    lua_getiuservalue(L, 1, 2); /* an exposed port's */
    lua_getfield(L, -1, k);
  } else {
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, k);
  }
  return 1;
}

static int h_tostring(lua_State *L) {
  handle *h = check_handle(L, 1);
  lua_pushfstring(L, "sandbox.Process %d (pid %d, %s)", (int)h->id, (int)h->pid,
                  h->p && h->p->ex && !h->p->finished ? "running" : "finished");
  return 1;
}

static void push_handle_meta(lua_State *L) {
  if (luaL_newmetatable(L, "sandbox.Process")) {
    static const luaL_Reg methods[] = {
        {"wait", h_wait},   {"read", h_read},  {"write", h_write}, {"close_stdin", h_close_stdin},
        {"kill", h_kill},   {"running", h_running}, {NULL, NULL}};
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

/* ---- core.spawn ----------------------------------------------------------- */

/* A NULL-terminated char* array from the array of strings at idx, in one
 * allocation kept in a userdata (collected with the call). */
static char **string_array(lua_State *L, int idx, const char *what) {
  lua_Integer n = lua_istable(L, idx) ? luaL_len(L, idx) : 0;
  char **v = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof *v, 0);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_rawgeti(L, idx, i) != LUA_TSTRING) luaL_error(L, "%s[%d] must be a string", what, (int)i);
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    if (strlen(s) != len) luaL_error(L, "%s[%d] contains a NUL byte", what, (int)i);
    v[i - 1] = (char *)s; /* anchored by the table at idx */
    lua_pop(L, 1);
  }
  v[n] = NULL;
  return v;
}

static exec_ctx *ready_ctx(lua_State *L, sb_sandbox *sb, sb_err *e) {
  exec_ctx *x = X(sb);
  if (!x) {
    sb_fail(e, SB_ENOTSUP, "this sandbox cannot run commands (exec = false)");
    return NULL;
  }
  if (x->conf.refuse) {
    sb_failf(e, SB_ENOTSUP, "%s", x->conf.why);
    return NULL;
  }
  if (!x->ready) {
    if (sb_exec_init(&x->ex, e) != 0) return NULL;
    x->ex.hooks.on_data = hook_data;
    x->ex.hooks.on_exit = hook_exit;
    x->ex.hook_ud = x;
    x->ex.no_pidfd = getenv("SANDBOX_NO_PIDFD") != NULL;
    x->ready = true;
  }
  (void)L;
  return x;
}

/* core.spawn(sb, spec) -> handle | nil, msg, code. spec: file, argv, env,
 * path, cwd, stdin, background, keep_stdin, timeout, on_stdout, on_stderr,
 * on_exit. Checked by lua/sandbox/exec.lua. */
static int l_spawn(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  sb_op op;
  op.name = "exec";
  op.parsed = op.show_raw = op.no_path = false;
  exec_ctx *x = ready_ctx(L, sb, &op.e);
  if (!x) return sb_push_err(L, &op.e, NULL, 0);
  if (x->ex.running) luaL_error(L, "cannot start a command from inside a sandbox callback");

  lua_getfield(L, 2, "background");
  bool background = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (background && sb_exec_live(&x->ex, true) >= x->max_background) {
    sb_failf(&op.e, SB_EBUSY, "%d background processes are running (max_background_processes); "
             "wait for or kill one first", x->max_background);
    return sb_push_err(L, &op.e, NULL, 0);
  }

  lua_getfield(L, 2, "argv");
  int argv_idx = lua_gettop(L);
  char **argv = string_array(L, argv_idx, "argv");
  if (!argv[0]) luaL_error(L, "argv must not be empty");
  lua_getfield(L, 2, "env");
  int env_idx = lua_gettop(L);
  char **envp = string_array(L, env_idx, "env");

  sb_exec_start st;
  memset(&st, 0, sizeof st);
  st.background = background;
  /* a stream with a callback is delivered there; the others are queued */
  lua_getfield(L, 2, "on_stdout");
  lua_getfield(L, 2, "on_stderr");
  st.queue[SB_OUT] = !lua_isfunction(L, -2);
  st.queue[SB_ERR] = !lua_isfunction(L, -1);
  lua_pop(L, 2);
  st.cgroup = x->ex.cg.dirfd >= 0;
  st.spawn.argv = argv;
  st.spawn.envp = envp;
  st.spawn.file = argv[0];
  st.spawn.steps = &x->conf.steps;
  st.spawn.cwd_fd = -1;
  if (lua_getfield(L, 2, "path") == LUA_TSTRING) st.spawn.path = lua_tostring(L, -1);
  lua_pop(L, 1); /* the string stays anchored in spec */
  if (lua_getfield(L, 2, "stdin") == LUA_TSTRING) st.stdin_data = lua_tolstring(L, -1, &st.stdin_len);
  lua_pop(L, 1);
  lua_getfield(L, 2, "keep_stdin");
  st.keep_stdin = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, 2, "timeout");
  st.timeout = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
  lua_pop(L, 1);

  /* the working directory: an agent path, resolved beneath the root; the
   * child starts in that fd, never re-resolved by name */
  const char *cwd = ".";
  size_t cwdlen = 1;
  if (lua_getfield(L, 2, "cwd") == LUA_TSTRING) cwd = lua_tolstring(L, -1, &cwdlen);
  lua_pop(L, 1);
  op.raw = cwd;
  op.rawlen = cwdlen;
  if (sb_path_parse(&op.p, cwd, cwdlen, sb->cwd, sb->cwdlen, &op.e) != SB_OK ||
      sb_lua_guard(sb, &op, &op.p, SB_ACC_LIST, SB_KIND_DIR) != SB_OK)
    return sb_lua_fail(L, sb, &op);
  op.parsed = true;
  int cwdfd = sb_rootfs_open_dir(sb, &op.p, &op.e);
  if (cwdfd < 0) return sb_lua_fail(L, sb, &op);
  st.spawn.cwd_fd = cwdfd;

  /* the handle exists before the process, so a memory error leaks nothing */
  handle *h = lua_newuserdatauv(L, sizeof *h, 2);
  memset(h, 0, sizeof *h);
  int hidx = lua_gettop(L);
  push_handle_meta(L);
  lua_setmetatable(L, hidx);
  lua_createtable(L, 1, 0); /* {sandbox}, weak */
  lua_pushvalue(L, 1);
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
  lua_createtable(L, 0, 8);
  for (int i = 0; i < 8; i++) {
    static const char *const cbs[] = {"on_stdout", "on_stderr", "on_exit", "gate",
                                      "url", "port", "child_port", "token"};
    lua_getfield(L, 2, cbs[i]);
    lua_setfield(L, -2, cbs[i]);
  }
  lua_setiuservalue(L, hidx, 2);
  lua_rawgeti(L, LUA_REGISTRYINDEX, x->procs_ref);
  int procs = lua_gettop(L);
  lua_Integer id = (lua_Integer)x->ex.next_id + 1; /* the id sb_exec_spawn assigns */
  lua_pushvalue(L, hidx);
  lua_rawseti(L, procs, id); /* anchored while running (may raise: nothing to leak yet) */

  sb_proc *p = sb_exec_spawn(&x->ex, &st, &op.e);
  close(cwdfd);
  if (!p) {
    lua_pushnil(L);
    lua_rawseti(L, procs, id);
    op.no_path = true; /* about the command, not the cwd */
    return sb_lua_fail(L, sb, &op);
  }
  p->ud = (void *)(intptr_t)id;
  h->p = p;
  h->id = p->id;
  h->pid = p->pid;
  h->background = background;
  if (lua_getfield(L, 2, "gate") == LUA_TUSERDATA &&
      sb_lua_net_gate_start(L, lua_gettop(L), p->pid, &op.e) != 0) {
    sb_proc_kill(p, SIGKILL); /* no port, no command: it ends as killed */
    op.no_path = true;
    return sb_lua_fail(L, sb, &op);
  }
  lua_pop(L, 1);
  sb_rootfs_mark_dirty(sb); /* the command may change the tree */
  lua_pushvalue(L, hidx);
  sb_lua_audit_ok(L, sb, &op, -1);
  return 1;
}

/* ---- sandbox methods ---------------------------------------------------- */

int sb_lua_exec_poll(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  double timeout = luaL_optnumber(L, 2, 0);
  exec_ctx *x = X(sb);
  if (!x || !x->ready) {
    lua_pushinteger(L, 0);
    return 1;
  }
  pump(L, x, NULL, timeout);
  lua_pushinteger(L, sb_exec_live(&x->ex, false));
  return 1;
}

/* sb:backend_fd(): for a host's poller; creates the loop if need be. */
int sb_lua_exec_backend_fd(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_err e;
  exec_ctx *x = ready_ctx(L, sb, &e);
  if (!x) return sb_push_err(L, &e, NULL, 0);
  lua_pushinteger(L, sb_exec_backend_fd(&x->ex));
  return 1;
}

/* sb:backend_timeout(): ms until the loop needs a turn (-1: only when the fd
 * turns readable); -1 when nothing runs. */
int sb_lua_exec_backend_timeout(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  exec_ctx *x = X(sb);
  lua_pushinteger(L, x && x->ready ? sb_exec_backend_timeout(&x->ex) : -1);
  return 1;
}

/* sandbox.set_error_handler(fn | nil) */
static int l_set_error_handler(lua_State *L) {
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

int sb_lua_exec_processes(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  exec_ctx *x = X(sb);
  lua_newtable(L);
  if (!x || !x->ready) return 1;
  lua_rawgeti(L, LUA_REGISTRYINDEX, x->procs_ref);
  lua_Integer n = 0;
  for (sb_proc *p = x->ex.procs; p; p = p->next) {
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
  return 1;
}

const sb_netns *sb_lua_exec_netns(sb_sandbox *sb) {
  exec_ctx *x = X(sb);
  return x && !x->conf.refuse && x->conf.netns.net >= 0 ? &x->conf.netns : NULL;
}

double sb_lua_exec_grace(sb_sandbox *sb) {
  exec_ctx *x = X(sb);
  return x ? x->cfg.grace : 2;
}

void sb_lua_exec_attach(lua_State *L, sb_sandbox *sb, const sb_lua_exec_opts *o) {
  exec_ctx *x = sb_malloc(&sb->mem, sizeof *x);
  if (!x) luaL_error(L, "not enough memory");
  memset(x, 0, sizeof *x);
  x->cfg.grace = o->grace;
  x->cfg.drain = o->drain;
  x->cfg.max_output = o->max_output;
  x->max_background = o->max_background;
  x->L = NULL;
  x->procs_ref = LUA_NOREF;
  sb_exec_prepare(&x->ex, &sb->mem, &x->cfg);
  sb_confine_init(&x->conf);
  sb->exec = x; /* from here sb's release frees x */
  lua_newtable(L);
  x->procs_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

int sb_lua_exec_confine(sb_sandbox *sb, const sb_confine_opts *co, sb_err *e) {
  exec_ctx *x = X(sb);
  if (sb_confine_setup(&x->conf, co, &x->ex) == 0) return 0;
  sb_failf(e, SB_ENOTSUP, "%s", x->conf.why); /* a copy: x is freed before it is shown */
  return -1;
}

static void set_str(lua_State *L, const char *k, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

void sb_lua_exec_push_confinement(lua_State *L, sb_sandbox *sb, bool confine) {
  exec_ctx *x = X(sb);
  sb_confine *c = &x->conf;
  lua_createtable(L, 0, 12);
  lua_pushboolean(L, confine && !c->refuse);
  lua_setfield(L, -2, "enabled");
  if (c->refuse) set_str(L, "refused", c->why);
  lua_pushboolean(L, c->steps.no_new_privs);
  lua_setfield(L, -2, "no_new_privs");
  if (c->steps.landlock_ruleset_fd >= 0) {
    lua_pushinteger(L, c->landlock_abi);
    lua_setfield(L, -2, "landlock_abi");
    set_str(L, "filesystem", "landlock: read+execute system directories, read+write the root");
    set_str(L, "proc", "hidden");
    set_str(L, "signals", c->landlock_abi >= 6 ? "scoped to the sandbox" : "not scoped (Landlock ABI < 6)");
    set_str(L, "tmpdir", c->tmpdir);
  } else {
    set_str(L, "filesystem", "unconfined");
  }
  set_str(L, "network", c->network);
  set_str(L, "tree_kill", c->tree_kill);
  lua_createtable(L, 0, 4);
  set_str(L, "memory", c->limit_via[SB_LIM_MEMORY]);
  set_str(L, "pids", c->limit_via[SB_LIM_PIDS]);
  set_str(L, "cpu", c->limit_via[SB_LIM_CPU]);
  set_str(L, "file_size", c->file_size_via);
  lua_setfield(L, -2, "limits");
  if (c->steps.drop_user) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, c->steps.uid);
    lua_setfield(L, -2, "uid");
    lua_pushinteger(L, c->steps.gid);
    lua_setfield(L, -2, "gid");
    lua_setfield(L, -2, "user");
  }
}

void sb_lua_exec_close(lua_State *L, sb_sandbox *sb) {
  exec_ctx *x = X(sb);
  if (!x) return;
  x->L = L;
  x->closing = true;
  x->err_base = lua_gettop(L);
  sb_exec_close(&x->ex); /* processes, loop, cgroups */
  lua_settop(L, x->err_base);
  x->L = NULL;
  sb_confine_release(&x->conf);
  luaL_unref(L, LUA_REGISTRYINDEX, x->procs_ref);
  sb_free(&sb->mem, x, sizeof *x);
  sb->exec = NULL;
}

void sb_lua_exec_open(lua_State *L) {
  lua_pushcfunction(L, l_spawn);
  lua_setfield(L, -2, "spawn");
  lua_pushcfunction(L, l_set_error_handler);
  lua_setfield(L, -2, "set_error_handler");
}
