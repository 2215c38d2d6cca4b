/* The confinement a command applies to itself before execve: the steps the
 * confinement part decided once per sandbox (confine/confine.c), applied in
 * the child by the spawner (exec/spawn.c) in four calls:
 *
 *   sb_confine_join      the sandbox's namespaces (setns; the PID namespace
 *                        takes the spawner's second clone to enter);
 *   sb_confine_limit     resource limits (per command: the zygote,
 *                        exec/zygote.h, takes the other three once);
 *   sb_confine_enter     capabilities dropped for good
 *                        (securebits, bounding and ambient sets) around the
 *                        change to the unprivileged identity;
 *   (the spawner ties the child to the host's life: it needs the final uid)
 *   sb_confine_restrict  no_new_privs, Landlock, seccomp (last).
 *
 * Async-signal-safe: the child shares the host's memory (vfork style), so
 * these use raw system calls only. A failure returns the failed step (its
 * name from sb_confine_step_name) with errno set. A new layer adds its
 * field here and its step in child.c. */
#ifndef SB_CONFINE_CHILD_H
#define SB_CONFINE_CHILD_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "plat/linux_abi.h"

#include "confine/ns.h"

#define SB_MAX_RLIMITS 8

typedef struct sb_confine_steps {
  int nrlimits;
  struct {
    int resource;
    struct rlimit lim;
  } rlimits[SB_MAX_RLIMITS];
  int ns_fds[SB_NS_COUNT]; /* setns() into these, in this order; -1 = stay */
  int ns_pidfd; /* or, >= 0: every namespace of this process at once ... */
  int ns_flags; /* ... these (CLONE_NEW*) */
  char view_root[SB_NS_PATH]; /* with a mount view: the root's path in it ("" = none) */
  bool drop_caps; /* empty capability sets */
  bool drop_bounding; /* ... the bounding set and securebits too (needs CAP_SETPCAP) */
  int cap_last; /* highest capability number of this kernel */
  bool drop_user; /* setgroups(0), setgid, setuid */
  uid_t uid;
  gid_t gid;
  bool no_new_privs;
  int landlock_ruleset_fd; /* landlock_restrict_self(fd, flags); -1 = none */
  unsigned landlock_flags;
  const struct sock_fprog *seccomp; /* installed last; NULL = none */
} sb_confine_steps;

/* Nothing to apply. */
void sb_confine_steps_init(sb_confine_steps *s);

/* Does the command enter a PID namespace (the spawner's second clone)? */
static inline bool sb_confine_joins_pid(const sb_confine_steps *s) {
  return s && (s->ns_fds[SB_NS_PID] >= 0 || (s->ns_pidfd >= 0 && (s->ns_flags & CLONE_NEWPID)));
}

/* Layers a process can take once and pass on to every child it forks
 * (namespaces, capabilities, Landlock, seccomp): worth a zygote. */
static inline bool sb_confine_has_layers(const sb_confine_steps *s) {
  if (!s) return false;
  bool ns = s->ns_pidfd >= 0;
  for (int i = 0; i < SB_NS_COUNT; i++) ns |= s->ns_fds[i] >= 0;
  return ns || s->drop_caps || s->landlock_ruleset_fd >= 0 || s->seccomp;
}

/* 0, or the failed step (> 0) with errno set. */
int sb_confine_join(const sb_confine_steps *s);
int sb_confine_limit(const sb_confine_steps *s);
int sb_confine_enter(const sb_confine_steps *s);
int sb_confine_restrict(const sb_confine_steps *s);
const char *sb_confine_step_name(int step);

#endif
