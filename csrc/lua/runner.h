/* The command part of a sandbox as the Lua binding holds it: the runner
 * (exec/runner.h), its settings, result tables, and the pump that runs the
 * loop from a Lua call (lua/runner.c). Handles are lua/process.c.
 *
 * Lua is called from inside the loop only through a pcall'd trampoline: no
 * error can longjmp through the runner. The first error a callback raises
 * is left on the Lua stack of the function pumping the loop (no allocation
 * needed) and re-raised when the loop returns, or passed to the state's
 * error handler (sandbox.set_error_handler). */
#ifndef SB_LUA_RUNNER_H
#define SB_LUA_RUNNER_H

#include "exec/runner.h"
#include "lua/object.h"

/* The command part of a sandbox: its runner and settings. */
typedef struct sb_lua_runner {
  sb_runner *r;
  bool closing; /* disposing: results are built, user callbacks not called */
  int procs_ref; /* registry ref of {[id] = handle}: anchors running handles */
  lua_State *L; /* the state pumping the loop right now */
  int err_base; /* its stack top when the pump started */
  /* the normalised exec options */
  double timeout; /* exec_timeout: default of a foreground command */
  bool allow_shell;
  int max_background;
  int env_ref; /* registry ref of the base environment {NAME = value} */
  const char *refused; /* commands fail closed with this reason (a policy nothing binds them to), or NULL */
} sb_lua_runner;

/* Make r the sandbox's runner (a part: released with the sandbox). The
 * settings are read from the normalised options at opts. Raises on OOM. */
sb_lua_runner *sb_lua_runner_attach(lua_State *L, sb_sandbox *sb, sb_runner *r, int opts);
/* The sandbox's runner, or NULL (no commands). */
sb_lua_runner *sb_lua_runner_of(const sb_sandbox *sb);

/* Pump the loop from a Lua C function; raises the first callback error. */
bool sb_lua_pump(lua_State *L, sb_lua_runner *lr, sb_proc *p, double timeout);

/* Pump while waiting for p: its full queues no longer hold it back. */
void sb_lua_wait_pump(lua_State *L, sb_lua_runner *lr, sb_proc *p, double timeout);

/* sandbox.set_error_handler and its C form (sandbox.h). */
int sb_lua_set_error_handler(lua_State *L);

#endif
