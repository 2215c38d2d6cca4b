/* A command's whole tree: the cgroup leaves that hold it (the v2 leaf for
 * tree kill and v2 limits, v1 leaves for v1 limits), signals to all of it,
 * whether any of it is left, and whether it hit a limit. Without cgroups
 * the process group is all there is. */
#ifndef SB_EXEC_CMDTREE_H
#define SB_EXEC_CMDTREE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "confine/limits.h"
#include "exec/spawn.h"

typedef struct sb_cmdtree {
  sb_limits *limits; /* NULL = process group only */
  sb_cgroup cg; /* v2 leaf: the tree */
  sb_cgroup lim[SB_NLIM]; /* v1 leaves holding limits */
  uint64_t cnt0[SB_NLIM]; /* oom kills, pids refusals at the start */
} sb_cmdtree;

void sb_cmdtree_init(sb_cmdtree *t, sb_limits *limits);
/* Make the leaves (tree kill best effort, limits enforced) and fill the
 * cgroup.procs fds the child joins, and *into_fd with the v2 leaf's
 * directory when procs_fds[0] is its (the child may be born there), else
 * -1. false (and nothing made) when a limit cannot be enforced. */
bool sb_cmdtree_create(sb_cmdtree *t, int procs_fds[SB_MAX_CGROUPS], int *into_fd, sb_err *e);
/* Give the leaves back (once empty). */
void sb_cmdtree_remove(sb_cmdtree *t);
/* Signal everything: the cgroup, the leader (pidfd when there is one) while
 * it has not exited, and its process group. */
void sb_cmdtree_signal(sb_cmdtree *t, pid_t leader, int pidfd, bool leader_exited, int sig);
/* Anything of the tree left? (The cgroup counts no zombie.) */
bool sb_cmdtree_alive(sb_cmdtree *t, pid_t leader);
/* Did the tree hit limit i (SB_LIM_MEMORY: an OOM kill, SB_LIM_PIDS: a
 * refused fork) since sb_cmdtree_create? */
bool sb_cmdtree_hit(sb_cmdtree *t, int i);

#endif
