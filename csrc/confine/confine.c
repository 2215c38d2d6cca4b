/* The confinement's decisions, the same on every platform: the report,
 * resource limits (cgroups or rlimits), what of the policy binds commands
 * and what refuses them. The layers themselves are the platform's
 * (confine/linux.c; confine/none.c where there are none), through
 * confine/confine_impl.h. */
#include "confine/confine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/file.h"
#include "confine/confine_impl.h"
#include "confine/system.h"

void sb_confine_init(sb_confine *c) {
  memset(c, 0, sizeof *c);
  c->ruleset_fd = -1;
  c->merged_fd = -1;
  c->upper_fd = -1;
  c->tmp_parent = -1;
  sb_confine_steps_init(&c->steps);
  sb_limits_init(&c->limits);
  sb_cf_platform_init(c);
}

/* Limits: cgroups where possible, rlimit fallbacks, else fail closed. */
static int setup_limits(sb_confine *c, const sb_confine_opts *o, bool root) {
  sb_confine_steps *s = &c->steps;
  sb_limits_setup(&c->limits, true, &o->limits, c);
  const char **via = c->limits.via;
  sb_cf_layer(c, "tree_kill", true, NULL);
  sb_cf_detail_str(&c->layers[c->nlayers - 1], "via", c->limits.tree.dirfd >= 0 ? "cgroup v2" : "process group");
  if (o->limits.memory && !via[SB_LIM_MEMORY]) {
    sb_cf_add_rlimit(s, RLIMIT_AS, o->limits.memory); /* address space: coarser, but enforced */
    via[SB_LIM_MEMORY] = "rlimit";
  }
  if (o->limits.pids && !via[SB_LIM_PIDS] && !root) {
    sb_cf_add_rlimit(s, RLIMIT_NPROC, o->limits.pids); /* per user: not enforced for root */
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
    sb_layer *l = sb_cf_layer(c, names[i], wanted, "not set");
    sb_cf_detail_str(l, "via", via[i]);
  }
  if (o->file_size) sb_cf_add_rlimit(s, RLIMIT_FSIZE, o->file_size);
  sb_layer *l = sb_cf_layer(c, "file_size_limit", o->file_size != 0, "not set");
  if (o->file_size) sb_cf_detail_str(l, "via", "rlimit");
  sb_cf_add_rlimit(s, RLIMIT_CORE, 0); /* no core dumps of the host's secrets */
  return 0;
}

/* ---- the policy (SPEC §6.1) --------------------------------------------- */

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

/* What of the policy no layer can bind here: commands are refused before
 * any layer is set up. */
static void policy_needs(sb_confine *c, const sb_confine_opts *o) {
  bool rules = o->policy && sb_policy_has_rules(o->policy);
  const char *off = !o->confine ? "confine = false" : "confine = {namespaces = false}";
  if (!o->confine && (sb_cf_root_read_only(o) || o->mode == 'w'))
    sb_cf_refuse(c,
                 "commands are not run: %s, and only confinement (the mount view and Landlock) keeps commands "
                 "to read_only and mode as the file tools are kept; confine them, or drop the option",
                 off);
  char buf[4096];
  const char *above = o->confine && o->mode == 'w' ? reads_above_root(o, buf, sizeof buf) : NULL;
  if (above)
    sb_cf_refuse(c,
                 "commands are not run: mode = \"w\" keeps commands from reading the root through Landlock, but "
                 "the root lies in %.200s, which commands may read (Landlock's rules add up along a path); put "
                 "base_dir elsewhere",
                 above);
  if (rules && (!o->confine || !o->namespaces))
    sb_cf_refuse(c,
                 "commands are not run: the deny and allow rules bind commands through the sandbox's mount view, "
                 "which %s turns off; confine = true makes it, or drop the rules",
                 off);
  if (o->commands && o->max_disk != SB_UNLIMITED && !o->disk_files_only && !c->upper_size) {
    if (o->overlay)
      sb_cf_refuse(c,
                   "commands are not run: max_disk_usage binds them through an upper layer in memory of that "
                   "size, which %s cannot keep: leave state_dir out, or set max_disk_usage_files_only = true to "
                   "limit the file tools only",
                   "a state_dir");
    else
      sb_cf_refuse(c,
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
  if (sb_cf_root_read_only(o) || o->mode == 'w') {
    l = sb_cf_layer(c, sb_cf_root_read_only(o) ? "read_only" : "mode", !why, why);
    sb_cf_detail_str(
        l, "via",
        sb_cf_root_read_only(o)
            ? (view ? "the root mounted read-only, and Landlock without write rights" : "Landlock without write rights")
            : "Landlock: the root may be written and listed, its files never read or run");
  }
  if (!sb_cf_root_read_only(o)) sb_cf_layer(c, "read_only", false, "not set: commands may change the root");
  if (o->mode != 'w') sb_cf_layer(c, "mode", false, o->mode == 'r' ? "\"r\": see read_only" : "not set (\"rw\")");
  bool rules = o->policy && sb_policy_has_rules(o->policy);
  l = sb_cf_layer(c, "rules", rules && !why, rules ? why : "not set");
  if (rules && !why) {
    sb_cf_detail_str(l, "via",
                     o->policy->has_allow
                         ? "the mount view shows only allowed paths (and the directories leading to them), "
                           "denied ones masked; checked again before each command"
                         : "the mount view masks denied paths and pins the directories leading to them; "
                           "checked again before each command");
    sb_cf_detail_int(l, "deny", (long long)o->policy->deny.n, SB_DETAIL_INT);
    sb_cf_detail_int(l, "allow", (long long)o->policy->allow.n, SB_DETAIL_INT);
  }
  if (o->max_disk == SB_UNLIMITED) {
    sb_cf_layer(c, "disk", false, "not set");
  } else if (o->disk_files_only) {
    sb_cf_layer(c, "disk", false, "max_disk_usage_files_only = true: max_disk_usage binds the file tools only");
  } else if (c->upper_size && c->upper_fd >= 0) {
    l = sb_cf_layer(c, "disk", true, NULL);
    sb_cf_detail_str(l, "via",
                     "the overlay's upper layer is a tmpfs of max_disk_usage bytes (in memory), which the "
                     "kernel holds commands to");
    sb_cf_detail_int(l, "bytes", (long long)c->upper_size, SB_DETAIL_INT);
    sb_cf_detail_int(l, "inodes", (long long)sb_ns_upper_inodes(c->upper_size), SB_DETAIL_INT);
  } else if (!o->commands) {
    sb_cf_layer(c, "disk", false, "no commands: max_disk_usage binds the file tools, the only writers");
  } else {
    sb_cf_layer(c, "disk", false, c->why);
  }
  sb_cf_layer(c, "extensions", false,
              o->extensions ? "a file-tool policy: commands (compilers, package managers) read and write "
                              "files of any extension"
                            : "not set");
}

/* What setup leaves for first need: the namespaces and mount view (or the
 * network namespace alone), the policy's refusals (they name what the view
 * binds), the user, every layer over them and the policy's report. */
static void setup_commands(sb_confine *c, const sb_confine_opts *o, const sb_mem *m, bool root) {
  sb_cf_namespaces(c, o, root);
  policy_needs(c, o);
  if (o->drop_user) {
    c->steps.drop_user = true;
    c->steps.uid = o->uid;
    c->steps.gid = o->gid;
    sb_layer *l = sb_cf_layer(c, "user", true, NULL);
    sb_cf_detail_int(l, "uid", o->uid, SB_DETAIL_INT);
    sb_cf_detail_int(l, "gid", o->gid, SB_DETAIL_INT);
  } else {
    sb_cf_layer(c, "user", false, "not set: commands run as the host's user");
  }
  const char *off = "confine = false";
  if (!o->confine) {
    static const char *const none[] = {"capabilities", "seccomp", "setid_files", "no_new_privs", "landlock", "tmpdir"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) sb_cf_layer(c, none[i], false, off);
  } else if (c->refuse && c->ns.init <= 0) {
    sb_cf_layer(c, "landlock", false, c->why);
  } else {
    sb_cf_layers(c, o, m, root);
  }
  report_policy(c, o);
}

/* Keep o for setup_commands: its read_paths' strings copied (they live in
 * the caller's options); the rest lives as long as the sandbox (its root
 * path, tree, policy and CA bundle). 0, or -1 (no memory: make it now). */
static int keep_opts(sb_confine *c, const sb_confine_opts *o, const sb_mem *m) {
  size_t n = 0, bytes = 0;
  for (; o->read_paths && o->read_paths[n]; n++) bytes += strlen(o->read_paths[n]) + 1;
  size_t size = (n + 1) * sizeof(char *) + bytes;
  char **v = sb_malloc(m, size);
  if (!v) return -1;
  char *at = (char *)(v + n + 1);
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(o->read_paths[i]) + 1;
    memcpy(at, o->read_paths[i], len);
    v[i] = at;
    at += len;
  }
  v[n] = NULL;
  c->later = *o;
  c->later.read_paths = (const char *const *)v;
  c->kept = v;
  c->kept_size = size;
  c->pending = true;
  return 0;
}

int sb_confine_setup(sb_confine *c, const sb_confine_opts *o, const sb_mem *m) {
  bool root = geteuid() == 0;
  c->enabled = o->confine;
  if (o->overlay && !o->commands && o->confine && o->namespaces) {
    c->enabled = false;
    sb_cf_merged_only(c, o, root);
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
  /* an overlay's file operations go through its view from the start */
  if (!o->overlay && !getenv("SANDBOX_CONFINE_EAGER") && keep_opts(c, o, m) == 0) return 0; /* test switch */
  setup_commands(c, o, m, root);
  return 0;
}

void sb_confine_ready(sb_confine *c, const sb_mem *m) {
  if (!c->pending) return;
  c->pending = false;
  setup_commands(c, &c->later, m, geteuid() == 0);
}

void sb_confine_release(sb_confine *c, const sb_mem *m) {
  sb_cf_platform_release(c);
  sb_free(m, c->kept, c->kept_size);
  c->kept = NULL;
  c->pending = false;
  sb_limits_close(&c->limits);
}
