/* Test host: runs a Lua script in a state whose allocator refuses to go past
 * a byte cap, then closes the state and checks every byte came back.
 *   alloc_cap <cap-bytes> <script.lua> [args...]
 *   alloc_cap fail:<N> <script.lua> [args...]   fail only the Nth allocation
 *                                               after the script calls arm()
 * Prints the script's output, then "closed: <bytes still allocated>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lua/compat.h"
#include <lua.h>
#include <lualib.h>

#include "capped_alloc.h" /* examples/embed: the same allocator the embed host uses */

typedef capped_budget budget;

/* Under AddressSanitizer: LSan's exit scan crashed on a bogus dynamic-TLS
 * range it recorded for a dlopen'ed library whose TLS block was made right
 * after a refused allocation (see the Makefile's asan target); this host
 * counts every byte itself, so it does without that interception. */
const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void) { return "intercept_tls_get_addr=0"; }

static int lua_budget(lua_State *L) {
  budget *b = lua_touserdata(L, lua_upvalueindex(1));
  lua_pushinteger(L, (lua_Integer)b->used);
  lua_pushinteger(L, (lua_Integer)b->cap);
  lua_pushinteger(L, (lua_Integer)b->refused);
  return 3;
}

static int lua_arm(lua_State *L) {
  budget *b = lua_touserdata(L, lua_upvalueindex(1));
  b->armed = lua_toboolean(L, 1) || lua_isnone(L, 1);
  lua_pushinteger(L, (lua_Integer)b->count);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <cap-bytes> <script.lua> [args...]\n", argv[0]);
    return 2;
  }
  budget b = {.cap = (size_t)-1};
  if (strncmp(argv[1], "fail:", 5) == 0)
    b.fail_at = strtoul(argv[1] + 5, NULL, 10);
  else
    b.cap = strtoull(argv[1], NULL, 10);
  lua_State *L = lua_newstate(capped_alloc, &b);
  if (!L) return 3;
  luaL_openlibs(L);
  lua_pushlightuserdata(L, &b);
  lua_pushcclosure(L, lua_budget, 1);
  lua_setglobal(L, "budget");
  lua_pushlightuserdata(L, &b);
  lua_pushcclosure(L, lua_arm, 1);
  lua_setglobal(L, "arm");
  lua_createtable(L, argc, 0);
  for (int i = 3; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - 2);
  }
  lua_setglobal(L, "arg");
  int rc = luaL_dofile(L, argv[2]);
  if (rc != LUA_OK) printf("script error: %s\n", lua_tostring(L, -1));
  lua_close(L);
  printf("closed: %zu bytes still allocated, peak %zu, %lu refused, %lu counted\n", b.used,
         b.peak, b.refused, b.count);
  return rc == LUA_OK && b.used == 0 ? 0 : 1;
}
