/* Internal header of the Lua binding: the sandbox userdata, argument and
 * option checking, audit. Methods are split by concept over sb_lua*.c. */
#ifndef SB_LUA_H
#define SB_LUA_H

#include <lua.h>
#include <lauxlib.h>

#include "fs/backend.h"

/* Per-operation state on the C stack: path, error, audit data. */
typedef struct sb_op {
  const char *name;
  sb_err e;
  sb_path p;
  bool parsed;
  bool show_raw;   /* report raw (a glob pattern) rather than p */
  bool no_path;    /* the failure is not about a path: message without one */
  const char *raw; /* the agent's string, for audit when parsing failed */
  size_t rawlen;
} sb_op;

/* An option a method accepts: name and Lua type. */
typedef struct sb_optspec {
  const char *name;
  int type;
} sb_optspec;

sb_sandbox *sb_lua_check(lua_State *L, int idx);      /* raises if not a sandbox */
sb_sandbox *sb_lua_check_open(lua_State *L, int idx); /* ... or if disposed */

/* Create the userdata for backend `be` from the validated options at
 * opts_idx (shared options, cwd, audit); pushes it. The backend opens its
 * state into sb->impl afterwards; __gc releases whatever exists. */
sb_sandbox *sb_lua_new(lua_State *L, const sb_backend *be, int opts_idx,
                       const char *cwd, size_t cwdlen);
/* Release everything the sandbox holds; idempotent (dispose, __gc). */
void sb_lua_release(lua_State *L, sb_sandbox *sb);
/* Add a field visible as sb.<name> (value on top of the stack, popped). */
void sb_lua_setfield(lua_State *L, int ud_idx, const char *name);

/* Strict option table at idx (nil allowed): unknown keys or types raise. */
void sb_lua_check_opts(lua_State *L, int idx, const char *fn, const sb_optspec *spec);
bool sb_lua_opt_bool(lua_State *L, int idx, const char *k, bool def);
lua_Integer sb_lua_opt_int(lua_State *L, int idx, const char *k, lua_Integer def);
const char *sb_lua_opt_str(lua_State *L, int idx, const char *k, size_t *len);

/* Parse the path argument at idx into op->p through the front door. */
sb_code sb_lua_arg_path(lua_State *L, sb_sandbox *sb, int idx, sb_op *op);
/* Policy check of a parsed path. */
sb_code sb_lua_guard(sb_sandbox *sb, sb_op *op, const sb_path *p, sb_access acc, int kind);

/* Push nil, msg, code for op and audit the failure; returns 3. */
int sb_lua_fail(lua_State *L, sb_sandbox *sb, sb_op *op);
/* Audit a success (results already pushed stay in place). */
void sb_lua_audit_ok(lua_State *L, sb_sandbox *sb, sb_op *op, lua_Integer size);

void sb_lua_open_search(lua_State *L); /* glob, grep, snapshot into the table on top */

#endif
