/* Command execution for Lua (SPEC §5): attaches a runner to a sandbox, and
 * the sandbox methods that drive it. */
#ifndef SB_LUA_EXEC_H
#define SB_LUA_EXEC_H

#include "exec_spawn.h"
#include "sb_lua.h"

typedef struct sb_lua_exec_opts {
  double grace, drain;
  size_t max_output;
  int max_background;
  bool cgroup; /* tree kill through a cgroup leaf where available */
} sb_lua_exec_opts;

/* Give sb the ability to run commands (sb->exec). Raises on OOM. */
void sb_lua_exec_attach(lua_State *L, sb_sandbox *sb, const sb_lua_exec_opts *o);
/* Confinement steps every child applies (owned by the caller, outlive sb). */
void sb_lua_exec_set_steps(sb_sandbox *sb, const sb_confine_steps *steps);
/* The sandbox's cgroup directory, if commands get cgroup leaves. */
bool sb_lua_exec_cgroup(sb_sandbox *sb, char *path, size_t n);
/* Kill and reap every process, close the loop (dispose, __gc). */
void sb_lua_exec_close(lua_State *L, sb_sandbox *sb);

int sb_lua_exec_poll(lua_State *L);      /* sb:poll([timeout]) */
int sb_lua_exec_processes(lua_State *L); /* sb:processes() */
void sb_lua_exec_open(lua_State *L);     /* core.spawn into the table on top */

#endif
