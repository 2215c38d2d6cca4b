#include "sb_caps.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "resolve.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)

/* Landlock ABI version, or 0 when the kernel has none / it is disabled. */
int sb_landlock_abi(void) {
  long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v > 0 ? (int)v : 0;
}

static int has_pidfd(void) {
  int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

int sb_caps_push(lua_State *L) {
  lua_createtable(L, 0, 4);
  lua_pushboolean(L, sb_openat2_available());
  lua_setfield(L, -2, "openat2");
  lua_pushboolean(L, has_pidfd());
  lua_setfield(L, -2, "pidfd");
  int abi = sb_landlock_abi();
  if (abi) lua_pushinteger(L, abi);
  else lua_pushboolean(L, 0);
  lua_setfield(L, -2, "landlock_abi");
  return 1;
}
