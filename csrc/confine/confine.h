/* Confinement of commands (SPEC §6): what every command of a sandbox
 * applies to itself before execve, decided once: when the sandbox is made, or
 * (a ContainerSandbox) at its first need.
 *
 * Layers: resource limits and the cgroups holding each command's tree
 * (confine/limits.c); the sandbox's own namespaces — PID, IPC, UTS,
 * cgroup, mount with a minimal view, network, and user when the host is
 * not root — held by an init (confine/ns.c), or without them
 * (namespaces = false) only a network namespace (confine/netns.c);
 * empty capability sets; a privilege drop; no_new_privs; Landlock
 * (confine/landlock.c) as a second layer over the view; a seccomp baseline
 * (confine/seccomp.c); a private /tmp. The result is a set of child steps
 * (confine/child.h) the runner applies per command, and a report: one
 * entry per layer, enforced or why not.
 *
 * A sandbox that cannot confine as asked refuses to run commands (fail
 * closed) and says what is missing. A new layer: confine/<layer>.c and .h,
 * its decision and report entry here (confine.c), its step in child.c. */
#ifndef SB_CONFINE_CONFINE_H
#define SB_CONFINE_CONFINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/policy.h"
#include "confine/child.h"
#include "confine/limits.h"
#include "confine/netns.h"
#include "confine/ns.h"
#include "confine/rules.h"
#include "confine/seccomp.h"
#include "fs/backend.h"

#define SB_MAX_READ_PATHS 32 /* read_paths entries */

typedef struct sb_confine_opts {
  bool confine; /* every layer below; false: limits, network and tree kill only */
  bool namespaces; /* the sandbox's own namespaces and mount view */
  uint64_t tmp_size; /* bytes of the private /tmp (mount view) */
  const char *root_path; /* the root's real absolute path (sb.cwd) */
  bool allow_outbound; /* false: no network */
  bool allowed_hosts; /* outbound only through the allowlist proxy */
  sb_limit_values limits; /* cgroups (memory, pids, cpu) */
  uint64_t file_size; /* RLIMIT_FSIZE, 0 = none */
  bool drop_user;
  uid_t uid;
  gid_t gid;
  sb_cmd_tree tree; /* what commands work in and read (from the backend) */
  const char *const *read_paths; /* host paths commands may read and run; NULL-ended */
  const char *ca_bundle; /* the proxy's CA bundle (host path) commands trust, or NULL */
  bool overlay; /* an OverlaySandbox: the view mounts overlayfs over the root ... */
  int upper_fd, work_fd; /* ... with these layers (needs the namespaces) */
  /* The policy the file tools obey binds commands too (SPEC §6.1), or
   * commands are refused with the reason. */
  const sb_policy *policy; /* read_only, deny and allow rules */
  char mode; /* 'b'oth (rw), 'r' or 'w' for the root */
  bool extensions; /* extension allowlists: a file-tool policy only, said so */
  uint64_t max_disk; /* max_disk_usage (SB_UNLIMITED: none) ... */
  bool disk_files_only; /* ... which the user asked to bind the file tools only */
  bool commands; /* commands may run (exec) */
  bool state_temporary; /* an overlay's state goes with the sandbox (no state_dir) */
} sb_confine_opts;

/* One layer as the report shows it: enforced, or why not, with details. */
enum { SB_DETAIL_STR, SB_DETAIL_INT, SB_DETAIL_BOOL };
typedef struct sb_layer {
  const char *name;
  bool enforced;
  const char *why; /* when not enforced */
  int ndetails;
  struct {
    const char *key;
    int type;
    const char *s;
    long long i;
  } details[4];
} sb_layer;

#define SB_MAX_LAYERS 24

typedef struct sb_confine {
  /* A ContainerSandbox's namespaces, view, network and Landlock are made
   * at first need (sb_confine_ready): until then pending, with the options
   * kept (their strings copied into `kept`). A sandbox that never runs a
   * command never pays for them (about 7 ms here). */
  bool pending;
  sb_confine_opts later;
  void *kept;
  size_t kept_size;
  sb_confine_steps steps;
  sb_limits limits;
  int ruleset_fd; /* Landlock, -1 = none */
  sb_ns ns; /* the sandbox's namespaces (namespaces = true) */
  int merged_fd; /* an OverlaySandbox's merged root, opened through the view (-1 = none) */
  uint64_t upper_size; /* its upper layer in memory, of max_disk_usage bytes (0 = on disk) ... */
  int upper_fd; /* ... whose directory this is (-1 = none) */
  sb_netns netns; /* the commands' network when outbound is off (no namespaces) */
  sb_netns nsnet; /* ... or the sandbox namespaces' network, as the agent joins it */
  sb_view_rules *rules; /* deny and allow rules in the view, NULL = none */
  sb_seccomp seccomp;
  struct sock_fprog fprog;
  int landlock_abi;
  bool enabled; /* the confine option */
  bool refuse; /* commands fail closed with ENOTSUP */
  char why[512]; /* what is missing, and what to do */
  char tmpdir[512]; /* private TMPDIR, "" = none */
  int tmp_parent; /* for its removal */
  char tmp_name[64];
  int nlayers;
  sb_layer layers[SB_MAX_LAYERS];
} sb_confine;

/* What this host lets a confined sandbox make (sandbox.capabilities()):
 * probed by making, and at once reaping, a child with those namespaces. */
typedef struct sb_confine_host {
  bool userns, netns;
  bool namespaces; /* the whole set a confined sandbox makes for itself */
} sb_confine_host;
void sb_confine_probe(sb_confine_host *h);

void sb_confine_init(sb_confine *c);
/* Decide and prepare everything (but for a sandbox without an overlay,
 * what sb_confine_ready makes later). Returns 0, or -1 when an explicitly
 * requested limit cannot be enforced at all (why set): the sandbox is not
 * made. A missing layer the commands need only sets refuse. */
int sb_confine_setup(sb_confine *c, const sb_confine_opts *o, const sb_mem *m);
/* Make what setup left for first need (a no-op when nothing is pending):
 * before a command, the network helper or the report is used. */
void sb_confine_ready(sb_confine *c, const sb_mem *m);
/* Before a command: bring the view in line with the rules (paths appear and
 * are replaced all the time). 0, or -1 with c->why (this command must not
 * run; a later one tries again). */
int sb_confine_refresh(sb_confine *c);
/* The commands' own network namespace, or NULL (outbound allowed, refused). */
const sb_netns *sb_confine_netns(const sb_confine *c);
void sb_confine_release(sb_confine *c, const sb_mem *m);

#endif
