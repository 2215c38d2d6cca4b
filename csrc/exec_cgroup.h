/* cgroup v2 leaves for whole-tree kill: every command runs in its own leaf
 * below a per-sandbox directory, so descendants that left the process group
 * (setsid, double fork) are still found and killed with cgroup.kill.
 * Works on a hybrid host whose v2 hierarchy has no controllers. */
#ifndef SB_EXEC_CGROUP_H
#define SB_EXEC_CGROUP_H

#include <stdbool.h>

typedef struct sb_cgroup_base {
  int dirfd; /* the sandbox's directory in the v2 hierarchy, -1 = unavailable */
  char name[64];
  int parentfd;
  char path[1500]; /* for messages and tests */
} sb_cgroup_base;

typedef struct sb_cgroup {
  int dirfd;    /* the leaf, -1 = none */
  int procs_fd; /* its cgroup.procs, for the child to join */
  char name[32];
} sb_cgroup;

/* Create the sandbox's directory below this process's own v2 cgroup.
 * Returns false (dirfd -1) where cgroup v2 is absent or not writable. */
bool sb_cgroup_base_open(sb_cgroup_base *b, const void *tag);
void sb_cgroup_base_close(sb_cgroup_base *b);

bool sb_cgroup_leaf_create(sb_cgroup_base *b, unsigned id, sb_cgroup *c);
/* Signal every process in the leaf (SIGKILL through cgroup.kill). */
void sb_cgroup_signal(sb_cgroup *c, int sig);
bool sb_cgroup_empty(sb_cgroup *c);
/* Remove the leaf once empty (waits up to ~1 s for the kernel to settle). */
void sb_cgroup_leaf_remove(sb_cgroup_base *b, sb_cgroup *c);

#endif
