/* A game-engine-like host embedding sandbox statically (libsandbox.a):
 * its own capped allocator, its own frame loop at ~60 frames per second.
 * Once per frame it calls the script's frame(); between frames it sleeps on
 * the sandboxes' backend fds (poll(2)), so command output wakes it early and
 * an idle game costs nothing. Errors raised by the script's callbacks come
 * to the host's error handler; the game goes on.
 *   host <script.lua> [memory-cap-MB]
 * Prints what the script prints, then the frame statistics. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lua/compat.h" /* the Lua version differences (any of 5.1, LuaJIT, 5.3, 5.4) */
#include <lualib.h>

#include "capped_alloc.h"
#include "sandbox.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int callback_errors;

/* The host's handler for errors raised inside exec callbacks. */
static int on_callback_error(lua_State *L) {
  callback_errors++;
  const char *msg = luaL_tolstring(L, 1, NULL); /* at 3 */
  lua_getfield(L, 2, "callback");               /* at 4 */
  lua_getfield(L, 2, "id");                     /* at 5 */
  printf("[host] a script callback failed (%s of process %lld): %s\n", lua_tostring(L, 4),
         (long long)lua_tointeger(L, 5), msg);
  return 0;
}

/* Calls script function `name` protected; false when it is missing or failed. */
static int call(lua_State *L, const char *name, int nres) {
  if (lua_getglobal(L, name) != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return 0;
  }
  if (lua_pcall(L, 0, nres, 0) != LUA_OK) {
    printf("[host] %s failed: %s\n", name, lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s script.lua [memory-cap-MB]\n", argv[0]);
    return 2;
  }
  capped_budget b = {.cap = (size_t)(argc > 2 ? atoi(argv[2]) : 64) << 20};
  lua_State *L = lua_newstate(capped_alloc, &b);
  if (!L) return 1;
  luaL_openlibs(L);
  luaL_requiref(L, "sandbox", luaopen_sandbox, 0); /* no .lua file needed */
  lua_pop(L, 1);
  sandbox_set_error_handler(L, on_callback_error);
  if (luaL_dofile(L, argv[1]) != LUA_OK) {
    printf("[host] script failed: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }

  const double frame_ms = 1000.0 / 60;
  double worst = 0, total = 0, start = now_ms(), next = start;
  int frames = 0, wakeups = 0, calls = 0;
  for (int more = 1; more; frames++) {
    double t0 = now_ms();
    lua_pushinteger(L, frames);
    lua_setglobal(L, "FRAME");
    more = call(L, "frame", 1) && lua_toboolean(L, -1);
    lua_settop(L, 0);
    double spent = now_ms() - t0;
    total += spent, calls++;
    if (spent > worst) worst = spent;
    /* until the next frame, sleep on the sandboxes' fds: output wakes the
     * host early and the script's pump() takes it in */
    struct pollfd fds[8];
    int n = 0;
    if (call(L, "backend_fds", 1) && lua_istable(L, -1))
      for (lua_Integer i = 1; n < 8 && lua_rawgeti(L, -1, i) == LUA_TNUMBER; i++, lua_pop(L, 1))
        fds[n++] = (struct pollfd){.fd = (int)lua_tointeger(L, -1), .events = POLLIN};
    lua_settop(L, 0);
    for (next += frame_ms; more && now_ms() < next;) {
      if (poll(fds, (nfds_t)n, (int)(next - now_ms()) + 1) <= 0) continue;
      wakeups++;
      t0 = now_ms();
      call(L, "pump", 0);
      spent = now_ms() - t0;
      total += spent, calls++;
      if (spent > worst) worst = spent;
    }
  }
  printf("[host] %d frames in %.0f ms, %d early wake-ups by command output; "
         "time in the script per call: mean %.3f ms, worst %.3f ms\n",
         frames, now_ms() - start, wakeups, calls ? total / calls : 0, worst);
  printf("[host] memory: cap %zu MB, peak %.1f MB, %lu allocations refused, %d callback errors\n",
         b.cap >> 20, b.peak / 1048576.0, b.refused, callback_errors);
  lua_close(L);
  printf("[host] closed: %zu bytes still allocated\n", b.used);
  return b.used == 0 ? 0 : 1;
}
