#include "confine/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "confine/landlock.h"
#include "confine/system.h"
#include "fs/tree.h"

void sb_confine_init(sb_confine *c) {
  memset(c, 0, sizeof *c);
  c->ruleset_fd = -1;
  c->merged_fd = -1;
  c->upper_fd = -1;
  c->tmp_parent = -1;
  sb_confine_steps_init(&c->steps);
  sb_limits_init(&c->limits);
  sb_ns_init(&c->ns);
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
    bool wanted = i == SB_LIM_MEMORY ? o->limits.memory != 0
        : i == SB_LIM_PIDS           ? o->limits.pids != 0
                                     : o->limits.cpu > 0;
    if (wanted && !via[i]) {
      snprintf(c->why, sizeof c->why, "%s cannot be enforced here: no writable cgroup with the %s controller%s",
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

/* ---- the policy (SPEC §6.1) --------------------------------------------- */

static bool root_read_only(const sb_confine_opts *o) { return (o->policy && o->policy->read_only) || o->mode == 'r'; }

/* Is `dir` the root or above it? */
static bool covers(const char *dir, const char *root) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  if (n == 1 && dir[0] == '/') return true;
  return strncmp(root, dir, n) == 0 && (root[n] == '\0' || root[n] == '/');
}

/* Landlock's rules add up along a path: where a tree commands may read is
 * the root or lies above it, mode "w" cannot keep them from reading the
 * root. That tree, or NULL. */
static const char *reads_above_root(const sb_confine_opts *o, char *buf, size_t cap) {
  const char *root = o->root_path;
  static const char *const view_rw[] = {"/tmp", "/dev/shm", "/proc", "/dev/pts", NULL};
  for (size_t i = 0; o->namespaces && view_rw[i]; i++)
    if (covers(view_rw[i], root)) return view_rw[i];
  for (size_t i = 0; sb_system_rx[i]; i++)
    if (covers(sb_system_rx[i], root)) return sb_system_rx[i];
  for (size_t i = 0; sb_system_ro[i]; i++)
    if (covers(sb_system_ro[i], root)) return sb_system_ro[i];
  for (size_t i = 0; o->read_paths && o->read_paths[i]; i++)
    if (covers(o->read_paths[i], root)) return o->read_paths[i];
  for (size_t i = 0; i < o->tree.nro; i++)
    if (sb_fd_path(o->tree.ro_fds[i], buf, cap) == 0 && covers(buf, root)) return buf;
  return NULL;
}

/* Commands fail closed with this reason (the first one stays). */
static void refuse(sb_confine *c, const char *fmt, const char *arg) {
  if (c->refuse) return;
  c->refuse = true;
  snprintf(c->why, sizeof c->why, fmt, arg);
}

/* What of the policy no layer can bind here: commands are refused before
 * any layer is set up. */
static void policy_needs(sb_confine *c, const sb_confine_opts *o) {
  bool rules = o->policy && sb_policy_has_rules(o->policy);
  const char *off = !o->confine ? "confine = false" : "confine = {namespaces = false}";
  if (!o->confine && (root_read_only(o) || o->mode == 'w'))
    refuse(c,
           "commands are not run: %s, and only confinement (the mount view and Landlock) keeps commands "
           "to read_only and mode as the file tools are kept; confine them, or drop the option",
           off);
  char buf[4096];
  const char *above = o->confine && o->mode == 'w' ? reads_above_root(o, buf, sizeof buf) : NULL;
  if (above)
    refuse(c,
           "commands are not run: mode = \"w\" keeps commands from reading the root through Landlock, but "
           "the root lies in %.200s, which commands may read (Landlock's rules add up along a path); put "
           "base_dir elsewhere",
           above);
  if (rules && (!o->confine || !o->namespaces))
    refuse(c,
           "commands are not run: the deny and allow rules bind commands through the sandbox's mount view, "
           "which %s turns off; confine = true makes it, or drop the rules",
           off);
  if (o->commands && o->max_disk != SB_UNLIMITED && !o->disk_files_only && !c->upper_size) {
    if (o->overlay)
      refuse(c,
             "commands are not run: max_disk_usage binds them through an upper layer in memory of that "
             "size, which %s cannot keep: leave state_dir out, or set max_disk_usage_files_only = true to "
             "limit the file tools only",
             "a state_dir");
    else
      refuse(c,
             "commands are not run: max_disk_usage cannot bind them here: they write %s directly, and the "
             "kernel limits the bytes of one directory only with a project quota, which this library does not "
             "set up; use sandbox.overlay (its upper layer is then a file system of max_disk_usage bytes), "
             "or set max_disk_usage_files_only = true to limit the file tools only",
             "the root");
  }
}

/* One report entry per policy item: enforced for commands, or why not. */
static void report_policy(sb_confine *c, const sb_confine_opts *o) {
  bool view = c->ns.init > 0;
  const char *why = c->refuse ? c->why : NULL;
  sb_layer *l;
  if (root_read_only(o) || o->mode == 'w') {
    l = layer(c, root_read_only(o) ? "read_only" : "mode", !why, why);
    detail_str(l, "via",
               root_read_only(o) ? (view ? "the root mounted read-only, and Landlock without write rights"
                                         : "Landlock without write rights")
                                 : "Landlock: the root may be written and listed, its files never read or run");
  }
  if (!root_read_only(o)) layer(c, "read_only", false, "not set: commands may change the root");
  if (o->mode != 'w') layer(c, "mode", false, o->mode == 'r' ? "\"r\": see read_only" : "not set (\"rw\")");
  bool rules = o->policy && sb_policy_has_rules(o->policy);
  l = layer(c, "rules", rules && !why, rules ? why : "not set");
  if (rules && !why) {
    detail_str(l, "via",
               o->policy->has_allow ? "the mount view shows only allowed paths (and the directories leading to them), "
                                      "denied ones masked; checked again before each command"
                                    : "the mount view masks denied paths and pins the directories leading to them; "
                                      "checked again before each command");
    detail_int(l, "deny", (long long)o->policy->deny.n, SB_DETAIL_INT);
    detail_int(l, "allow", (long long)o->policy->allow.n, SB_DETAIL_INT);
  }
  if (o->max_disk == SB_UNLIMITED) {
    layer(c, "disk", false, "not set");
  } else if (o->disk_files_only) {
    layer(c, "disk", false, "max_disk_usage_files_only = true: max_disk_usage binds the file tools only");
  } else if (c->upper_size && c->upper_fd >= 0) {
    l = layer(c, "disk", true, NULL);
    detail_str(l, "via",
               "the overlay's upper layer is a tmpfs of max_disk_usage bytes (in memory), which the "
               "kernel holds commands to");
    detail_int(l, "bytes", (long long)c->upper_size, SB_DETAIL_INT);
    detail_int(l, "inodes", (long long)sb_ns_upper_inodes(c->upper_size), SB_DETAIL_INT);
  } else if (!o->commands) {
    layer(c, "disk", false, "no commands: max_disk_usage binds the file tools, the only writers");
  } else {
    layer(c, "disk", false, c->why);
  }
  layer(c, "extensions", false,
        o->extensions ? "a file-tool policy: commands (compilers, package managers) read and write "
                        "files of any extension"
                      : "not set");
}

/* Deny and allow rules in the view: the trees as the host sees them,
 * unmasked, walked now and before each command. */
static void setup_rules(sb_confine *c, const sb_confine_opts *o, const sb_mem *m) {
  if (c->refuse || !o->policy || !sb_policy_has_rules(o->policy) || c->ns.init <= 0) return;
  int fds[1 + SB_NS_MAX_RO];
  size_t n = 0;
  fds[n++] = c->merged_fd >= 0 ? c->merged_fd : o->tree.root_fd;
  for (size_t i = 0; i < o->tree.nro && n < sizeof fds / sizeof *fds; i++) fds[n++] = o->tree.ro_fds[i];
  c->rules = sb_view_rules_new(m, o->policy, fds, n, o->policy->has_allow);
  if (!c->rules) {
    refuse(c, "commands are not run: %s", "out of memory for the sandbox rules");
    return;
  }
  char why[400];
  if (sb_view_rules_sync(c->rules, &c->ns, why, sizeof why) != 0) refuse(c, "commands are not run: %s", why);
}

int sb_confine_refresh(sb_confine *c) {
  if (!c->rules) return 0;
  char why[400];
  if (sb_view_rules_sync(c->rules, &c->ns, why, sizeof why) == 0) return 0;
  snprintf(c->why, sizeof c->why, "this command is not run: %s", why);
  return -1;
}

/* The sandbox's own namespaces and mount view (confine/ns.c), or without
 * them (namespaces = false, or confine = false) a network namespace alone
 * when outbound traffic is off. */
static void setup_namespaces(sb_confine *c, const sb_confine_opts *o, bool root) {
  sb_confine_steps *s = &c->steps;
  bool own = o->confine && o->namespaces;
  if (own) {
    sb_ns_view v = {.root_fd = o->tree.root_fd,
                    .root_path = o->root_path,
                    .ro_fds = o->tree.ro_fds,
                    .nro = o->tree.nro,
                    .read_paths = o->read_paths,
                    .ca_bundle = o->ca_bundle,
                    .tmp_size = o->tmp_size,
                    .root_ro = root_read_only(o),
                    .skeleton = o->policy && o->policy->has_allow,
                    .network = !o->allow_outbound,
                    .userns = !root,
                    .upper_fd = o->overlay ? o->upper_fd : -1,
                    .work_fd = o->overlay ? o->work_fd : -1,
                    .upper_size = c->upper_size};
    if (sb_ns_create(&c->ns, &v, c->why, sizeof c->why) != 0) {
      c->refuse = true; /* fail closed: no namespaces, no commands */
      layer(c, "namespaces", false, c->why);
      layer(c, "mount_view", false, c->why);
      detail_str(layer(c, "network", false, c->why), "mode", o->allow_outbound ? "allowed" : "none");
      return;
    }
    if (c->ns.pidfd >= 0) { /* all at once through init's pidfd */
      s->ns_pidfd = c->ns.pidfd;
      s->ns_flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWPID |
          (v.network ? CLONE_NEWNET : 0) | (v.userns ? CLONE_NEWUSER : 0);
    } else {
      for (int i = 0; i < SB_NS_COUNT; i++) s->ns_fds[i] = c->ns.fd[i];
    }
    sb_ns_netns(&c->ns, &c->nsnet);
    snprintf(s->view_root, sizeof s->view_root, "%s", o->root_path);
    /* the host's file operations on an overlay: a clone of its mount taken
     * before anything was masked in it (without open_tree, the view's own) */
    if (o->overlay && sb_ns_request(&c->ns, SB_NS_CLONE, 0, "", NULL, &c->merged_fd) != 0)
      c->merged_fd = sb_ns_open(&c->ns, o->root_path);
    if (c->upper_size && sb_ns_request(&c->ns, SB_NS_UPPER, 0, "", NULL, &c->upper_fd) != 0) {
      snprintf(c->why, sizeof c->why, "overlay: cannot reach the upper layer in memory: %s", strerror(errno));
      c->refuse = true;
      layer(c, "mount_view", false, c->why);
      return;
    }
    if (o->overlay && c->merged_fd < 0) {
      snprintf(c->why, sizeof c->why, "overlay: cannot open the merged view: %s", strerror(errno));
      c->refuse = true;
      layer(c, "mount_view", false, c->why);
      return;
    }
    sb_layer *l = layer(c, "namespaces", true, NULL);
    detail_str(l, "own", v.network ? "pid ipc uts cgroup mount net" : "pid ipc uts cgroup mount");
    detail_int(l, "user", v.userns, SB_DETAIL_BOOL);
    detail_int(l, "init", c->ns.init, SB_DETAIL_INT);
    l = layer(c, "mount_view", true, NULL);
    detail_str(l, "root", o->root_path);
    detail_str(l, "proc", "own pid namespace, /proc/sys read-only");
    detail_str(l, "sys", "absent");
    snprintf(c->tmpdir, sizeof c->tmpdir, "/tmp");
  } else {
    const char *why = !o->confine ? "confine = false" : "confine = {namespaces = false}";
    layer(c, "namespaces", false, why);
    layer(c, "mount_view", false, why);
    if (o->overlay) {
      snprintf(c->why, sizeof c->why,
               "overlay: the merged view is mounted in the sandbox's own mount "
               "namespace, which %s turns off",
               why);
      c->refuse = true;
      return;
    }
  }
  if (o->allow_outbound) {
    sb_layer *l = layer(c, "network", false, "allow_outbound = true: commands use the host's network");
    detail_str(l, "mode", "allowed");
    return;
  }
  if (!own) {
    if (sb_netns_create(&c->netns, !root, c->why, sizeof c->why) != 0) {
      c->refuse = true; /* no network isolation, no commands */
      size_t n = strlen(c->why);
      snprintf(c->why + n, sizeof c->why - n,
               "; commands cannot be cut off from the network here: "
               "allow user namespaces, run as root, or set allow_outbound = true to give them the "
               "host's network");
      detail_str(layer(c, "network", false, c->why), "mode", "none");
      return;
    }
    s->ns_fds[SB_NS_USER] = c->netns.user;
    s->ns_fds[SB_NS_NET] = c->netns.net;
  }
  sb_layer *l = layer(c, "network", true, NULL);
  detail_str(l, "mode", o->allowed_hosts ? "allowed_hosts" : "none");
  detail_str(l, "namespace", own ? "the sandbox's" : root ? "network" : "user+network");
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

/* Capabilities: empty sets; as root (or holding them in the sandbox's user
 * namespace) the bounding set and securebits too, so nothing can be
 * regained through execve. */
static void setup_caps(sb_confine *c, bool root) {
  sb_confine_steps *s = &c->steps;
  char buf[16];
  s->drop_caps = true;
  s->drop_bounding = root || c->ns.userns;
  s->cap_last = sb_read_small(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", buf, sizeof buf) > 0 ? atoi(buf) : 40;
  sb_layer *l = layer(c, "capabilities", true, NULL);
  detail_str(l, "sets",
             s->drop_bounding ? "empty (effective, permitted, inheritable, ambient, bounding)"
                              : "empty (effective, permitted, inheritable, ambient)");
}

static void setup_seccomp(sb_confine *c, const sb_confine_opts *o) {
  char why[160];
  if (!sb_seccomp_available()) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why,
             "commands are not run: confinement needs seccomp filters, which this "
             "kernel does not offer; set confine = false to run them unconfined");
    layer(c, "seccomp", false, c->why);
    return;
  }
  if (sb_seccomp_build(&c->seccomp, !o->namespaces, why, sizeof why) != 0) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why, "commands are not run: %s; set confine = false to run them unconfined", why);
    layer(c, "seccomp", false, c->why);
    return;
  }
  c->fprog.len = c->seccomp.len;
  c->fprog.filter = c->seccomp.prog;
  c->steps.seccomp = &c->fprog;
  sb_layer *l = layer(c, "seccomp", true, NULL);
  detail_int(l, "denied", c->seccomp.denied, SB_DETAIL_INT);
  detail_str(l, "abi", "native only");
  detail_str(layer(c, "setid_files", true, NULL), "via", "seccomp (chmod, open, mknod modes; xattrs)");
}

/* no_new_privs, Landlock over the file system, signals and abstract unix
 * sockets, and the private TMPDIR (without a mount view). */
static void setup_landlock(sb_confine *c, const sb_confine_opts *o) {
  sb_confine_steps *s = &c->steps;
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
  bool view = c->ns.init > 0;
  if (!view && make_tmpdir(c, o) != 0) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why, "commands are not run: cannot create a private TMPDIR (%s)", strerror(errno));
    layer(c, "landlock", false, c->why);
    layer(c, "tmpdir", false, c->why);
    return;
  }
  /* read_paths join the system directories commands may read and run */
  const char *rx[SB_MAX_READ_PATHS + 16];
  size_t n = 0, cap = sizeof rx / sizeof *rx - 1;
  for (size_t i = 0; sb_system_rx[i] && n < cap; i++) rx[n++] = sb_system_rx[i];
  for (size_t i = 0; o->read_paths && o->read_paths[i] && n < cap; i++) rx[n++] = o->read_paths[i];
  if (!view && o->ca_bundle && n < cap) rx[n++] = o->ca_bundle; /* read where it is */
  rx[n] = NULL;
  /* with a mount view, its private trees are new: rules need their fds */
  int fds[5] = {-1, -1, -1, -1, -1}; /* /tmp, /dev/shm, /dev/pts, /proc, / */
  if (view) {
    static const char *const vp[5] = {"/tmp", "/dev/shm", "/dev/pts", "/proc", "/"};
    for (int i = 0; i < 5; i++)
      if ((fds[i] = sb_ns_open(&c->ns, vp[i])) < 0) {
        snprintf(c->why, sizeof c->why, "cannot open %s of the mount view: %s", vp[i], strerror(errno));
        break;
      }
  }
  /* trees a skeleton shows: their rules go on the skeleton's own root too
   * (Landlock follows the view's mounts up, never the real tree's) */
  int vfds[1 + SB_NS_MAX_RO];
  size_t nview = 0;
  if (view && o->policy && o->policy->has_allow) {
    vfds[nview++] = sb_ns_open(&c->ns, o->root_path);
    for (size_t i = 0; i < o->tree.nro && nview < sizeof vfds / sizeof *vfds; i++) {
      char p[4096];
      vfds[nview++] = sb_fd_path(o->tree.ro_fds[i], p, sizeof p) == 0 ? sb_ns_open(&c->ns, p) : -1;
    }
  }
  sb_landlock_policy pol = {.abi = abi,
                            .deny_tcp = false, /* the namespace already isolates the network */
                            .root_fd = c->merged_fd >= 0 ? c->merged_fd : o->tree.root_fd,
                            .ro_fds = o->tree.ro_fds,
                            .root_access = root_read_only(o) ? SB_LL_ROOT_RO
                                : o->mode == 'w'             ? SB_LL_ROOT_WO
                                                             : SB_LL_ROOT_RW,
                            .view_fds = vfds,
                            .nview = nview,
                            .nro = o->tree.nro,
                            .rx_paths = rx,
                            .ro_paths = sb_system_ro,
                            .dev_paths = sb_system_dev,
                            .rw_dir = view ? NULL : c->tmpdir,
                            .rw_fds = fds,
                            .nrw = view ? 2 : 0,
                            .tty_fd = fds[2],
                            .proc_fd = fds[3],
                            .list_fd = fds[4]};
  c->ruleset_fd = view && fds[4] < 0 ? -1 : sb_landlock_build(&pol, c->why, sizeof c->why);
  for (int i = 0; i < 5; i++)
    if (fds[i] >= 0) close(fds[i]);
  for (size_t i = 0; i < nview; i++)
    if (vfds[i] >= 0) close(vfds[i]);
  if (c->ruleset_fd < 0) {
    c->refuse = true;
    layer(c, "landlock", false, c->why);
    layer(c, "tmpdir", false, c->why);
    return;
  }
  s->landlock_ruleset_fd = c->ruleset_fd;
  sb_layer *l = layer(c, "landlock", true, NULL);
  detail_int(l, "abi", abi, SB_DETAIL_INT);
  detail_str(l, "filesystem",
             pol.root_access == SB_LL_ROOT_RO       ? "system directories read+execute, the root read+execute"
                 : pol.root_access == SB_LL_ROOT_WO ? "system directories read+execute, the root write+list"
                                                    : "system directories read+execute, the root read+write");
  detail_int(l, "scoped", abi >= 6, SB_DETAIL_BOOL); /* signals and abstract unix sockets */
  l = layer(c, "tmpdir", true, NULL);
  detail_str(l, "path", c->tmpdir);
  if (view) {
    detail_int(l, "size", (long long)o->tmp_size, SB_DETAIL_INT);
    detail_int(l, "inodes", (long long)sb_ns_tmp_inodes(o->tmp_size), SB_DETAIL_INT);
    detail_str(l, "shm", "/dev/shm shares /tmp's bytes and inodes");
  }
}

/* An OverlaySandbox that runs no commands: its namespace holds the merged
 * mount the file operations use, and nothing more is made (no view for
 * commands, no network, limits, Landlock or seccomp). */
static void setup_merged_only(sb_confine *c, const sb_confine_opts *o, bool root) {
  sb_ns_view v = {.root_fd = o->tree.root_fd,
                  .root_path = o->root_path,
                  .ro_fds = o->tree.ro_fds,
                  .nro = o->tree.nro,
                  .tmp_size = o->tmp_size,
                  .minimal = true,
                  .userns = !root,
                  .upper_fd = o->upper_fd,
                  .work_fd = o->work_fd};
  const char *none = "exec = false: no commands";
  if (sb_ns_create(&c->ns, &v, c->why, sizeof c->why) != 0 ||
      (sb_ns_request(&c->ns, SB_NS_CLONE, 0, "", NULL, &c->merged_fd) != 0 &&
       (c->merged_fd = sb_ns_open(&c->ns, o->root_path)) < 0)) {
    if (!c->why[0]) snprintf(c->why, sizeof c->why, "overlay: cannot open the merged view: %s", strerror(errno));
    c->refuse = true;
    layer(c, "mount_view", false, c->why);
    return;
  }
  sb_layer *l = layer(c, "namespaces", true, NULL);
  detail_str(l, "own", v.userns ? "user mount (the overlay's mount only)" : "mount (the overlay's mount only)");
  detail_int(l, "init", c->ns.init, SB_DETAIL_INT);
  layer(c, "mount_view", false, none);
}

int sb_confine_setup(sb_confine *c, const sb_confine_opts *o, const sb_mem *m) {
  bool root = geteuid() == 0;
  c->enabled = o->confine;
  if (o->overlay && !o->commands && o->confine && o->namespaces) {
    c->enabled = false;
    setup_merged_only(c, o, root);
    return 0;
  }
  /* an overlay's writes held to max_disk_usage by the kernel: its upper
   * layer on a tmpfs of that size (a temporary state only: it is memory) */
  if (o->overlay && o->commands && o->confine && o->namespaces && o->max_disk != SB_UNLIMITED && !o->disk_files_only &&
      o->state_temporary)
    c->upper_size = o->max_disk;
  if (setup_limits(c, o, root) != 0) return -1;
  if (o->drop_user && !root) {
    snprintf(c->why, sizeof c->why, "user: dropping to another uid needs the host to run as root");
    return -1;
  }
  setup_namespaces(c, o, root);
  policy_needs(c, o);
  if (o->drop_user) {
    c->steps.drop_user = true;
    c->steps.uid = o->uid;
    c->steps.gid = o->gid;
    sb_layer *l = layer(c, "user", true, NULL);
    detail_int(l, "uid", o->uid, SB_DETAIL_INT);
    detail_int(l, "gid", o->gid, SB_DETAIL_INT);
  } else {
    layer(c, "user", false, "not set: commands run as the host's user");
  }
  const char *off = "confine = false";
  if (!o->confine) {
    static const char *const none[] = {"capabilities", "seccomp", "setid_files", "no_new_privs", "landlock", "tmpdir"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) layer(c, none[i], false, off);
  } else if (c->refuse && c->ns.init <= 0) {
    layer(c, "landlock", false, c->why);
  } else {
    setup_caps(c, root);
    setup_landlock(c, o);
    if (!c->refuse) setup_seccomp(c, o);
    setup_rules(c, o, m);
  }
  report_policy(c, o);
  return 0;
}

const sb_netns *sb_confine_netns(const sb_confine *c) {
  if (c->refuse) return NULL;
  if (c->ns.init > 0) return c->ns.fd[SB_NS_NET] >= 0 ? &c->nsnet : NULL;
  return c->netns.net >= 0 ? &c->netns : NULL;
}

void sb_confine_release(sb_confine *c, const sb_mem *m) {
  (void)m;
  sb_view_rules_free(c->rules);
  c->rules = NULL;
  if (c->merged_fd >= 0) close(c->merged_fd);
  c->merged_fd = -1;
  if (c->upper_fd >= 0) close(c->upper_fd);
  c->upper_fd = -1;
  sb_ns_close(&c->ns); /* the init: everything in the namespace goes with it */
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
