/* The confinement a command applies to itself before execve: the steps the
 * confinement part decided once per sandbox (confine/confine.c), applied in
 * the child by the spawner (exec/spawn.c) in two calls:
 *
 *   sb_confine_enter     resource limits, the sandbox's namespaces, the
 *                        unprivileged identity;
 *   (the spawner ties the child to the host's life: it needs the final uid)
 *   sb_confine_restrict  no_new_privs, Landlock.
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

#define SB_MAX_RLIMITS 8

typedef struct sb_confine_steps {
  int nrlimits;
  struct {
    int resource;
    struct rlimit lim;
  } rlimits[SB_MAX_RLIMITS];
  int join_userns_fd; /* setns() into these (the sandbox's network), -1 = stay */
  int join_netns_fd;
  bool drop_user;     /* setgroups(0), setgid, setuid */
  uid_t uid;
  gid_t gid;
  bool no_new_privs;
  int landlock_ruleset_fd; /* landlock_restrict_self(fd, flags); -1 = none */
  unsigned landlock_flags;
} sb_confine_steps;

/* Nothing to apply. */
void sb_confine_steps_init(sb_confine_steps *s);

/* 0, or the failed step (> 0) with errno set. */
int sb_confine_enter(const sb_confine_steps *s);
int sb_confine_restrict(const sb_confine_steps *s);
const char *sb_confine_step_name(int step);

#endif
