/* Test host: two lua_States on two threads, each with its own sandboxes and
 * background commands, both linked statically (libsandbox.a). State A closes
 * while its commands still run; B must carry on and finish intact.
 *   two_states <dir-a> <dir-b>
 * Prints "A: ..." and "B: ..." result lines, then "done". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lua/compat.h" /* the Lua version differences (any of 5.1, LuaJIT, 5.3, 5.4) */
#include <lualib.h>

#include "sandbox.h"

/* A host with its own libuv: if the library bound to the host's uv_* symbols
 * instead of its private copy, these would run and abort. */
int uv_run(void *loop, int mode);
int uv_run(void *loop, int mode) {
  (void)loop;
  (void)mode;
  fprintf(stderr, "the host's uv_run was called by the library\n");
  abort();
}
int uv_loop_init(void *loop);
int uv_loop_init(void *loop) {
  (void)loop;
  fprintf(stderr, "the host's uv_loop_init was called by the library\n");
  abort();
}

typedef struct {
  const char *name, *dir;
  int close_early;
  char result[512];
} job;

/* B counts lines from 3 commands to completion; A starts long commands and
 * its state is closed while they run (their pids go to the result). */
static const char *SCRIPT =
    "local name, dir, early = ...\n"
    "local sandbox = require 'sandbox'\n"
    /* without Linux's layers (macOS, make PORTABLE=1) commands run only unconfined, with the host's network */
    "local bare = not sandbox.capabilities().confine_layers\n"
    "local sb = assert(sandbox.container { base_dir = dir, confine = not bare, allow_outbound = bare })\n"
    "local v = sandbox.virtual()\n"
    "local got, hs = {}, {}\n"
    "for i = 1, 3 do\n"
    "  got[i] = 0\n"
    "  local cmd = early and 'sleep 30' or ('for j in $(seq 1 50); do echo %s-$j; sleep 0.002; done'):format(name .. i)\n"
    "  hs[i] = assert(sb:exec('sh', { '-c', cmd }, { background = true,\n"
    "    on_stdout = function(c) local _, n = c:gsub('\\n', '') got[i] = got[i] + n end }))\n"
    "end\n"
    "for k = 1, 200 do v:write_file('f' .. k, name .. k) end\n"
    "if early then\n"
    "  local pids = {}\n"
    "  for i = 1, 3 do pids[i] = hs[i].pid end\n"
    "  return 'started ' .. table.concat(pids, ' ')\n"
    "end\n"
    "while sb:poll(0.05) > 0 do end\n"
    "local codes = {}\n"
    "for i = 1, 3 do codes[i] = hs[i]:wait().exit_code .. ':' .. got[i] end\n"
    "return ('lines %s, file f200 = %s'):format(table.concat(codes, ' '), v:read_file('f200'))\n";

static void *run(void *arg) {
  job *j = arg;
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "sandbox", luaopen_sandbox, 0);
  lua_pop(L, 1);
  if (luaL_loadstring(L, SCRIPT) != LUA_OK) {
    snprintf(j->result, sizeof j->result, "load: %s", lua_tostring(L, -1));
  } else {
    lua_pushstring(L, j->name);
    lua_pushstring(L, j->dir);
    lua_pushboolean(L, j->close_early);
    if (lua_pcall(L, 3, 1, 0) != LUA_OK)
      snprintf(j->result, sizeof j->result, "error: %s", lua_tostring(L, -1));
    else
      snprintf(j->result, sizeof j->result, "%s", lua_tostring(L, -1));
  }
  lua_close(L); /* A: while its commands run; they must die with it */
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  job a = {"A", argv[1], 1, ""}, b = {"B", argv[2], 0, ""};
  pthread_t ta, tb;
  pthread_create(&tb, NULL, run, &b);
  pthread_create(&ta, NULL, run, &a);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  printf("A: %s\nB: %s\ndone\n", a.result, b.result);
  return 0;
}
