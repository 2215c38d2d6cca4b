#include "confine/child.h"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/child.h"

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

enum {
  ST_RLIMIT = 1,
  ST_SETNS,
  ST_SECUREBITS,
  ST_BOUNDING,
  ST_SETGROUPS,
  ST_SETGID,
  ST_SETUID,
  ST_CAPS,
  ST_NNP,
  ST_LANDLOCK,
  ST_SECCOMP,
  ST_COUNT
};

static const char *const names[ST_COUNT] = {NULL,
                                            "rlimit",
                                            "the sandbox's namespaces",
                                            "securebits",
                                            "the capability bounding set",
                                            "setgroups",
                                            "setgid",
                                            "setuid",
                                            "dropping capabilities",
                                            "no_new_privs",
                                            "landlock",
                                            "seccomp"};

const char *sb_confine_step_name(int step) { return step > 0 && step < ST_COUNT ? names[step] : "confinement"; }

/* Through a pidfd, one call joins them all, atomically (and in a third of
 * the time of one call each). Else the user namespace first (it gives the
 * capabilities the others need), the PID namespace last (it applies to the
 * children only). */
SB_CHILD_FN int sb_confine_join(const sb_confine_steps *s) {
  if (s->ns_pidfd >= 0) return setns(s->ns_pidfd, s->ns_flags) != 0 ? ST_SETNS : 0;
  static const int types[SB_NS_COUNT] = {CLONE_NEWUSER,   CLONE_NEWNS,  CLONE_NEWIPC, CLONE_NEWUTS,
                                         CLONE_NEWCGROUP, CLONE_NEWNET, CLONE_NEWPID};
  for (int i = 0; i < SB_NS_COUNT; i++)
    if (s->ns_fds[i] >= 0 && setns(s->ns_fds[i], types[i]) != 0) return ST_SETNS;
  return 0;
}

SB_CHILD_FN int sb_confine_limit(const sb_confine_steps *s) {
  for (int i = 0; i < s->nrlimits; i++)
    if (setrlimit((__rlimit_resource_t)s->rlimits[i].resource, &s->rlimits[i].lim) != 0) return ST_RLIMIT;
  return 0;
}

SB_CHILD_FN int sb_confine_enter(const sb_confine_steps *s) {
  if (s->drop_caps && s->drop_bounding) {
    /* root stays without capabilities across execve, and cannot keep or
     * raise any; then nothing is left to raise from */
    unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
        SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0) return ST_SECUREBITS;
    for (int cap = 0; cap <= s->cap_last; cap++)
      if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return ST_BOUNDING;
  }
  if (s->drop_caps && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return ST_CAPS;
  if (s->drop_user) {
    if (syscall(SYS_setgroups, 0, NULL) != 0) return ST_SETGROUPS;
    if (syscall(SYS_setresgid, s->gid, s->gid, s->gid) != 0) return ST_SETGID;
    if (syscall(SYS_setresuid, s->uid, s->uid, s->uid) != 0) return ST_SETUID;
  }
  if (s->drop_caps) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) != 0) return ST_CAPS;
  }
  return 0;
}

SB_CHILD_FN int sb_confine_restrict(const sb_confine_steps *s) {
  if (s->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return ST_NNP;
  if (s->landlock_ruleset_fd >= 0 &&
      syscall(SYS_landlock_restrict_self, s->landlock_ruleset_fd, s->landlock_flags) != 0)
    return ST_LANDLOCK;
  if (s->seccomp && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, s->seccomp, 0, 0) != 0) return ST_SECCOMP;
  return 0;
}
