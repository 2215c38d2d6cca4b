/* Reading option tables in C, in one place.
 *
 * Constructor options arrive normalised by the Lua layer (each concept's
 * options module under lua/sandbox/ owns its schema, checks and defaults):
 * a key with a default is always present, a key without one (a limit not
 * set) is nil. C never supplies a default of its own: a missing required
 * key is an internal error. Per-call method options ({overwrite = ...}) are
 * checked here strictly, with the method's defaults at the call. */
#ifndef SB_LUA_OPTIONS_H
#define SB_LUA_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "lua/compat.h"

/* Normalised constructor options (table at t): required ones raise when
 * missing; optional ones give `none` for nil. */
bool sb_opt_bool(lua_State *L, int t, const char *key);
double sb_opt_num(lua_State *L, int t, const char *key);
uint64_t sb_opt_u64(lua_State *L, int t, const char *key);
uint64_t sb_opt_u64_or(lua_State *L, int t, const char *key, uint64_t none);
double sb_opt_num_or(lua_State *L, int t, const char *key, double none);
/* The string stays valid while the option table is on the stack. */
const char *sb_opt_str(lua_State *L, int t, const char *key);
const char *sb_opt_str_or(lua_State *L, int t, const char *key, const char *none);

/* A method's option table at idx (nil allowed): unknown keys or wrong
 * types raise, naming the method. */
typedef struct sb_optspec {
  const char *name;
  int type;
} sb_optspec;
void sb_lua_check_opts(lua_State *L, int idx, const char *fn, const sb_optspec *spec);
bool sb_lua_opt_bool(lua_State *L, int idx, const char *k, bool def);
lua_Integer sb_lua_opt_int(lua_State *L, int idx, const char *k, lua_Integer def);
const char *sb_lua_opt_str(lua_State *L, int idx, const char *k, size_t *len);

#endif
