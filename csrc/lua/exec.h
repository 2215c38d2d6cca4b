/* Commands for Lua (SPEC §5): the command part of a sandbox — its local
 * runner over the sandbox's backend, confined as the confinement part
 * decided — and core.spawn, poll, processes, backend_fd, backend_timeout.
 * Handles and results are lua/process.c. */
#ifndef SB_LUA_EXEC_H
#define SB_LUA_EXEC_H

#include "lua/object.h"

/* Give the sandbox at ud commands (after its confinement part), from the
 * normalised options at opts; sets sb.has_exec. 0, or -1 with e. */
int sb_lua_exec_attach(lua_State *L, sb_sandbox *sb, int ud, int opts, sb_err *e);
/* Seconds from SIGTERM to SIGKILL (kill_grace), for parts that stop commands. */
double sb_lua_exec_grace(const sb_sandbox *sb);

void sb_lua_exec_methods(lua_State *L); /* poll, processes, backend_fd, backend_timeout */
void sb_lua_exec_open(lua_State *L); /* core.spawn, core.exec_config, core.set_error_handler */

#endif
