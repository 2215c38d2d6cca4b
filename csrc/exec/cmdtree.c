#include "exec/cmdtree.h"
#include "plat/proc.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

void sb_cmdtree_init(sb_cmdtree *t, sb_limits *limits) {
  memset(t, 0, sizeof *t);
  t->limits = limits;
  t->cg.dirfd = t->cg.procs_fd = t->cg.events_fd = -1;
  for (int i = 0; i < SB_NLIM; i++) t->lim[i].dirfd = t->lim[i].procs_fd = t->lim[i].events_fd = -1;
}

/* The cgroup that holds the whole tree: the v2 leaf, else a v1 one. */
static sb_cgroup *tree_cg(sb_cmdtree *t) {
  if (t->cg.dirfd >= 0) return &t->cg;
  for (int i = 0; i < SB_NLIM; i++)
    if (t->lim[i].dirfd >= 0) return &t->lim[i];
  return NULL;
}

/* Where limit i lives (NULL: not limited). */
static sb_cgroup *limit_cg(sb_cmdtree *t, int i) {
  int w = t->limits ? t->limits->where[i] : SB_LIM_NONE;
  return w == SB_LIM_V1 ? &t->lim[i] : w == SB_LIM_V2 ? &t->cg : NULL;
}

static uint64_t limit_counter(sb_cmdtree *t, int i) {
  sb_cgroup *c = limit_cg(t, i);
  if (!c || c->dirfd < 0) return 0;
  bool v2 = t->limits->where[i] == SB_LIM_V2;
  if (i == SB_LIM_MEMORY)
    return v2 ? sb_cgroup_counter(c, "memory.events", "oom_kill")
              : sb_cgroup_counter(c, "memory.oom_control", "oom_kill");
  if (i == SB_LIM_PIDS) return sb_cgroup_counter(c, "pids.events", "max");
  return 0;
}

void sb_cmdtree_remove(sb_cmdtree *t) {
  sb_limits *l = t->limits;
  if (!l) return;
  sb_cgroup_leaf_remove(&l->tree, &t->cg);
  for (int i = 0; i < SB_NLIM; i++) sb_cgroup_leaf_remove(&l->lim[i], &t->lim[i]);
}

bool sb_cmdtree_create(sb_cmdtree *t, int procs_fds[SB_MAX_CGROUPS], int *into_fd, sb_err *e) {
  for (int i = 0; i < SB_MAX_CGROUPS; i++) procs_fds[i] = -1;
  *into_fd = -1;
  sb_limits *l = t->limits;
  if (!l) return true;
  bool need_v2 = false, ok = true;
  for (int i = 0; i < SB_NLIM; i++) need_v2 |= l->where[i] == SB_LIM_V2;
  if (l->tree.dirfd >= 0) ok = sb_cgroup_leaf_create(&l->tree, &t->cg) || !need_v2;
  for (int i = 0; ok && i < SB_NLIM; i++)
    if (l->where[i] == SB_LIM_V1) ok = sb_cgroup_leaf_create(&l->lim[i], &t->lim[i]);
  if (!ok) {
    sb_failf(e, SB_EAGAIN, "cannot create the cgroup that enforces this sandbox's limits (%s)", strerror(errno));
    sb_cmdtree_remove(t);
    return false;
  }
  for (int i = 0; i < SB_NLIM; i++) t->cnt0[i] = limit_counter(t, i);
  int n = 0;
  if (t->cg.procs_fd >= 0) {
    procs_fds[n++] = t->cg.procs_fd;
    *into_fd = t->cg.dirfd;
  }
  for (int i = 0; i < SB_NLIM && n < SB_MAX_CGROUPS; i++)
    if (t->lim[i].procs_fd >= 0) procs_fds[n++] = t->lim[i].procs_fd;
  return true;
}

void sb_cmdtree_signal(sb_cmdtree *t, pid_t leader, int pidfd, bool leader_exited, int sig) {
  /* A signal that can be caught reaches each process once: to many
   * programs a second SIGTERM means "stop now, skip the clean shutdown".
   * SIGKILL takes every way there is. */
  sb_cgroup *cg = tree_cg(t);
  if (cg && sb_cgroup_signal(cg, sig) && sig != SIGKILL) return; /* the leaf holds all of it */
  /* the process group (the leader started a session) holds the leader
   * too, unless it moved to a group of its own */
  if (!leader_exited && (sig == SIGKILL || getpgid(leader) != leader)) {
    if (pidfd >= 0) sb_pidfd_signal(pidfd, sig);
    else kill(leader, sig);
  }
  kill(-leader, sig);
}

bool sb_cmdtree_alive(sb_cmdtree *t, pid_t leader) {
  sb_cgroup *cg = tree_cg(t);
  if (cg) return !sb_cgroup_empty(cg);
  return kill(-leader, 0) == 0;
}

bool sb_cmdtree_hit(sb_cmdtree *t, int i) { return limit_counter(t, i) > t->cnt0[i]; }
