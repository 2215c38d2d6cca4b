/* cgroup v2 leaves for whole-tree kill: every command runs in its own leaf
 * below a per-sandbox directory, so descendants that left the process group
 * (setsid, double fork) are still found and killed with cgroup.kill.
 * Works on a hybrid host whose v2 hierarchy has no controllers. */
#ifndef SB_EXEC_CGROUP_H
#define SB_EXEC_CGROUP_H

#include <stdbool.h>

typedef struct sb_cgroup {
  int dirfd;     /* the leaf, -1 = none */
  int procs_fd;  /* its cgroup.procs, for the child to join */
  int events_fd; /* its cgroup.events, read with pread */
  char name[32];
} sb_cgroup;

#define SB_CGROUP_POOL 8

typedef struct sb_cgroup_base {
  int dirfd; /* the sandbox's directory in the v2 hierarchy, -1 = unavailable */
  char name[64];
  int parentfd;
  unsigned next_leaf;
  /* empty leaves kept for the next commands: creating and removing a
   * cgroup costs more than the spawn itself */
  sb_cgroup pool[SB_CGROUP_POOL];
  int npool;
  char path[1500]; /* for messages and tests */
} sb_cgroup_base;

/* Create the sandbox's directory below this process's own v2 cgroup.
 * Returns false (dirfd -1) where cgroup v2 is absent or not writable. */
bool sb_cgroup_base_open(sb_cgroup_base *b, const void *tag);
void sb_cgroup_base_close(sb_cgroup_base *b);

/* A leaf for one command: an idle one from the pool, or a new one. */
bool sb_cgroup_leaf_create(sb_cgroup_base *b, sb_cgroup *c);
/* Signal every process in the leaf (SIGKILL through cgroup.kill). */
void sb_cgroup_signal(sb_cgroup *c, int sig);
bool sb_cgroup_empty(sb_cgroup *c);
/* Give the leaf back once empty (kept for reuse, or removed; waits up to
 * ~1 s for killed processes to leave). */
void sb_cgroup_leaf_remove(sb_cgroup_base *b, sb_cgroup *c);

#endif
