#include "confine/child.h"

#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec/spawn.h" /* SB_CHILD_FN */

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

enum { ST_RLIMIT = 1, ST_USERNS, ST_NETNS, ST_SETGROUPS, ST_SETGID, ST_SETUID, ST_NNP, ST_LANDLOCK,
       ST_COUNT };

static const char *const names[ST_COUNT] = {
    NULL, "rlimit", "userns", "netns", "setgroups", "setgid", "setuid", "no_new_privs", "landlock"};

const char *sb_confine_step_name(int step) {
  return step > 0 && step < ST_COUNT ? names[step] : "confinement";
}

void sb_confine_steps_init(sb_confine_steps *s) {
  memset(s, 0, sizeof *s);
  s->join_userns_fd = s->join_netns_fd = -1;
  s->landlock_ruleset_fd = -1;
}

SB_CHILD_FN int sb_confine_enter(const sb_confine_steps *s) {
  for (int i = 0; i < s->nrlimits; i++)
    if (setrlimit((__rlimit_resource_t)s->rlimits[i].resource, &s->rlimits[i].lim) != 0) return ST_RLIMIT;
  if (s->join_userns_fd >= 0 && setns(s->join_userns_fd, CLONE_NEWUSER) != 0) return ST_USERNS;
  if (s->join_netns_fd >= 0 && setns(s->join_netns_fd, CLONE_NEWNET) != 0) return ST_NETNS;
  if (s->drop_user) {
    if (syscall(SYS_setgroups, 0, NULL) != 0) return ST_SETGROUPS;
    if (syscall(SYS_setresgid, s->gid, s->gid, s->gid) != 0) return ST_SETGID;
    if (syscall(SYS_setresuid, s->uid, s->uid, s->uid) != 0) return ST_SETUID;
  }
  return 0;
}

SB_CHILD_FN int sb_confine_restrict(const sb_confine_steps *s) {
  if (s->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return ST_NNP;
  if (s->landlock_ruleset_fd >= 0 &&
      syscall(SYS_landlock_restrict_self, s->landlock_ruleset_fd, s->landlock_flags) != 0)
    return ST_LANDLOCK;
  return 0;
}
