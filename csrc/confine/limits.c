#include "confine/limits.h"

#include <stdio.h>
#include <unistd.h>

void sb_limits_init(sb_limits *l) {
  l->tree.dirfd = l->tree.parentfd = -1;
  for (int i = 0; i < SB_NLIM; i++) {
    l->lim[i].dirfd = l->lim[i].parentfd = -1;
    l->where[i] = SB_LIM_NONE;
    l->via[i] = NULL;
  }
}

/* The settings of limit i in base b (v2 or v1 file names). */
static bool write_limit(sb_cgroup_base *b, bool v2, int i, const sb_limit_values *want) {
  char v[48];
  if (i == SB_LIM_MEMORY) {
    snprintf(v, sizeof v, "%llu", (unsigned long long)want->memory);
    bool ok = sb_cgroup_setting_add(b, v2 ? "memory.max" : "memory.limit_in_bytes", v);
    /* no escape into swap */
    if (ok && v2 && faccessat(b->dirfd, "memory.swap.max", F_OK, 0) == 0)
      ok = sb_cgroup_setting_add(b, "memory.swap.max", "0");
    if (ok && !v2 && faccessat(b->dirfd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0)
      ok = sb_cgroup_setting_add(b, "memory.memsw.limit_in_bytes", v);
    return ok;
  }
  if (i == SB_LIM_PIDS) {
    snprintf(v, sizeof v, "%llu", (unsigned long long)want->pids);
    return sb_cgroup_setting_add(b, "pids.max", v);
  }
  long quota = (long)(want->cpu * 100000 + 0.5);
  if (quota < 1000) quota = 1000;
  if (v2) {
    snprintf(v, sizeof v, "%ld 100000", quota);
    return sb_cgroup_setting_add(b, "cpu.max", v);
  }
  snprintf(v, sizeof v, "%ld", quota);
  return sb_cgroup_setting_add(b, "cpu.cfs_period_us", "100000") && sb_cgroup_setting_add(b, "cpu.cfs_quota_us", v);
}

void sb_limits_setup(sb_limits *l, bool kill, const sb_limit_values *want, const void *tag) {
  static const char *const ctrl[SB_NLIM] = {"memory", "pids", "cpu"};
  bool wanted[SB_NLIM] = {want->memory != 0, want->pids != 0, want->cpu > 0};
  bool any = kill;
  for (int i = 0; i < SB_NLIM; i++) any |= wanted[i];
  if (any) sb_cgroup_base_open(&l->tree, tag);
  for (int i = 0; i < SB_NLIM; i++) {
    if (!wanted[i]) continue;
    /* v2 where the controller is delegated to us, else its v1 hierarchy */
    bool v2 = sb_cgroup_enable(&l->tree, ctrl[i]);
    sb_cgroup_base *b = v2 ? &l->tree : &l->lim[i];
    if (!v2 && !sb_cgroup_base_open_v1(b, ctrl[i], tag)) continue;
    sb_cgroup probe;
    if (write_limit(b, v2, i, want) && sb_cgroup_leaf_create(b, &probe)) {
      sb_cgroup_leaf_remove(b, &probe);
      l->where[i] = v2 ? SB_LIM_V2 : SB_LIM_V1;
      l->via[i] = v2 ? "cgroup v2" : "cgroup v1";
    } else if (!v2) {
      sb_cgroup_base_close(b);
    }
  }
  if (!kill && l->tree.dirfd >= 0) {
    bool used = false;
    for (int i = 0; i < SB_NLIM; i++) used |= l->where[i] == SB_LIM_V2;
    if (!used) sb_cgroup_base_close(&l->tree);
  }
}

void sb_limits_close(sb_limits *l) {
  sb_cgroup_base_close(&l->tree);
  for (int i = 0; i < SB_NLIM; i++) sb_cgroup_base_close(&l->lim[i]);
}
