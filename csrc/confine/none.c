/* The confinement on a system without Linux's layers (macOS, the BSDs, and
 * `make PORTABLE=1` on Linux): no namespaces, Landlock, seccomp or cgroups.
 * What confine/confine.c decides still holds (resource limits as rlimits,
 * the policy's refusals, tree kill by process group); what needs a missing
 * layer fails closed, saying what is missing and what to set instead
 * (SPEC §19). macOS Seatbelt would replace this file's layers. */
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/child.h"
#include "confine/cgroup.h"
#include "confine/confine_impl.h"
#include "confine/landlock.h"
#include "confine/seccomp.h"
#include "plat/os.h"

/* ---- the confinement's layers ---------------------------------------------- */

void sb_cf_platform_init(sb_confine *c) {
  c->ns.init = 0;
  c->netns.net = c->netns.user = -1;
}

void sb_cf_merged_only(sb_confine *c, const sb_confine_opts *o, bool root) {
  (void)o;
  (void)root;
  sb_cf_refuse(c, "overlay: its merged view needs Linux's mount namespaces and overlayfs, which %s lacks",
               SB_BUILD_NAME);
  sb_cf_layer(c, "mount_view", false, c->why);
}

void sb_cf_namespaces(sb_confine *c, const sb_confine_opts *o, bool root) {
  (void)root;
  if (o->confine)
    sb_cf_refuse(c,
                 "commands are not run: confine = true needs Linux's namespaces, Landlock and seccomp, which "
                 "this build (%s) does not have; set confine = false to run commands unconfined (the policy then "
                 "binds the file tools only, and options that need a layer still refuse them)",
                 SB_BUILD_NAME);
  const char *why = o->confine ? c->why : "confine = false";
  sb_cf_layer(c, "namespaces", false, why);
  sb_cf_layer(c, "mount_view", false, why);
  if (o->allow_outbound) {
    sb_cf_detail_str(sb_cf_layer(c, "network", false, "allow_outbound = true: commands use the host's network"), "mode",
                     "allowed");
    return;
  }
  sb_cf_refuse(c,
               "commands are not run: keeping them off the network needs Linux's network namespaces, which this "
               "build (%s) does not have; set allow_outbound = true to give them the host's network",
               SB_BUILD_NAME);
  sb_cf_detail_str(sb_cf_layer(c, "network", false, c->why), "mode", o->allowed_hosts ? "allowed_hosts" : "none");
}

void sb_cf_layers(sb_confine *c, const sb_confine_opts *o, const sb_mem *m, bool root) {
  (void)o;
  (void)m;
  (void)root;
  static const char *const none[] = {"capabilities", "seccomp", "setid_files", "no_new_privs", "landlock", "tmpdir"};
  for (size_t i = 0; i < sizeof none / sizeof *none; i++) sb_cf_layer(c, none[i], false, c->why);
}

void sb_cf_platform_release(sb_confine *c) { (void)c; }

int sb_confine_refresh(sb_confine *c) {
  (void)c;
  return 0; /* no view: rules refuse commands at setup */
}

const sb_netns *sb_confine_netns(const sb_confine *c) {
  (void)c;
  return NULL;
}

void sb_confine_probe(sb_confine_host *h) { h->userns = h->netns = h->namespaces = false; }

int sb_landlock_abi(void) { return 0; }

bool sb_seccomp_available(void) { return false; }

/* ---- in the child: resource limits and the identity ---------------------- */

enum { ST_RLIMIT = 1, ST_SETGROUPS, ST_SETGID, ST_SETUID, ST_COUNT };
static const char *const names[ST_COUNT] = {NULL, "rlimit", "setgroups", "setgid", "setuid"};

const char *sb_confine_step_name(int step) { return step > 0 && step < ST_COUNT ? names[step] : "confinement"; }

SB_CHILD_FN int sb_confine_join(const sb_confine_steps *s) {
  (void)s;
  return 0;
}

SB_CHILD_FN int sb_confine_limit(const sb_confine_steps *s) {
  for (int i = 0; i < s->nrlimits; i++)
    if (setrlimit(s->rlimits[i].resource, &s->rlimits[i].lim) != 0) return ST_RLIMIT;
  return 0;
}

SB_CHILD_FN int sb_confine_enter(const sb_confine_steps *s) {
  if (s->drop_user) {
    if (setgroups(0, NULL) != 0) return ST_SETGROUPS;
    if (setgid(s->gid) != 0) return ST_SETGID;
    if (setuid(s->uid) != 0) return ST_SETUID;
  }
  return 0;
}

SB_CHILD_FN int sb_confine_restrict(const sb_confine_steps *s) {
  (void)s;
  return 0;
}

/* ---- no cgroups: limits fall back to rlimits, tree kill to the group ----- */

bool sb_cgroup_base_open(sb_cgroup_base *b, const void *tag) {
  (void)tag;
  b->dirfd = -1;
  return false;
}

bool sb_cgroup_base_open_v1(sb_cgroup_base *b, const char *ctrl, const void *tag) {
  (void)ctrl;
  return sb_cgroup_base_open(b, tag);
}

bool sb_cgroup_enable(sb_cgroup_base *b, const char *ctrl) {
  (void)b;
  (void)ctrl;
  return false;
}

bool sb_cgroup_setting_add(sb_cgroup_base *b, const char *file, const char *value) {
  (void)b;
  (void)file;
  (void)value;
  return false;
}

void sb_cgroup_base_close(sb_cgroup_base *b) { b->dirfd = -1; }

bool sb_cgroup_leaf_create(sb_cgroup_base *b, sb_cgroup *c) {
  (void)b;
  c->dirfd = c->procs_fd = c->events_fd = -1;
  return false;
}

bool sb_cgroup_signal(sb_cgroup *c, int sig) {
  (void)c;
  (void)sig;
  return false;
}

bool sb_cgroup_empty(sb_cgroup *c) {
  (void)c;
  return true;
}

uint64_t sb_cgroup_counter(sb_cgroup *c, const char *file, const char *key) {
  (void)c;
  (void)file;
  (void)key;
  return 0;
}

void sb_cgroup_leaf_remove(sb_cgroup_base *b, sb_cgroup *c) {
  (void)b;
  c->dirfd = -1;
}
