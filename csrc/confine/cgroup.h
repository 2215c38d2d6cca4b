/* cgroup leaves for commands: every command runs in its own leaf below a
 * per-sandbox directory, in each hierarchy the sandbox uses:
 *  - the v2 hierarchy, for whole-tree kill: descendants that left the
 *    process group (setsid, double fork) are still found and killed with
 *    cgroup.kill (works on a hybrid host whose v2 has no controllers);
 *  - for resource limits, the memory / pids / cpu controllers: in v2 where
 *    they are delegated to us, else in their v1 hierarchies.
 * Idle leaves are pooled: creating a cgroup costs more than a spawn. */
#ifndef SB_EXEC_CGROUP_H
#define SB_EXEC_CGROUP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sb_cgroup {
  int dirfd; /* the leaf, -1 = none */
  int procs_fd; /* its cgroup.procs, for the child to join */
  int events_fd; /* v2: its cgroup.events (pread) */
  bool killed; /* cgroup.kill was written: never pooled (exec/spawn.h's clone3) */
  char name[32];
} sb_cgroup;

#define SB_CGROUP_POOL 8
#define SB_CGROUP_SETTINGS 4

typedef struct sb_cgroup_setting {
  char file[32];
  char value[48];
} sb_cgroup_setting;

typedef struct sb_cgroup_base {
  int dirfd; /* the sandbox's directory in this hierarchy, -1 = unavailable */
  int parentfd;
  bool v1;
  char name[64];
  unsigned next_leaf;
  sb_cgroup pool[SB_CGROUP_POOL];
  int npool;
  sb_cgroup_setting set[SB_CGROUP_SETTINGS]; /* written into every new leaf */
  int nset;
  char path[1500]; /* for messages and tests */
} sb_cgroup_base;

/* The sandbox's directory below this process's own cgroup: in the v2
 * hierarchy, or in the v1 hierarchy of controller ctrl. False (dirfd -1)
 * where it is absent or not writable. */
bool sb_cgroup_base_open(sb_cgroup_base *b, const void *tag);
bool sb_cgroup_base_open_v1(sb_cgroup_base *b, const char *ctrl, const void *tag);
/* v2: make controller ctrl available to the leaves, if delegated to us. */
bool sb_cgroup_enable(sb_cgroup_base *b, const char *ctrl);
/* A limit file every leaf gets ("memory.max" = "536870912"). */
bool sb_cgroup_setting_add(sb_cgroup_base *b, const char *file, const char *value);
void sb_cgroup_base_close(sb_cgroup_base *b);

/* A leaf for one command: an idle one from the pool, or a new one. */
bool sb_cgroup_leaf_create(sb_cgroup_base *b, sb_cgroup *c);
/* Signal every process in the leaf (SIGKILL through cgroup.kill in v2);
 * false when some may have been missed (no leaf, a list cut short). */
bool sb_cgroup_signal(sb_cgroup *c, int sig);
bool sb_cgroup_empty(sb_cgroup *c);
/* The number after `key` in a leaf file ("oom_kill" in memory.events). */
uint64_t sb_cgroup_counter(sb_cgroup *c, const char *file, const char *key);
/* Give the leaf back once empty (pooled for reuse, or removed; waits up to
 * ~1 s for killed processes to leave). */
void sb_cgroup_leaf_remove(sb_cgroup_base *b, sb_cgroup *c);

#endif
