/* Command execution for Lua (SPEC §5): attaches a runner to a sandbox, and
 * the sandbox methods that drive it. */
#ifndef SB_LUA_EXEC_H
#define SB_LUA_EXEC_H

#include "confine/confine.h"
#include "lua/object.h"

typedef struct sb_lua_exec_opts {
  double grace, drain;
  size_t max_output;
  int max_background;
} sb_lua_exec_opts;

/* Give sb the ability to run commands (sb->exec). Raises on OOM. */
void sb_lua_exec_attach(lua_State *L, sb_sandbox *sb, const sb_lua_exec_opts *o);
/* Decide the confinement of every command (after attach). -1: a requested
 * limit cannot be enforced, the sandbox must not be made (e set). */
int sb_lua_exec_confine(sb_sandbox *sb, const sb_confine_opts *co, sb_err *e);
/* Push sb.confinement: what is enforced, and how. */
void sb_lua_exec_push_confinement(lua_State *L, sb_sandbox *sb, bool confine);
/* Kill and reap every process, close the loop (dispose, __gc). */
void sb_lua_exec_close(lua_State *L, sb_sandbox *sb);

/* Read the confinement options at opts (checked by the Lua layer), set it
 * up and publish sb.confinement. -1 with e: the sandbox must not be made. */
int sb_lua_confine(lua_State *L, sb_sandbox *sb, int opts, sb_err *e);

/* The commands' own network namespace, or NULL (outbound allowed, no exec). */
const sb_netns *sb_lua_exec_netns(sb_sandbox *sb);

/* Seconds from SIGTERM to SIGKILL (kill_grace). */
double sb_lua_exec_grace(sb_sandbox *sb);

int sb_lua_exec_poll(lua_State *L);      /* sb:poll([timeout]) */
int sb_lua_exec_processes(lua_State *L); /* sb:processes() */
int sb_lua_exec_backend_fd(lua_State *L);      /* sb:backend_fd() */
int sb_lua_exec_backend_timeout(lua_State *L); /* sb:backend_timeout() */
void sb_lua_exec_open(lua_State *L);     /* core.spawn into the table on top */

#endif
