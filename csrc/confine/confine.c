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
  c->steps.landlock_ruleset_fd = -1;
  c->steps.join_userns_fd = c->steps.join_netns_fd = -1;
  c->netns.net = c->netns.user = -1;
  for (int i = 0; i < SB_MAX_CGROUPS; i++) c->steps.cgroup_procs_fds[i] = -1;
}

static void add_rlimit(sb_confine_steps *s, int res, rlim_t v) {
  if (s->nrlimits >= (int)(sizeof s->rlimits / sizeof *s->rlimits)) return;
  s->rlimits[s->nrlimits].resource = res;
  s->rlimits[s->nrlimits].lim.rlim_cur = v;
  s->rlimits[s->nrlimits].lim.rlim_max = v;
  s->nrlimits++;
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

int sb_confine_setup(sb_confine *c, const sb_confine_opts *o, sb_exec *ex) {
  sb_confine_steps *s = &c->steps;
  bool root = geteuid() == 0;

  /* limits and tree kill: cgroups where possible */
  sb_exec_setup_cgroups(ex, true, &o->limits, c->limit_via);
  c->tree_kill = ex->cg.dirfd >= 0 ? "cgroup v2" : "process group";
  static const char *const names[SB_NLIM] = {"memory_limit", "pids_limit", "cpu_limit"};
  if (o->limits.memory && !c->limit_via[SB_LIM_MEMORY]) {
    add_rlimit(s, RLIMIT_AS, o->limits.memory); /* address space: coarser, but enforced */
    c->limit_via[SB_LIM_MEMORY] = "rlimit (address space)";
  }
  if (o->limits.pids && !c->limit_via[SB_LIM_PIDS] && !root) {
    add_rlimit(s, RLIMIT_NPROC, o->limits.pids); /* per user: not enforced for root */
    c->limit_via[SB_LIM_PIDS] = "rlimit (processes of the user)";
  }
  for (int i = 0; i < SB_NLIM; i++) {
    bool wanted = i == SB_LIM_MEMORY ? o->limits.memory : i == SB_LIM_PIDS ? o->limits.pids != 0
                                                                            : o->limits.cpu > 0;
    if (wanted && !c->limit_via[i]) {
      snprintf(c->why, sizeof c->why,
               "%s cannot be enforced here: no writable cgroup with the %s controller%s",
               names[i], i == SB_LIM_MEMORY ? "memory" : i == SB_LIM_PIDS ? "pids" : "cpu",
               i == SB_LIM_PIDS && root ? " (and the process rlimit does not bind root)" : "");
      return -1;
    }
  }
  if (o->file_size) {
    add_rlimit(s, RLIMIT_FSIZE, o->file_size);
    c->file_size_via = "rlimit";
  }
  add_rlimit(s, RLIMIT_CORE, 0); /* no core dumps of the host's secrets */

  /* network: the sandbox's own namespace, only a loopback in it */
  if (o->allow_outbound) {
    c->network = "allowed";
  } else {
    if (sb_netns_create(&c->netns, !root, c->why, sizeof c->why) != 0) {
      c->refuse = true; /* no network isolation, no commands */
      c->network = "unavailable";
      return 0;
    }
    s->join_userns_fd = c->netns.user;
    s->join_netns_fd = c->netns.net;
    c->network = root ? "none (a network namespace with only loopback)"
                      : "none (user and network namespace with only loopback)";
  }

  if (o->drop_user) {
    if (!root) {
      snprintf(c->why, sizeof c->why, "user: dropping to another uid needs the host to run as root");
      return -1;
    }
    s->drop_user = true;
    s->uid = o->uid;
    s->gid = o->gid;
  }

  if (!o->confine) return 0;
  s->no_new_privs = true;
  int abi = getenv("SANDBOX_NO_LANDLOCK") ? 0 : sb_landlock_abi();
  c->landlock_abi = abi;
  if (abi < 1) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why,
             "commands are not run: confinement needs Landlock, which this kernel does not offer "
             "(not built in, or missing from lsm=); set confine = false to run them unconfined");
    return 0;
  }
  if (make_tmpdir(c, o) != 0) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why, "commands are not run: cannot create a private TMPDIR (%s)",
             strerror(errno));
    return 0;
  }
  /* read_paths join the system directories commands may read and run */
  const char *rx[64];
  size_t n = 0;
  for (size_t i = 0; sb_landlock_system_rx[i] && n < 63; i++) rx[n++] = sb_landlock_system_rx[i];
  for (size_t i = 0; o->extra_rx && o->extra_rx[i] && n < 63; i++) rx[n++] = o->extra_rx[i];
  rx[n] = NULL;
  sb_landlock_policy pol = {
      .abi = abi, .deny_tcp = false, /* the namespace already isolates the network */
      .root_fd = o->root_fd, .ro_fds = o->ro_fds,
      .nro = o->nro, .rx_paths = rx, .ro_paths = sb_landlock_system_ro, .rw_dir = c->tmpdir};
  c->ruleset_fd = sb_landlock_build(&pol, c->why, sizeof c->why);
  if (c->ruleset_fd < 0) {
    c->refuse = true;
    return 0;
  }
  s->landlock_ruleset_fd = c->ruleset_fd;
  return 0;
}

void sb_confine_release(sb_confine *c) {
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
