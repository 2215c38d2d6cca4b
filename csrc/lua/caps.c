#include "lua/caps.h"

#include <stdbool.h>
#include <unistd.h>

#include "confine/confine.h"
#include "confine/landlock.h"
#include "confine/limits.h"
#include "confine/seccomp.h"
#include "exec/local.h"
#include "exec/spawn.h"
#include "fs/resolver.h"
#include "plat/os.h"

static void policy_field(lua_State *L, const char *key, const char *via) {
  if (via) lua_pushstring(L, via);
  else lua_pushboolean(L, 0);
  lua_setfield(L, -2, key);
}

/* What of the policy this host can bind commands to (SPEC §6.1), and how:
 * a sandbox where it cannot refuses commands. */
static void push_policy(lua_State *L, bool ns, bool landlock) {
  lua_createtable(L, 0, 5);
  policy_field(L, "read_only", ns && landlock ? "the mount view and Landlock" : landlock ? "Landlock" : NULL);
  policy_field(L, "mode_w", landlock ? "Landlock" : NULL);
  policy_field(L, "rules", ns && landlock ? "the mount view" : NULL);
  policy_field(L, "disk", ns && landlock ? "an OverlaySandbox's upper layer in memory (not a ContainerSandbox)" : NULL);
  policy_field(L, "extensions", NULL); /* a file-tool policy everywhere */
  lua_setfield(L, -2, "policy");
}

int sb_caps_push(lua_State *L) {
  lua_createtable(L, 0, 14);
  lua_pushstring(L, SB_PLATFORM);
  lua_setfield(L, -2, "platform");
  /* which confinement layers this build has: "linux", or false (confine =
   * true then refuses commands, saying so) */
  if (SB_LINUX) lua_pushliteral(L, "linux");
  else lua_pushboolean(L, 0);
  lua_setfield(L, -2, "confine_layers");
  lua_pushboolean(L, sb_openat2_available());
  lua_setfield(L, -2, "openat2");
  lua_pushboolean(L, sb_local_have_pidfd());
  lua_setfield(L, -2, "pidfd");
  int abi = sb_landlock_abi();
  if (abi) lua_pushinteger(L, abi);
  else lua_pushboolean(L, 0);
  lua_setfield(L, -2, "landlock_abi");
  sb_confine_host h;
  sb_confine_probe(&h);
  lua_pushboolean(L, h.userns);
  lua_setfield(L, -2, "userns");
  lua_pushboolean(L, h.netns);
  lua_setfield(L, -2, "netns");
  bool ns = h.namespaces;
  lua_pushboolean(L, ns);
  lua_setfield(L, -2, "namespaces");
  push_policy(L, ns, abi > 0);
  lua_pushboolean(L, sb_seccomp_available());
  lua_setfield(L, -2, "seccomp");
  lua_pushboolean(L, geteuid() == 0);
  lua_setfield(L, -2, "root");

  /* cgroups: probe by making (and removing) the directories a sandbox would */
  sb_limits lim;
  sb_limits_init(&lim);
  sb_limit_values want = {.memory = 1ULL << 40, .pids = 1 << 20, .cpu = 64};
  sb_limits_setup(&lim, true, &want, &lim);
  lua_pushboolean(L, lim.tree.dirfd >= 0);
  lua_setfield(L, -2, "cgroup_v2");
  lua_createtable(L, 0, 3);
  static const char *const names[SB_NLIM] = {"memory", "pids", "cpu"};
  for (int i = 0; i < SB_NLIM; i++) {
    if (lim.via[i]) lua_pushstring(L, lim.via[i]);
    else lua_pushboolean(L, 0);
    lua_setfield(L, -2, names[i]);
  }
  lua_setfield(L, -2, "cgroup_limits");
  sb_limits_close(&lim);
  return 1;
}
