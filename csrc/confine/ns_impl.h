/* What the sandbox's init (confine/ns.c) and the mount view it builds and
 * keeps (confine/view.c, confine/view_keep.c) share. Private to those files.
 *
 * The init is a program of its own (csrc/init/main.c): everything it
 * needs the host prepares in one block, an init_arg in a memfd, which the
 * init maps at its start. The view's code runs in it: system calls only,
 * nothing the host's libraries would need set up. */
#ifndef SB_CONFINE_NS_IMPL_H
#define SB_CONFINE_NS_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/path.h"
#include "confine/ns.h"
#include "base/child.h"

#define SB_VIEW_TREES (1 + SB_NS_MAX_RO) /* the root, then the read roots */

/* The steps of the view, for messages. */
enum {
  ST_GO = 1,
  ST_HOSTNAME,
  ST_LOOPBACK,
  ST_PRIVATE,
  ST_BASE,
  ST_PIVOT,
  ST_NEWROOT,
  ST_SYSTEM,
  ST_ETC,
  ST_DEV,
  ST_PTS,
  ST_SHM,
  ST_TMP,
  ST_PROC,
  ST_PROC_RO,
  ST_ROOT,
  ST_ROOT_CHECK,
  ST_RO,
  ST_FINISH,
  ST_OVERLAY,
  ST_PIN,
  ST_SKELETON,
  ST_KEEPER,
  ST_COUNT
};

typedef struct sb_ns_report {
  int err, step;
  char detail[256];
} sb_ns_report;

/* One request of the host to the init, over the control socket (a
 * SOCK_SEQPACKET pair: one message each way per request). */
typedef struct sb_ns_msg {
  int op; /* SB_NS_MASK, ... (confine/ns.h) */
  int tree; /* 0 = the root, i = the i-th read root */
  char path[SB_PATH_MAX + 1]; /* clean, root-relative, no "..": "" = the tree itself */
  char target[SB_PATH_MAX + 1]; /* SB_NS_LINK: the link's text */
} sb_ns_msg;

/* sb_ns_create's own request, right after the report: join the network
 * namespace whose fd comes with it, or (none came) make one. */
#define SB_NS_NETJOIN 100

typedef struct sb_ns_answer {
  int err; /* 0, or the errno of the failed step */
} sb_ns_answer;

/* The init's fds as it starts: the control socket, the go pipe (a byte
 * once the host has mapped its ids), its arguments (an init_arg); and, in
 * the child that execs it, the program itself (close-on-exec). */
#define SB_INIT_CTL_FD 3
#define SB_INIT_GO_FD 4
#define SB_INIT_ARG_FD 5
#define SB_INIT_PROG_FD 6

/* capget/capset's header and data (version 3, two words), declared here:
 * the init program's libc (musl) has no <linux/capability.h> */
typedef struct sb_cap_header {
  uint32_t version;
  int pid;
} sb_cap_header;
typedef struct sb_cap_data {
  uint32_t effective, permitted, inheritable;
} sb_cap_data;
#define SB_CAP_VERSION_3 0x20080522

typedef struct init_arg {
  int go_r, ctl;
  bool network, userns;
  bool net_later; /* the network namespace comes after the view (SB_NS_NETJOIN) */
  char tmp_opts[96];
  char root[SB_NS_PATH];
  bool root_ro; /* commands see the root read-only */
  bool minimal; /* no command will join: the overlay's mount alone */
  bool skeleton; /* allow rules: each tree is shown through a skeleton */
  char ca_bundle[SB_NS_PATH]; /* host path of the proxy's CA bundle ("" = none) */
  dev_t root_dev;
  ino_t root_ino;
  bool overlay; /* the root is an overlayfs: lower = root, these above it */
  char upper[SB_NS_PATH], work[SB_NS_PATH];
  dev_t upper_dev;
  ino_t upper_ino;
  char ov_opts[3 * 2 * SB_NS_PATH + 128];
  char upper_opts[96]; /* the in-memory upper layer's tmpfs (upper_size), "" = none */
  int upper_fd; /* its upper directory, for the host (-1 = none) */
  int nro, nread_roots; /* read roots first (trees 1..nread_roots), then read_paths */
  char ro[SB_NS_MAX_RO][SB_NS_PATH];
  bool ro_check[SB_NS_MAX_RO]; /* read roots: bound inode must be the held one */
  dev_t ro_dev[SB_NS_MAX_RO];
  ino_t ro_ino[SB_NS_MAX_RO];
  char a[SB_NS_PATH + 16], b[SB_NS_PATH + 16], c[SB_NS_PATH + 16], d[SB_NS_PATH + 16]; /* scratch */
  sb_ns_report rep;
  /* the keeper's state, in the init: each tree as commands see it, the
   * real tree under a skeleton, the skeleton's own (writable) handle */
  int tree_fd[SB_VIEW_TREES], real_fd[SB_VIEW_TREES], skel_fd[SB_VIEW_TREES];
  int clone_fd; /* the overlay's merged root, unmasked, for the host (-1 = none) */
  char proc_fd[64], proc_src[64]; /* "/proc/self/fd/N" */
  sb_ns_msg msg;
} init_arg;

#define CHILD SB_CHILD_FN

/* In the init: build the view (fails through sb_view_fail, never returns
 * on failure). */
void sb_view_build(init_arg *a);
/* In the init: one request of the keeper; 0 or an errno. */
int sb_view_request(init_arg *a, const sb_ns_msg *m, int *fd_out);
/* In the init: report a failed step to the host and end. */
_Noreturn void sb_view_fail(init_arg *a, int step, const char *detail);

extern const char *const sb_view_step_names[ST_COUNT];

#endif
