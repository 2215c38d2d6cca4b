/* The search methods of every sandbox (lua/search.c). */
#ifndef SB_LUA_SEARCH_H
#define SB_LUA_SEARCH_H

#include "lua/compat.h"
#include "lua/object.h"
#include "search/search.h"

/* glob, grep, snapshot into the table on top. */
void sb_lua_search_methods(lua_State *L);

/* What grep, glob and their jobs (lua/search_job.c) share. Arguments: the sandbox
 * at 1, the pattern at 2, the options at 3. */
void sb_lua_grep_check(lua_State *L); /* raises on a bad pattern type or option */
size_t sb_lua_search_max(lua_State *L); /* max_results, checked */
/* The options into s (made by sb_search_init) and op: filters, modes, the
 * path parsed and guarded. SB_OK or the failure in op->e. fpat holds the
 * filter (SB_PATH_MAX + 1 bytes) and must live as long as s. */
sb_code sb_lua_grep_prepare(lua_State *L, sb_sandbox *sb, sb_op *op, sb_search *s, char *fpat);
/* The same for glob (the pattern at 2): pat holds the normalised pattern;
 * *nothing when the policy hides the whole start (an empty answer). */
void sb_lua_glob_check(lua_State *L);
sb_code sb_lua_glob_prepare(lua_State *L, sb_sandbox *sb, sb_op *op, sb_search *s, char *pat, bool *nothing);
/* Push s's records (sorted) as grep or glob gives them: how many values
 * (1; a grep in "lines" mode 3: the text, its records, truncated), or -1 when out
 * of memory. Only from a C closure with the result keys as its first
 * upvalues (sb_lua_search_keys pushes them). */
int sb_lua_search_push(lua_State *L, sb_search *s, bool grep);
void sb_lua_search_keys(lua_State *L);

/* core.grep_start and its job (lua/search_job.c), into the table on top. */
void sb_lua_search_job_open(lua_State *L);
#define SB_LUA_SEARCH_NKEYS 6

#endif
