/* Resource limits of commands, and the cgroups that hold their trees.
 *
 * Each command gets leaves (made by the runner, confine/cgroup.h) below the
 * per-sandbox directories opened here: in the v2 hierarchy for whole-tree
 * kill (descendants that left the process group are still found), and for
 * memory / pids / cpu limits where each controller is delegated to us (v2),
 * else in the controller's v1 hierarchy. What no cgroup can enforce falls
 * back to an rlimit, or the sandbox is not made (fail closed). */
#ifndef SB_CONFINE_LIMITS_H
#define SB_CONFINE_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

#include "confine/cgroup.h"

enum { SB_LIM_MEMORY, SB_LIM_PIDS, SB_LIM_CPU, SB_NLIM };
enum { SB_LIM_NONE, SB_LIM_V1, SB_LIM_V2 }; /* where a limit lives */

typedef struct sb_limit_values {
  uint64_t memory; /* bytes, 0 = none */
  uint64_t pids; /* 0 = none */
  double cpu; /* cores, 0 = none */
} sb_limit_values;

typedef struct sb_limits {
  sb_cgroup_base tree; /* v2: tree kill, and delegated controllers */
  sb_cgroup_base lim[SB_NLIM]; /* v1 hierarchies holding limits */
  int where[SB_NLIM]; /* SB_LIM_* */
  const char *via[SB_NLIM]; /* "cgroup v2", "cgroup v1", or NULL: not by a cgroup */
} sb_limits;

void sb_limits_init(sb_limits *l);
/* Open the directories and write the limits every leaf gets; with `kill`
 * the v2 directory is kept for tree kill even without limits. A probe leaf
 * proves each setting is accepted. `tag` makes the directory names unique. */
void sb_limits_setup(sb_limits *l, bool kill, const sb_limit_values *want, const void *tag);
void sb_limits_close(sb_limits *l);

#endif
