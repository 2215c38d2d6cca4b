#include "lua/exec.h"

#include <stdlib.h>
#include <string.h>

#include "exec/local.h"
#include "lua/confine.h"
#include "lua/options.h"
#include "lua/process.h"
#include "lua/runner.h"

int sb_lua_exec_attach(lua_State *L, sb_sandbox *sb, int ud, int opts, sb_err *e) {
  ud = lua_absindex(L, ud);
  sb_confine *c = sb_lua_confine(sb);
  sb_local_config cfg = {
      .grace = sb_opt_num(L, opts, "kill_grace"),
      .drain = 2, /* seconds a descendant holding the pipes may delay the end */
      .max_output = (size_t)sb_opt_u64(L, opts, "max_output_bytes"),
      .fs = &sb->fs,
      .steps = c ? &c->steps : NULL,
      .limits = c ? &c->limits : NULL,
      .no_pidfd = getenv("SANDBOX_NO_PIDFD") != NULL, /* test switch */
      .no_close_range = getenv("SANDBOX_NO_CLOSE_RANGE") != NULL, /* test switch */
      .no_zygote = getenv("SANDBOX_NO_ZYGOTE") != NULL, /* test switch */
      .no_clone3 = getenv("SANDBOX_NO_CLONE3") != NULL, /* test switch */
  };
  sb_runner *r = sb_local_runner(&sb->fs.mem, &cfg, e);
  if (!r) return -1;
  sb_lua_runner_attach(L, sb, r, opts);
  lua_pushboolean(L, 1);
  sb_lua_setfield(L, ud, "has_exec");
  return 0;
}

double sb_lua_exec_grace(const sb_sandbox *sb) {
  sb_lua_runner *lr = sb_lua_runner_of(sb);
  return lr ? lr->r->grace : 0;
}

/* The runner, or NULL with e when commands cannot run (none, or refused). */
static sb_lua_runner *ready(sb_sandbox *sb, sb_err *e) {
  sb_lua_runner *lr = sb_lua_runner_of(sb);
  if (!lr) {
    sb_fail(e, SB_ENOTSUP, "this sandbox cannot run commands (it is virtual, or exec = false)");
    return NULL;
  }
  sb_lua_confine_ready(sb); /* a ContainerSandbox's namespaces: made for its first command */
  sb_confine *c = sb_lua_confine(sb);
  if (c && c->refuse) {
    sb_failf(e, SB_ENOTSUP, "%s", c->why);
    return NULL;
  }
  if (lr->refused) {
    sb_failf(e, SB_ENOTSUP, "%s", lr->refused);
    return NULL;
  }
  return lr;
}

/* A NULL-terminated char* array from the array of strings at idx, in one
 * allocation kept in a userdata (collected with the call). */
static char **string_array(lua_State *L, int idx, const char *what) {
  lua_Integer n = lua_istable(L, idx) ? (lua_Integer)lua_rawlen(L, idx) : 0;
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

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The child's environment: the sandbox's base (normalised options), its
 * private TMPDIR, then the call's extra variables; as a sorted list of
 * "NAME=value" (anchored in a table left on the stack) and its PATH. */
static char **environment(lua_State *L, sb_sandbox *sb, sb_lua_runner *lr, int extra, const char **path) {
  lua_newtable(L);
  int env = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, lr->env_ref);
  for (int src = 0; src < 2; src++) {
    if (lua_istable(L, -1)) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, env);
      }
    }
    lua_pop(L, 1);
    if (src == 0) {
      lua_getfield(L, env, "HOME");
      if (lua_isnil(L, -1)) { /* the root, unless the options set one */
        lua_pushlstring(L, sb->cwd, sb->cwdlen);
        lua_setfield(L, env, "HOME");
      }
      lua_pop(L, 1);
      sb_confine *c = sb_lua_confine(sb);
      if (c && c->tmpdir[0]) { /* /tmp itself is out of reach */
        lua_pushstring(L, c->tmpdir);
        lua_setfield(L, env, "TMPDIR");
      }
      lua_pushvalue(L, extra);
    }
  }
  lua_newtable(L);
  int list = lua_gettop(L);
  lua_Integer n = 0;
  lua_pushnil(L);
  while (lua_next(L, env)) {
    lua_pushvalue(L, -2);
    lua_pushliteral(L, "=");
    lua_pushvalue(L, -3);
    lua_concat(L, 3);
    lua_rawseti(L, list, ++n);
    lua_pop(L, 1);
  }
  char **v = string_array(L, list, "env");
  qsort(v, (size_t)n, sizeof *v, cmp_str);
  lua_getfield(L, env, "PATH");
  *path = lua_isstring(L, -1) ? lua_tostring(L, -1) : ""; /* anchored in env */
  lua_pop(L, 1);
  return v;
}

/* core.spawn(sb, spec) -> handle | nil, msg, code. spec: argv, env (extra
 * variables), cwd, stdin, background, keep_stdin, inherit_stdio, timeout, on_stdout,
 * on_stderr, on_exit, on_end, fields. Checked by lua/sandbox/exec.lua. */
static int l_spawn(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  SB_OP(op, "exec");
  op->unaudited = true; /* exec.lua audits the start or the refusal, with argv */
  sb_lua_runner *lr = ready(sb, &op->e);
  if (!lr) return sb_push_err(L, &op->e, NULL, 0);
  if (lr->r->running) luaL_error(L, "cannot start a command from inside a sandbox callback");
  /* the view follows the rules: paths appeared or were replaced since */
  sb_confine *conf = sb_lua_confine(sb);
  if (conf && sb_confine_refresh(conf) != 0) {
    sb_failf(&op->e, SB_ENOTSUP, "%s", conf->why);
    return sb_push_err(L, &op->e, NULL, 0);
  }
  sb_cmd cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.background = sb_lua_opt_bool(L, 2, "background", false);
  if (cmd.background && sb_runner_live(lr->r, true) >= lr->max_background) {
    sb_failf(&op->e, SB_EBUSY,
             "%d background processes are running (max_background_processes); "
             "wait for or kill one first",
             lr->max_background);
    return sb_push_err(L, &op->e, NULL, 0);
  }
  lua_getfield(L, 2, "argv");
  cmd.argv = string_array(L, lua_gettop(L), "argv");
  if (!cmd.argv[0]) luaL_error(L, "argv must not be empty");
  lua_getfield(L, 2, "env");
  cmd.envp = environment(L, sb, lr, lua_gettop(L), &cmd.path);
  /* a stream with a callback is delivered there; the others are queued */
  lua_getfield(L, 2, "on_stdout");
  lua_getfield(L, 2, "on_stderr");
  cmd.queue[SB_OUT] = !lua_isfunction(L, -2);
  cmd.queue[SB_ERR] = !lua_isfunction(L, -1);
  lua_pop(L, 2);
  size_t inlen = 0;
  cmd.stdin_data = sb_lua_opt_str(L, 2, "stdin", &inlen);
  cmd.stdin_len = inlen;
  cmd.keep_stdin = sb_lua_opt_bool(L, 2, "keep_stdin", false);
  cmd.start_later = sb_lua_opt_bool(L, 2, "start_later", false);
  cmd.inherit_stdio = sb_lua_opt_bool(L, 2, "inherit_stdio", false);
  lua_getfield(L, 2, "timeout");
  cmd.timeout = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : cmd.background ? 0 : lr->timeout;
  lua_pop(L, 1);

  /* the working directory: an agent path, resolved beneath the root by the
   * backend; the child starts in that fd, never re-resolved by name */
  size_t cwdlen = 1;
  const char *cwd = sb_lua_opt_str(L, 2, "cwd", &cwdlen);
  if (!cwd) cwd = ".", cwdlen = 1;
  op->raw = cwd;
  op->rawlen = cwdlen;
  if (sb_path_parse(&op->p, cwd, cwdlen, sb->cwd, sb->cwdlen, &op->e) != SB_OK ||
      sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_DIR) != SB_OK)
    return sb_lua_fail(L, sb, op);
  op->parsed = true;
  cmd.cwd = &op->p;

  int hidx = sb_lua_handle_new(L, lr, 1, 2);
  sb_proc *p = lr->r->ops->start(lr->r, &cmd, &op->e);
  if (!p) {
    sb_lua_handle_drop(L, lr);
    op->no_path = !cmd.cwd_failed; /* about the command, unless its cwd */
    return sb_lua_fail(L, sb, op);
  }
  sb_lua_handle_bind(L, hidx, p);
  lua_pushvalue(L, hidx); /* its start is audited by the Lua layer, with argv (exec.lua) */
  return 1;
}

/* core.exec_config(sb): {allow_shell =, timeout =} or nil (no commands). */
static int l_exec_config(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_runner *lr = sb_lua_runner_of(sb);
  if (!lr) return 0;
  lua_createtable(L, 0, 2);
  lua_pushboolean(L, lr->allow_shell);
  lua_setfield(L, -2, "allow_shell");
  lua_pushnumber(L, lr->timeout);
  lua_setfield(L, -2, "timeout");
  return 1;
}

/* ---- sandbox methods ---------------------------------------------------- */

static int m_poll(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  double timeout = luaL_optnumber(L, 2, 0);
  sb_lua_runner *lr = sb_lua_runner_of(sb);
  if (!lr) {
    lua_pushinteger(L, 0);
    return 1;
  }
  sb_lua_pump(L, lr, NULL, timeout);
  lua_pushinteger(L, sb_runner_live(lr->r, false));
  return 1;
}

/* sb:backend_fd(): for a host's poller; creates the loop if need be. */
static int m_backend_fd(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_err e;
  sb_lua_runner *lr = ready(sb, &e);
  if (!lr) return sb_push_err(L, &e, NULL, 0);
  int fd = lr->r->ops->backend_fd(lr->r);
  if (fd < 0) {
    sb_fail(&e, SB_EIO, "cannot create the sandbox's event loop");
    return sb_push_err(L, &e, NULL, 0);
  }
  lua_pushinteger(L, fd);
  return 1;
}

/* sb:backend_timeout(): ms until the loop needs a turn (-1: only when the fd
 * turns readable); -1 when nothing runs. */
static int m_backend_timeout(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_runner *lr = sb_lua_runner_of(sb);
  lua_pushinteger(L, lr ? lr->r->ops->backend_timeout(lr->r) : -1);
  return 1;
}

static int m_processes(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_push_processes(L, sb_lua_runner_of(sb));
  return 1;
}

void sb_lua_exec_methods(lua_State *L) {
  static const luaL_Reg fns[] = {{"poll", m_poll},
                                 {"processes", m_processes},
                                 {"backend_fd", m_backend_fd},
                                 {"backend_timeout", m_backend_timeout},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}

void sb_lua_exec_open(lua_State *L) {
  static const luaL_Reg fns[] = {{"spawn", l_spawn},
                                 {"exec_config", l_exec_config},
                                 {"set_error_handler", sb_lua_set_error_handler},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
