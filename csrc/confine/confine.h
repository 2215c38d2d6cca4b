/* Confinement of commands (SPEC §6): what every child of a sandbox applies
 * to itself before execve, decided once when the sandbox is made.
 *
 *   no_new_privs + Landlock (file system, TCP, signals and abstract unix
 *   sockets scoped to the sandbox), a network namespace when outbound
 *   traffic is not allowed (with a user namespace when not root), resource
 *   limits (cgroups, rlimits), and a privilege drop when configured.
 *
 * A sandbox that cannot confine as asked refuses to run commands (fail
 * closed) and says what is missing. */
#ifndef SB_CONFINE_H
#define SB_CONFINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "confine/netns.h"
#include "exec/proc.h"
#include "exec/spawn.h"

typedef struct sb_confine_opts {
  bool confine;          /* Landlock + no_new_privs + private TMPDIR */
  bool allow_outbound;   /* false: no network */
  sb_exec_limits limits; /* cgroups (memory, pids, cpu) */
  uint64_t file_size;    /* RLIMIT_FSIZE, 0 = none */
  bool drop_user;
  uid_t uid;
  gid_t gid;
  int root_fd;           /* the sandbox root (read, write, execute) */
  const int *ro_fds;     /* read roots */
  size_t nro;
  const char *const *extra_rx; /* read_paths: host paths commands may read and run */
} sb_confine_opts;

typedef struct sb_confine {
  sb_confine_steps steps;
  int ruleset_fd;      /* Landlock, -1 = none */
  sb_netns netns;      /* the commands' network when outbound is off */
  int landlock_abi;
  bool refuse;         /* commands fail closed with ENOTSUP */
  char why[240];       /* what is missing */
  char tmpdir[512];    /* private TMPDIR, "" = none */
  int tmp_parent;      /* for its removal */
  char tmp_name[64];
  /* the report: how each part is enforced (NULL = not) */
  const char *network, *tree_kill, *limit_via[SB_NLIM], *file_size_via;
} sb_confine;

void sb_confine_init(sb_confine *c);
/* Decide and prepare everything; `ex` gets its cgroups. Returns 0, or -1
 * when an explicitly requested limit cannot be enforced at all (why set):
 * the sandbox is not made. A missing Landlock only sets refuse. */
int sb_confine_setup(sb_confine *c, const sb_confine_opts *o, sb_exec *ex);
void sb_confine_release(sb_confine *c);

#endif
