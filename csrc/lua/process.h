/* The Process handle of a command (lua/process.c): h.pid, h.id,
 * h:read, h:write, h:close_stdin, h:wait, h:kill, h:running. */
#ifndef SB_LUA_PROCESS_H
#define SB_LUA_PROCESS_H

#include "lua/runner.h"

/* Push a handle for a command about to start: its callbacks and fields
 * from the table at spec (on_stdout, on_stderr, on_exit, on_end), anchored
 * under the id the runner will give it. Then sb_lua_handle_bind with the
 * started process, or sb_lua_handle_drop when it did not start. */
int sb_lua_handle_new(lua_State *L, sb_lua_runner *lr, int sb_idx, int spec_idx);
void sb_lua_handle_bind(lua_State *L, int hidx, sb_proc *p);
void sb_lua_handle_drop(lua_State *L, sb_lua_runner *lr);

/* Push sb:processes(): live background handles, oldest first. */
void sb_lua_push_processes(lua_State *L, sb_lua_runner *lr);

#endif
