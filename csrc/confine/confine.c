#include "confine/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine/landlock.h"
#include "fs/tree.h"

void sb_confine_init(sb_confine *c) {
  memset(c, 0, sizeof *c);
  c->ruleset_fd = -1;
  c->tmp_parent = -1;
  sb_confine_steps_init(&c->steps);
  sb_limits_init(&c->limits);
  c->netns.net = c->netns.user = -1;
}

/* ---- the report ------------------------------------------------------------ */

static sb_layer *layer(sb_confine *c, const char *name, bool enforced, const char *why) {
  if (c->nlayers >= SB_MAX_LAYERS) return NULL;
  sb_layer *l = &c->layers[c->nlayers++];
  memset(l, 0, sizeof *l);
  l->name = name;
  l->enforced = enforced;
  l->why = enforced ? NULL : why;
  return l;
}

static void detail_str(sb_layer *l, const char *key, const char *s) {
  if (!l || l->ndetails >= 4 || !s) return;
  l->details[l->ndetails].key = key;
  l->details[l->ndetails].type = SB_DETAIL_STR;
  l->details[l->ndetails++].s = s;
}

static void detail_int(sb_layer *l, const char *key, long long i, int type) {
  if (!l || l->ndetails >= 4) return;
  l->details[l->ndetails].key = key;
  l->details[l->ndetails].type = type;
  l->details[l->ndetails++].i = i;
}

/* ---- layers -------------------------------------------------------------- */

static void add_rlimit(sb_confine_steps *s, int res, rlim_t v) {
  if (s->nrlimits >= SB_MAX_RLIMITS) return;
  s->rlimits[s->nrlimits].resource = res;
  s->rlimits[s->nrlimits].lim.rlim_cur = v;
  s->rlimits[s->nrlimits].lim.rlim_max = v;
  s->nrlimits++;
}

/* Limits: cgroups where possible, rlimit fallbacks, else fail closed. */
static int setup_limits(sb_confine *c, const sb_confine_opts *o, bool root) {
  sb_confine_steps *s = &c->steps;
  sb_limits_setup(&c->limits, true, &o->limits, c);
  const char **via = c->limits.via;
  layer(c, "tree_kill", true, NULL);
  detail_str(&c->layers[c->nlayers - 1], "via", c->limits.tree.dirfd >= 0 ? "cgroup v2" : "process group");
  if (o->limits.memory && !via[SB_LIM_MEMORY]) {
    add_rlimit(s, RLIMIT_AS, o->limits.memory); /* address space: coarser, but enforced */
    via[SB_LIM_MEMORY] = "rlimit";
  }
  if (o->limits.pids && !via[SB_LIM_PIDS] && !root) {
    add_rlimit(s, RLIMIT_NPROC, o->limits.pids); /* per user: not enforced for root */
    via[SB_LIM_PIDS] = "rlimit";
  }
  static const char *const names[SB_NLIM] = {"memory_limit", "pids_limit", "cpu_limit"};
  static const char *const ctrl[SB_NLIM] = {"memory", "pids", "cpu"};
  for (int i = 0; i < SB_NLIM; i++) {
    bool wanted = i == SB_LIM_MEMORY ? o->limits.memory != 0 : i == SB_LIM_PIDS ? o->limits.pids != 0
                                                                                 : o->limits.cpu > 0;
    if (wanted && !via[i]) {
      snprintf(c->why, sizeof c->why,
               "%s cannot be enforced here: no writable cgroup with the %s controller%s",
               names[i], ctrl[i], i == SB_LIM_PIDS && root ? " (and the process rlimit does not bind root)" : "");
      return -1;
    }
    sb_layer *l = layer(c, names[i], wanted, "not set");
    detail_str(l, "via", via[i]);
  }
  if (o->file_size) add_rlimit(s, RLIMIT_FSIZE, o->file_size);
  sb_layer *l = layer(c, "file_size_limit", o->file_size != 0, "not set");
  if (o->file_size) detail_str(l, "via", "rlimit");
  add_rlimit(s, RLIMIT_CORE, 0); /* no core dumps of the host's secrets */
  return 0;
}

/* Network: the sandbox's own namespace, only a loopback in it. */
static void setup_network(sb_confine *c, const sb_confine_opts *o, bool root) {
  sb_confine_steps *s = &c->steps;
  if (o->allow_outbound) {
    sb_layer *l = layer(c, "network", false, "allow_outbound = true: commands use the host's network");
    detail_str(l, "mode", "allowed");
    return;
  }
  if (sb_netns_create(&c->netns, !root, c->why, sizeof c->why) != 0) {
    c->refuse = true; /* no network isolation, no commands */
    detail_str(layer(c, "network", false, c->why), "mode", "none");
    return;
  }
  s->join_userns_fd = c->netns.user;
  s->join_netns_fd = c->netns.net;
  sb_layer *l = layer(c, "network", true, NULL);
  detail_str(l, "mode", o->allowed_hosts ? "allowed_hosts" : "none");
  detail_str(l, "namespace", root ? "network" : "user+network");
}

/* A private temporary directory for the commands (they get TMPDIR): /tmp
 * itself stays out of their reach. */
static int make_tmpdir(sb_confine *c, const sb_confine_opts *o) {
  const char *base = getenv("TMPDIR");
  if (!base || base[0] != '/') base = "/tmp";
  char tmpl[512];
  snprintf(tmpl, sizeof tmpl, "%s/sandbox-tmp-XXXXXX", base);
  if (!mkdtemp(tmpl)) return -1;
  if (o->drop_user && chown(tmpl, o->uid, o->gid) != 0) {
    rmdir(tmpl);
    return -1;
  }
  char *slash = strrchr(tmpl, '/');
  *slash = '\0';
  c->tmp_parent = open(tmpl[0] ? tmpl : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  snprintf(c->tmp_name, sizeof c->tmp_name, "%s", slash + 1);
  *slash = '/';
  snprintf(c->tmpdir, sizeof c->tmpdir, "%s", tmpl);
  return c->tmp_parent < 0 ? -1 : 0;
}

/* no_new_privs, Landlock over the file system, signals and abstract unix
 * sockets, and the private TMPDIR: only with confine = true. */
static void setup_landlock(sb_confine *c, const sb_confine_opts *o) {
  sb_confine_steps *s = &c->steps;
  const char *off = "confine = false";
  if (!o->confine) {
    layer(c, "no_new_privs", false, off);
    layer(c, "landlock", false, off);
    layer(c, "tmpdir", false, off);
    return;
  }
  s->no_new_privs = true;
  layer(c, "no_new_privs", true, NULL);
  int abi = getenv("SANDBOX_NO_LANDLOCK") ? 0 : sb_landlock_abi(); /* test switch */
  c->landlock_abi = abi;
  if (abi < 1) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why,
             "commands are not run: confinement needs Landlock, which this kernel does not offer "
             "(not built in, or missing from lsm=); set confine = false to run them unconfined");
    layer(c, "landlock", false, c->why);
    layer(c, "tmpdir", false, "needs Landlock");
    return;
  }
  if (make_tmpdir(c, o) != 0) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why, "commands are not run: cannot create a private TMPDIR (%s)",
             strerror(errno));
    layer(c, "landlock", false, c->why);
    layer(c, "tmpdir", false, c->why);
    return;
  }
  /* read_paths join the system directories commands may read and run */
  const char *rx[SB_MAX_READ_PATHS + 16];
  size_t n = 0, cap = sizeof rx / sizeof *rx - 1;
  for (size_t i = 0; sb_landlock_system_rx[i] && n < cap; i++) rx[n++] = sb_landlock_system_rx[i];
  for (size_t i = 0; o->read_paths && o->read_paths[i] && n < cap; i++) rx[n++] = o->read_paths[i];
  rx[n] = NULL;
  sb_landlock_policy pol = {
      .abi = abi, .deny_tcp = false, /* the namespace already isolates the network */
      .root_fd = o->tree.root_fd, .ro_fds = o->tree.ro_fds,
      .nro = o->tree.nro, .rx_paths = rx, .ro_paths = sb_landlock_system_ro, .rw_dir = c->tmpdir};
  c->ruleset_fd = sb_landlock_build(&pol, c->why, sizeof c->why);
  if (c->ruleset_fd < 0) {
    c->refuse = true;
    layer(c, "landlock", false, c->why);
    layer(c, "tmpdir", false, c->why);
    return;
  }
  s->landlock_ruleset_fd = c->ruleset_fd;
  sb_layer *l = layer(c, "landlock", true, NULL);
  detail_int(l, "abi", abi, SB_DETAIL_INT);
  detail_str(l, "filesystem", "system directories read+execute, the root read+write");
  detail_int(l, "scoped", abi >= 6, SB_DETAIL_BOOL); /* signals and abstract unix sockets */
  detail_str(l, "proc", "hidden");
  detail_str(layer(c, "tmpdir", true, NULL), "path", c->tmpdir);
}

int sb_confine_setup(sb_confine *c, const sb_confine_opts *o) {
  bool root = geteuid() == 0;
  c->enabled = o->confine;
  if (setup_limits(c, o, root) != 0) return -1;
  setup_network(c, o, root);
  if (o->drop_user) {
    if (!root) {
      snprintf(c->why, sizeof c->why, "user: dropping to another uid needs the host to run as root");
      return -1;
    }
    c->steps.drop_user = true;
    c->steps.uid = o->uid;
    c->steps.gid = o->gid;
    sb_layer *l = layer(c, "user", true, NULL);
    detail_int(l, "uid", o->uid, SB_DETAIL_INT);
    detail_int(l, "gid", o->gid, SB_DETAIL_INT);
  } else {
    layer(c, "user", false, "not set: commands run as the host's user");
  }
  if (!c->refuse) setup_landlock(c, o);
  else if (o->confine) layer(c, "landlock", false, c->why);
  return 0;
}

const sb_netns *sb_confine_netns(const sb_confine *c) {
  return !c->refuse && c->netns.net >= 0 ? &c->netns : NULL;
}

void sb_confine_release(sb_confine *c) {
  sb_limits_close(&c->limits);
  sb_netns_close(&c->netns);
  if (c->ruleset_fd >= 0) close(c->ruleset_fd);
  c->ruleset_fd = -1;
  if (c->tmp_parent >= 0) {
    uint64_t freed = 0;
    sb_tree_remove(c->tmp_parent, c->tmp_name, &freed);
    close(c->tmp_parent);
    c->tmp_parent = -1;
  }
}
