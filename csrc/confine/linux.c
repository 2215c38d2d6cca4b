/* The Linux layers of the confinement (SPEC §6): the sandbox's namespaces
 * and mount view, capabilities, no_new_privs, Landlock, seccomp and the
 * rules in the view; confine/confine.c decides around them. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"
#include "base/child.h"
#include "confine/confine_impl.h"
#include "confine/landlock.h"
#include "confine/system.h"
#include "fs/tree.h"
#include "plat/proc.h"

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
    sb_cf_refuse(c, "commands are not run: %s", "out of memory for the sandbox rules");
    return;
  }
  char why[400];
  if (sb_view_rules_sync(c->rules, &c->ns, why, sizeof why) != 0) sb_cf_refuse(c, "commands are not run: %s", why);
}

int sb_confine_refresh(sb_confine *c) {
  if (!c->rules) return 0;
  char why[400];
  if (sb_view_rules_sync(c->rules, &c->ns, why, sizeof why) == 0) return 0;
  snprintf(c->why, sizeof c->why, "this command is not run: %s", why);
  return -1;
}

/* The paths commands may read and run: the system directories, then
 * read_paths (and without a view the CA bundle, read where it is). */
#define RX_MAX (SB_MAX_READ_PATHS + 16)
static void rx_paths(const char *rx[RX_MAX], const sb_confine_opts *o, bool view) {
  size_t n = 0, cap = RX_MAX - 1;
  for (size_t i = 0; sb_system_rx[i] && n < cap; i++) rx[n++] = sb_system_rx[i];
  for (size_t i = 0; o->read_paths && o->read_paths[i] && n < cap; i++) rx[n++] = o->read_paths[i];
  if (!view && o->ca_bundle && n < cap) rx[n++] = o->ca_bundle;
  rx[n] = NULL;
}

/* While the init builds the view: the Landlock rules for the host's own
 * paths (the system directories, read_paths), which do not need it;
 * setup_landlock adds the view's. A failure leaves no ruleset:
 * setup_landlock then builds it whole and says why. */
typedef struct {
  sb_confine *c;
  const sb_confine_opts *o;
} cf_arg;

static void landlock_meanwhile(void *arg) {
  cf_arg *a = arg;
  int abi = getenv("SANDBOX_NO_LANDLOCK") ? 0 : sb_landlock_abi();
  if (abi < 1) return;
  const char *rx[RX_MAX];
  rx_paths(rx, a->o, true);
  sb_landlock_policy pol = {.abi = abi,
                            .root_fd = -1,
                            .rx_paths = rx,
                            .ro_paths = sb_system_ro,
                            .dev_paths = sb_system_dev,
                            .tty_fd = -1,
                            .proc_fd = -1,
                            .list_fd = -1};
  char why[200];
  a->c->ruleset_fd = sb_landlock_build(&pol, why, sizeof why);
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
                    .root_ro = sb_cf_root_read_only(o),
                    .skeleton = o->policy && o->policy->has_allow,
                    .network = !o->allow_outbound,
                    .userns = !root,
                    .upper_fd = o->overlay ? o->upper_fd : -1,
                    .work_fd = o->overlay ? o->work_fd : -1,
                    .upper_size = c->upper_size};
    cf_arg early = {c, o};
    if (c->ruleset_fd < 0) {
      v.meanwhile = landlock_meanwhile;
      v.meanwhile_arg = &early;
    }
    if (sb_ns_create(&c->ns, &v, c->why, sizeof c->why) != 0) {
      c->refuse = true; /* fail closed: no namespaces, no commands */
      sb_cf_layer(c, "namespaces", false, c->why);
      sb_cf_layer(c, "mount_view", false, c->why);
      sb_cf_detail_str(sb_cf_layer(c, "network", false, c->why), "mode", o->allow_outbound ? "allowed" : "none");
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
      sb_cf_layer(c, "mount_view", false, c->why);
      return;
    }
    if (o->overlay && c->merged_fd < 0) {
      snprintf(c->why, sizeof c->why, "overlay: cannot open the merged view: %s", strerror(errno));
      c->refuse = true;
      sb_cf_layer(c, "mount_view", false, c->why);
      return;
    }
    sb_layer *l = sb_cf_layer(c, "namespaces", true, NULL);
    sb_cf_detail_str(l, "own", v.network ? "pid ipc uts cgroup mount net" : "pid ipc uts cgroup mount");
    sb_cf_detail_int(l, "user", v.userns, SB_DETAIL_BOOL);
    sb_cf_detail_int(l, "init", c->ns.init, SB_DETAIL_INT);
    l = sb_cf_layer(c, "mount_view", true, NULL);
    sb_cf_detail_str(l, "root", o->root_path);
    sb_cf_detail_str(l, "proc", "own pid namespace, /proc/sys read-only");
    sb_cf_detail_str(l, "sys", "absent");
    snprintf(c->tmpdir, sizeof c->tmpdir, "/tmp");
  } else {
    const char *why = !o->confine ? "confine = false" : "confine = {namespaces = false}";
    sb_cf_layer(c, "namespaces", false, why);
    sb_cf_layer(c, "mount_view", false, why);
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
    sb_layer *l = sb_cf_layer(c, "network", false, "allow_outbound = true: commands use the host's network");
    sb_cf_detail_str(l, "mode", "allowed");
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
      sb_cf_detail_str(sb_cf_layer(c, "network", false, c->why), "mode", "none");
      return;
    }
    s->ns_fds[SB_NS_USER] = c->netns.user;
    s->ns_fds[SB_NS_NET] = c->netns.net;
  }
  sb_layer *l = sb_cf_layer(c, "network", true, NULL);
  sb_cf_detail_str(l, "mode", o->allowed_hosts ? "allowed_hosts" : "none");
  sb_cf_detail_str(l, "namespace", own ? "the sandbox's" : root ? "network" : "user+network");
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
  sb_layer *l = sb_cf_layer(c, "capabilities", true, NULL);
  sb_cf_detail_str(l, "sets",
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
    sb_cf_layer(c, "seccomp", false, c->why);
    return;
  }
  if (sb_seccomp_build(&c->seccomp, !o->namespaces, why, sizeof why) != 0) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why, "commands are not run: %s; set confine = false to run them unconfined", why);
    sb_cf_layer(c, "seccomp", false, c->why);
    return;
  }
  c->fprog.len = c->seccomp.len;
  c->fprog.filter = c->seccomp.prog;
  c->steps.seccomp = &c->fprog;
  sb_layer *l = sb_cf_layer(c, "seccomp", true, NULL);
  sb_cf_detail_int(l, "denied", c->seccomp.denied, SB_DETAIL_INT);
  sb_cf_detail_str(l, "abi", "native only");
  sb_cf_detail_str(sb_cf_layer(c, "setid_files", true, NULL), "via", "seccomp (chmod, open, mknod modes; xattrs)");
}

/* no_new_privs, Landlock over the file system, signals and abstract unix
 * sockets, and the private TMPDIR (without a mount view). */
static void setup_landlock(sb_confine *c, const sb_confine_opts *o) {
  sb_confine_steps *s = &c->steps;
  s->no_new_privs = true;
  sb_cf_layer(c, "no_new_privs", true, NULL);
  int abi = getenv("SANDBOX_NO_LANDLOCK") ? 0 : sb_landlock_abi(); /* test switch */
  c->landlock_abi = abi;
  if (abi < 1) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why,
             "commands are not run: confinement needs Landlock, which this kernel does not offer "
             "(not built in, or missing from lsm=); set confine = false to run them unconfined");
    sb_cf_layer(c, "landlock", false, c->why);
    sb_cf_layer(c, "tmpdir", false, "needs Landlock");
    return;
  }
  bool view = c->ns.init > 0;
  if (!view && make_tmpdir(c, o) != 0) {
    c->refuse = true;
    snprintf(c->why, sizeof c->why, "commands are not run: cannot create a private TMPDIR (%s)", strerror(errno));
    sb_cf_layer(c, "landlock", false, c->why);
    sb_cf_layer(c, "tmpdir", false, c->why);
    return;
  }
  const char *rx[RX_MAX];
  rx_paths(rx, o, view);
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
                            .root_access = sb_cf_root_read_only(o) ? SB_LL_ROOT_RO
                                : o->mode == 'w'                   ? SB_LL_ROOT_WO
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
  if (view && fds[4] < 0) {
    if (c->ruleset_fd >= 0) close(c->ruleset_fd);
    c->ruleset_fd = -1;
  } else if (c->ruleset_fd >= 0) { /* the host's own paths are in already (landlock_meanwhile) */
    pol.rx_paths = pol.ro_paths = pol.dev_paths = NULL;
    c->ruleset_fd = sb_landlock_add(c->ruleset_fd, &pol, c->why, sizeof c->why);
  } else {
    c->ruleset_fd = sb_landlock_build(&pol, c->why, sizeof c->why);
  }
  for (int i = 0; i < 5; i++)
    if (fds[i] >= 0) close(fds[i]);
  for (size_t i = 0; i < nview; i++)
    if (vfds[i] >= 0) close(vfds[i]);
  if (c->ruleset_fd < 0) {
    c->refuse = true;
    sb_cf_layer(c, "landlock", false, c->why);
    sb_cf_layer(c, "tmpdir", false, c->why);
    return;
  }
  s->landlock_ruleset_fd = c->ruleset_fd;
  sb_layer *l = sb_cf_layer(c, "landlock", true, NULL);
  sb_cf_detail_int(l, "abi", abi, SB_DETAIL_INT);
  sb_cf_detail_str(l, "filesystem",
                   pol.root_access == SB_LL_ROOT_RO       ? "system directories read+execute, the root read+execute"
                       : pol.root_access == SB_LL_ROOT_WO ? "system directories read+execute, the root write+list"
                                                          : "system directories read+execute, the root read+write");
  sb_cf_detail_int(l, "scoped", abi >= 6, SB_DETAIL_BOOL); /* signals and abstract unix sockets */
  l = sb_cf_layer(c, "tmpdir", true, NULL);
  sb_cf_detail_str(l, "path", c->tmpdir);
  if (view) {
    sb_cf_detail_int(l, "size", (long long)o->tmp_size, SB_DETAIL_INT);
    sb_cf_detail_int(l, "inodes", (long long)sb_ns_tmp_inodes(o->tmp_size), SB_DETAIL_INT);
    sb_cf_detail_str(l, "shm", "/dev/shm shares /tmp's bytes and inodes");
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
    sb_cf_layer(c, "mount_view", false, c->why);
    return;
  }
  sb_layer *l = sb_cf_layer(c, "namespaces", true, NULL);
  sb_cf_detail_str(l, "own", v.userns ? "user mount (the overlay's mount only)" : "mount (the overlay's mount only)");
  sb_cf_detail_int(l, "init", c->ns.init, SB_DETAIL_INT);
  sb_cf_layer(c, "mount_view", false, none);
}

const sb_netns *sb_confine_netns(const sb_confine *c) {
  if (c->refuse) return NULL;
  if (c->ns.init > 0) return c->ns.fd[SB_NS_NET] >= 0 ? &c->nsnet : NULL;
  return c->netns.net >= 0 ? &c->netns : NULL;
}

SB_CHILD_FN static int child_exit(void *arg) {
  (void)arg;
  _exit(0);
}

/* Can a child be created with these namespace flags? */
static int probe_clone(int flags) {
  void *stack = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | SB_MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return 0;
  pid_t pid = clone(child_exit, (char *)stack + 16384, flags | CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
  int ok = pid > 0;
  if (pid > 0)
    while (waitpid(pid, NULL, SB_WAIT_ALL) < 0 && errno == EINTR) {}
  munmap(stack, 16384);
  return ok;
}

void sb_confine_probe(sb_confine_host *h) {
  bool root = geteuid() == 0;
  h->userns = probe_clone(CLONE_NEWUSER);
  h->netns = probe_clone(CLONE_NEWNET | (root ? 0 : CLONE_NEWUSER));
  /* the set a confined sandbox makes for itself (confine/ns.c) */
  h->namespaces = probe_clone(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
                              CLONE_NEWNET | (root ? 0 : CLONE_NEWUSER));
}

void sb_cf_platform_init(sb_confine *c) {
  sb_ns_init(&c->ns);
  c->netns.net = c->netns.user = -1;
}

void sb_cf_merged_only(sb_confine *c, const sb_confine_opts *o, bool root) { setup_merged_only(c, o, root); }

void sb_cf_namespaces(sb_confine *c, const sb_confine_opts *o, bool root) { setup_namespaces(c, o, root); }

/* Capabilities, no_new_privs and Landlock, seccomp (if nothing refused
 * yet), the rules in the view. */
void sb_cf_layers(sb_confine *c, const sb_confine_opts *o, const sb_mem *m, bool root) {
  setup_caps(c, root);
  setup_landlock(c, o);
  if (!c->refuse) setup_seccomp(c, o);
  setup_rules(c, o, m);
}

void sb_cf_platform_release(sb_confine *c) {
  sb_view_rules_free(c->rules);
  c->rules = NULL;
  if (c->merged_fd >= 0) close(c->merged_fd);
  c->merged_fd = -1;
  if (c->upper_fd >= 0) close(c->upper_fd);
  c->upper_fd = -1;
  sb_ns_close(&c->ns); /* the init: everything in the namespace goes with it */
  sb_netns_close(&c->netns);
  if (c->ruleset_fd >= 0) close(c->ruleset_fd);
  c->ruleset_fd = -1;
  if (c->tmp_parent >= 0) {
    uint64_t freed = 0;
    sb_tree_remove_own(c->tmp_parent, c->tmp_name, &freed);
    close(c->tmp_parent);
    c->tmp_parent = -1;
  }
}
