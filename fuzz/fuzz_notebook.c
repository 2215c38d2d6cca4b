/* libFuzzer: notebooks through read_document's Lua reader
 * (lua/sandbox/document.lua over the module's own JSON decoder, lua-cjson
 * kept off the path), in an embedded Lua 5.4 with the C core preloaded.
 * Invariant: any bytes give parts or nil, message, code, never a raised
 * error, and every part is a table with a type (a hostile notebook is an
 * error result); a notebook's parts render as read_file shows them
 * (sandbox.tools.documents) without a raised error either. A file named
 * .ipynb is rendered as one only when its bytes are one, as read_file
 * does (document.kind: a GIF so named is an image). Input: a selector byte
 * (the file name: .ipynb, or an image's or a text's), then the file. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)

static lua_State *start(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  /* the Lua layer from the checkout (scripts/fuzz.sh runs at its root) */
  const char *boot = "package.path = 'lua/?.lua;lua/?/init.lua'; package.cpath = ''\n"
                     "local D = require('sandbox.document')\n"
                     "return D.parts, require('sandbox.tools.documents').text, D.kind";
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_sandbox_core);
  lua_setfield(L, -2, "sandbox.core");
  lua_pop(L, 2);
  if (luaL_loadstring(L, boot) != LUA_OK || lua_pcall(L, 0, 3, 0) != LUA_OK) {
    fprintf(stderr, "fuzz_notebook: %s (run it from the checkout's root)\n", lua_tostring(L, -1));
    abort();
  }
  lua_setfield(L, LUA_REGISTRYINDEX, "fuzz.kind");
  lua_setfield(L, LUA_REGISTRYINDEX, "fuzz.text");
  lua_setfield(L, LUA_REGISTRYINDEX, "fuzz.parts");
  return L;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static lua_State *L;
  static unsigned runs;
  if (!L) L = start();
  if (size < 1) return 0;
  static const char *const names[] = {"x.ipynb", "x.ipynb", "x.ipynb", "x.png", "x.txt"};
  lua_getfield(L, LUA_REGISTRYINDEX, "fuzz.parts");
  lua_pushstring(L, names[data[0] % 5]);
  lua_pushlstring(L, (const char *)data + 1, size - 1);
  lua_newtable(L);
  int rc = lua_pcall(L, 3, 3, 0);
  if (rc != LUA_OK) fprintf(stderr, "raised: %s\n", lua_tostring(L, -1));
  CHECK(rc == LUA_OK);
  if (lua_isnil(L, -3)) {
    CHECK(lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING);
  } else {
    CHECK(lua_istable(L, -3));
    for (lua_Integer i = 1;; i++) {
      if (lua_rawgeti(L, -3, i) == LUA_TNIL) break;
      CHECK(lua_istable(L, -1));
      lua_getfield(L, -1, "type");
      CHECK(lua_type(L, -1) == LUA_TSTRING);
      lua_pop(L, 2);
    }
    lua_pop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, "fuzz.kind");
    lua_pushstring(L, names[data[0] % 5]);
    lua_pushlstring(L, (const char *)data + 1, size - 1);
    CHECK(lua_pcall(L, 2, 1, 0) == LUA_OK);
    int is_notebook = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "notebook") == 0;
    lua_pop(L, 1);
    if (is_notebook) { /* as read_file shows it */
      lua_getfield(L, LUA_REGISTRYINDEX, "fuzz.text");
      lua_pushstring(L, "x.ipynb");
      lua_pushstring(L, "notebook");
      lua_pushvalue(L, -6);
      rc = lua_pcall(L, 3, 1, 0);
      if (rc != LUA_OK) fprintf(stderr, "raised in the rendering: %s\n", lua_tostring(L, -1));
      CHECK(rc == LUA_OK);
      CHECK(lua_istable(L, -1));
      lua_getfield(L, -1, "content");
      CHECK(lua_type(L, -1) == LUA_TSTRING);
    }
  }
  lua_settop(L, 0);
  if (++runs % 256 == 0) lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}
