/* The sandbox's own namespaces (SPEC §6): PID, IPC, UTS, cgroup, mount and
 * network (unless outbound traffic is allowed), plus a user namespace when
 * the host is not root (the kernel requires one then; a root host's
 * commands run with empty capability sets instead). Created once per
 * sandbox and held by a small init, pid 1 of the PID namespace:
 *
 *   it builds the mount view (below), then only reaps orphans. When it
 *   goes — dispose kills it, and it dies with the host — the kernel kills
 *   everything in the namespace: the sandbox's last word on its processes.
 *
 * The mount view, as bubblewrap builds one, on a read-only tmpfs root:
 * the system directories and the /etc allowlist read-only
 * (confine/system.c); the sandbox root read-write at its real absolute
 * path (nosuid, nodev; checked to be the very directory the sandbox holds
 * open); read roots and read_paths read-only; a private size-limited
 * /tmp and /dev/shm; a minimal /dev (null, zero, full, random, urandom,
 * tty, a private pts with ptmx); /proc of the PID namespace with /proc/sys
 * and friends read-only and kernel internals masked; no /sys. Host socket
 * files, other users' files and everything else are simply absent.
 *
 * Commands join with setns (confine/child.c), the PID namespace through one
 * more clone (exec/spawn.c). */
#ifndef SB_CONFINE_NS_H
#define SB_CONFINE_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "confine/netns.h"

enum { SB_NS_USER, SB_NS_MNT, SB_NS_IPC, SB_NS_UTS, SB_NS_CGROUP, SB_NS_NET, SB_NS_PID, SB_NS_COUNT };

#define SB_NS_MAX_RO 96 /* read roots plus read_paths */
#define SB_NS_PATH 1024

/* Where commands find the trust bundle with the proxy's authority in it. */
#define SB_VIEW_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

typedef struct sb_ns_view {
  int root_fd; /* the tree commands work in, read-write ... */
  const char *root_path; /* ... at its real absolute path (sb.cwd) */
  const int *ro_fds; /* read roots, read-only at their real paths */
  size_t nro;
  const char *const *read_paths; /* host paths, read-only at the same paths; NULL-ended */
  const char *ca_bundle; /* host path of a CA bundle shown at SB_VIEW_CA_BUNDLE, or NULL */
  uint64_t tmp_size; /* bytes /tmp and /dev/shm may hold together (inodes in proportion) */
  bool root_ro; /* the root read-only (read_only, or mode "r") */
  bool minimal; /* no command will join: only the overlay's mount (the file operations') */
  bool skeleton; /* allow rules: trees show only what the keeper binds in (SB_NS_SHOW) */
  bool network; /* own network namespace (loopback only) */
  bool userns; /* own user namespace (the host is not root) */
  /* An OverlaySandbox: root_fd is the lower layer, and the view shows an
   * overlayfs of it with these upper and work directories (on one file
   * system) at root_path instead of the root itself; -1 = none. */
  int upper_fd, work_fd;
  /* ... or, when > 0, upper and work directories on a tmpfs of this many
   * bytes made in the sandbox's own mount namespace: the kernel holds the
   * overlay's writes to max_disk_usage (SB_NS_UPPER hands it to the host) */
  uint64_t upper_size;
  /* The host's own work while the init builds the view (both cores busy
   * instead of one waiting), or NULL: it must not need the view. */
  void (*meanwhile)(void *arg);
  void *meanwhile_arg;
} sb_ns_view;

typedef struct sb_ns {
  pid_t init; /* host pid of the namespace's pid 1; -1 = none */
  int pidfd; /* its pidfd (dispose kills through it), -1 = none */
  int ctl; /* the control socket to the init (the view's keeper), -1 = none */
  int fd[SB_NS_COUNT]; /* for setns; -1 where not created */
  bool userns;
} sb_ns;

void sb_ns_init(sb_ns *ns);
/* Create the namespaces and the view. 0, or -1 with `why` saying which step
 * failed, why, and what to do. */
int sb_ns_create(sb_ns *ns, const sb_ns_view *v, char *why, size_t whylen);
/* The network namespace as the network agent joins it (NULL: none). */
const sb_netns *sb_ns_netns(const sb_ns *ns, sb_netns *out);
/* Open a path of the view (e.g. "/tmp", or an overlay's merged root) from
 * the host, O_PATH; -1 + errno. */
int sb_ns_open(const sb_ns *ns, const char *path);
/* Requests to the init, which keeps the view (confine/view.c). Paths are
 * clean and root-relative in tree `tree` (0 = the root, i = the i-th read
 * root), never through a link.
 *   SB_NS_MASK  the path becomes unreadable and unchangeable: a directory an
 *               empty tmpfs no one may list, anything else /dev/null, nodev
 *   SB_NS_PIN   a directory becomes a mount of itself: it cannot be moved,
 *               renamed or removed (so nothing masked below it moves away)
 *   SB_NS_SHOW  (skeleton) the real tree's path is bound into the skeleton
 *   SB_NS_DIR   (skeleton) a directory leading to shown paths
 *   SB_NS_LINK  (skeleton) a link, with `target` as its text
 *   SB_NS_CLONE an overlay root's merged view, unmasked, for the host's own
 *               file operations (*fd_out); ENOSYS without open_tree
 *   SB_NS_UPPER an overlay's upper layer made in memory (upper_size): its
 *               directory (*fd_out), for the host's review
 * 0, or -1 with errno (the init's). */
enum { SB_NS_MASK = 1, SB_NS_PIN, SB_NS_SHOW, SB_NS_DIR, SB_NS_LINK, SB_NS_CLONE, SB_NS_UPPER };
int sb_ns_request(sb_ns *ns, int op, int tree, const char *path, const char *target, int *fd_out);
/* Inodes an overlay's upper layer made in memory may hold, for its bytes. */
static inline uint64_t sb_ns_upper_inodes(uint64_t size) {
  uint64_t n = size / 4096;
  return n < 1024 ? 1024 : n;
}
/* Inodes the private /tmp and /dev/shm may hold together, for tmp_size bytes. */
static inline uint64_t sb_ns_tmp_inodes(uint64_t tmp_size) {
  uint64_t n = tmp_size / (16 * 1024);
  return n < 256 ? 256 : n;
}
/* Kill init (and so everything in the namespace), close the fds. */
void sb_ns_close(sb_ns *ns);

#endif
