/* The audit stream of a sandbox (SPEC §17): one ordered stream of events
 * from every layer — file operations (lua/object.c), commands, tool calls
 * and approvals (the Lua layer through core.audit), network decisions (the
 * service thread's net/netlog.h) — each a flat table with seq, time and
 * kind, given to the `audit` function and/or appended to the `audit_log`
 * chain (audit/log.h). The stream is the sandbox's last part to go: its
 * release says "disposed" after the commands ended. */
#ifndef SB_LUA_AUDIT_H
#define SB_LUA_AUDIT_H

#include "lua/object.h"
#include "net/netlog.h"

/* Add the event table at idx to the stream (seq, time and kind "file"
 * filled in when absent). A no-op for a sandbox without audit. Errors the
 * audit function raises reach the caller. (File operations and the
 * sandbox's release reach the stream through sb->audit_hooks.) */
void sb_lua_audit_emit(lua_State *L, sb_sandbox *sb, int idx);
/* Where the network servers record decisions; NULL without audit. */
sb_netlog *sb_lua_audit_netlog(sb_sandbox *sb);
/* In a forked copy (lua/call_job.c): events go into the table at idx, for
 * the host to emit when the copy answers. */
void sb_lua_audit_collect(lua_State *L, sb_sandbox *sb, int idx);
/* core.audit_start, core.audit, core.audit_flush, core.audit_state, core.sha256. */
void sb_lua_audit_open(lua_State *L);

#endif
