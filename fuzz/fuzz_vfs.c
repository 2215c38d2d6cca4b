/* libFuzzer: VirtualSandbox operation sequences through the Lua binding, in
 * a state whose allocator fails now and then, symlinks included (loops,
 * chains, dangling, out of the root). Invariants: no crash, no leak (ASan),
 * the byte budget always holds, listings are sorted, a real path never
 * leaves the root, and after removing everything the whole budget is free
 * again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "sandbox.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)
#define BUDGET 2048

typedef struct { const uint8_t *p; size_t n; unsigned fail_every, count; int armed; } input;

static void *alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  input *in = ud;
  (void)osize;
  if (nsize == 0) { free(ptr); return NULL; }
  if (in->armed && in->fail_every && ++in->count % in->fail_every == 0) return NULL;
  return realloc(ptr, nsize);
}

static uint8_t next(input *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

static const char *const COMPS[] = {"a", "b", "..", ".", "", "c.txt", "é", "x y", "A"};
static const char *const LINKS[] = {"a", "b/a", "..", ".", "../..", "a/", "/x", "c.txt", "b/../a", "nope"};

static void push_path(lua_State *L, input *in) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int parts = next(in) % 4 + 1;
  for (int i = 0; i < parts; i++) {
    if (i) luaL_addchar(&b, '/');
    luaL_addstring(&b, COMPS[next(in) % 9]);
  }
  luaL_pushresult(&b);
}

/* One operation; errors (memory, misuse) are caught: only crashes count. */
static int op(lua_State *L) {
  input *in = lua_touserdata(L, 1);
  lua_settop(L, 2); /* the sandbox at 2 */
  static const char *const M[] = {"write_file", "read_file", "mkdir", "remove", "rename",
                                  "readdir", "stat", "glob", "grep", "snapshot", "exists",
                                  "symlink", "readlink", "realpath"};
  int k = next(in) % 14;
  lua_getfield(L, 2, M[k]);
  lua_pushvalue(L, 2);
  int nargs = 1;
  if (k == 11) lua_pushstring(L, LINKS[next(in) % 10]), nargs++; /* the link's text, then its path */
  if (k == 7) lua_pushstring(L, next(in) % 2 ? "**" : "*/*"), nargs++;
  else if (k == 8) lua_pushstring(L, next(in) % 2 ? "a" : "[0-9]+"), nargs++;
  else if (k != 9) push_path(L, in), nargs++;
  if (k == 0) {
    size_t len = next(in) * 4;
    char *buf = malloc(len + 1);
    memset(buf, 'a' + next(in) % 3, len);
    lua_pushlstring(L, buf, len);
    free(buf);
    nargs++;
  } else if (k == 4) {
    push_path(L, in), nargs++;
  }
  if (k == 3 || k == 4 || k == 2 || k == 6) { /* an option table */
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, next(in) % 2);
    lua_setfield(L, -2, k == 3 ? "recursive" : k == 4 ? "overwrite" : k == 6 ? "follow" : "parents");
    nargs++;
  }
  lua_call(L, nargs, 1);
  if (k == 13 && lua_type(L, -1) == LUA_TSTRING) { /* realpath: clean, inside */
    const char *r = lua_tostring(L, -1);
    CHECK(r[0] != '/' && strncmp(r, "../", 3) != 0 && strcmp(r, "..") != 0 && !strstr(r, "/../"));
  }
  if (k == 5 && lua_istable(L, -1)) { /* readdir: sorted by name */
    const char *prev = NULL;
    size_t plen = 0;
    for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
      lua_getfield(L, -1, "name");
      size_t n;
      const char *name = lua_tolstring(L, -1, &n);
      if (prev) {
        int c = memcmp(prev, name, n < plen ? n : plen);
        CHECK(c < 0 || (c == 0 && plen < n));
      }
      prev = name; /* anchored by the result table */
      plen = n;
      lua_pop(L, 2);
    }
  }
  return 0;
}

static lua_Integer total_bytes(lua_State *L) {
  lua_getfield(L, 1, "snapshot");
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  lua_Integer total = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    total += (lua_Integer)lua_rawlen(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size, 0, 0, 0};
  in.fail_every = next(&in) % 8 == 0 ? 5 + next(&in) % 50 : 0;
  lua_State *L = lua_newstate(alloc, &in);
  luaL_openlibs(L);
  luaL_requiref(L, "sandbox.core", luaopen_sandbox_core, 0);
  lua_getfield(L, -1, "virtual");
  /* normalised options, as the Lua layer passes them (lua/sandbox/virtual.lua) */
  lua_createtable(L, 0, 8);
  lua_pushinteger(L, BUDGET);
  lua_setfield(L, -2, "max_total_bytes");
  lua_pushinteger(L, 40);
  lua_setfield(L, -2, "max_files");
  lua_pushliteral(L, "/");
  lua_setfield(L, -2, "cwd");
  lua_pushinteger(L, BUDGET);
  lua_setfield(L, -2, "max_read_bytes");
  lua_pushinteger(L, BUDGET);
  lua_setfield(L, -2, "max_write_bytes");
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "allow_overwrite");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "read_only");
  lua_pushboolean(L, 1);
  lua_setfield(L, -2, "allow_escaping_links"); /* links out are made, and must stay unusable */
  lua_call(L, 1, 1);
  lua_replace(L, 1);
  lua_settop(L, 1);
  in.armed = 1;
  while (in.n > 0) {
    lua_pushcfunction(L, op);
    lua_pushlightuserdata(L, &in);
    lua_pushvalue(L, 1);
    lua_pcall(L, 2, 0, 0) == LUA_OK ? (void)0 : lua_pop(L, 1);
  }
  in.armed = 0;
  CHECK(total_bytes(L) <= BUDGET);
  /* remove everything: the whole budget must be free again */
  lua_getfield(L, 1, "readdir");
  lua_pushvalue(L, 1);
  lua_pushliteral(L, ".");
  lua_call(L, 2, 1);
  for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
    lua_getfield(L, 1, "remove");
    lua_pushvalue(L, 1);
    lua_getfield(L, -3, "name");
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "recursive");
    lua_call(L, 3, 1);
    CHECK(lua_toboolean(L, -1));
    lua_pop(L, 2);
  }
  lua_pop(L, 2);
  lua_getfield(L, 1, "write_file");
  lua_pushvalue(L, 1);
  lua_pushliteral(L, "full");
  char *buf = calloc(1, BUDGET);
  lua_pushlstring(L, buf, BUDGET);
  free(buf);
  lua_call(L, 3, 1);
  CHECK(lua_toboolean(L, -1)); /* no byte of the budget leaked */
  lua_close(L);
  return 0;
}
