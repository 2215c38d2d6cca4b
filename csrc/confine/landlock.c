#include "confine/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif

/* ABI 1 */
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
/* ABI 2, 3, 5 */
#define LL_FS_REFER (1ULL << 13)
#define LL_FS_TRUNCATE (1ULL << 14)
#define LL_FS_IOCTL_DEV (1ULL << 15)
/* ABI 4 */
#define LL_NET_BIND_TCP (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)
/* ABI 6 */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1

/* The kernel's struct, with the fields of every ABI; older kernels get the
 * prefix they know (the size tells them). */
struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

/* Rights a rule on a file (not a directory) may carry. */
#define LL_FILE_RIGHTS (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

int sb_landlock_abi(void) {
  long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  return v > 0 ? (int)v : 0;
}

static uint64_t fs_handled(int abi) {
  uint64_t r = (1ULL << 13) - 1;
  if (abi >= 2) r |= LL_FS_REFER;
  if (abi >= 3) r |= LL_FS_TRUNCATE;
  if (abi >= 5) r |= LL_FS_IOCTL_DEV;
  return r;
}

/* Add a path-beneath rule for fd; rights are masked to what the ABI
 * handles, and to file rights when fd is not a directory. */
static int add_fd(int ruleset, int fd, uint64_t rights, uint64_t handled) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) rights &= LL_FILE_RIGHTS;
  struct ll_path_beneath_attr a = {.allowed_access = rights & handled, .parent_fd = fd};
  if (a.allowed_access == 0) return 0;
  return (int)syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &a, 0);
}

static int add_path(int ruleset, const char *path, uint64_t rights, uint64_t handled) {
  int fd = open(path, O_PATH | O_CLOEXEC); /* follows /bin -> /usr/bin: rules bind inodes */
  if (fd < 0) return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -1;
  int r = add_fd(ruleset, fd, rights, handled);
  int err = errno;
  close(fd);
  errno = err;
  return r;
}

int sb_landlock_build(const sb_landlock_policy *pol, char *why, size_t whylen) {
  int abi = pol->abi;
  if (abi < 1) {
    snprintf(why, whylen, "Landlock is not available in this kernel");
    return -1;
  }
  uint64_t fs = fs_handled(abi);
  struct ll_ruleset_attr attr = {.handled_access_fs = fs};
  size_t size = sizeof attr.handled_access_fs;
  if (abi >= 4) {
    attr.handled_access_net = pol->deny_tcp ? LL_NET_BIND_TCP | LL_NET_CONNECT_TCP : 0;
    size = offsetof(struct ll_ruleset_attr, scoped);
  }
  if (abi >= 6) {
    attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (rs < 0) {
    snprintf(why, whylen, "landlock_create_ruleset failed: %s", strerror(errno));
    return -1;
  }
  return sb_landlock_add(rs, pol, why, whylen);
}

int sb_landlock_add(int rs, const sb_landlock_policy *pol, char *why, size_t whylen) {
  uint64_t fs = fs_handled(pol->abi);
  const uint64_t rx = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
  const uint64_t ro = LL_FS_READ_FILE | LL_FS_READ_DIR;
  /* the workspace: everything but creating device nodes or device ioctls */
  const uint64_t rw = fs & ~(LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK | LL_FS_IOCTL_DEV);
  const uint64_t root = pol->root_access == SB_LL_ROOT_RO ? rx
      : pol->root_access == SB_LL_ROOT_WO                 ? rw & ~(LL_FS_READ_FILE | LL_FS_EXECUTE)
                                                          : rw;
  const char *what = NULL;
  if (pol->root_fd >= 0 && add_fd(rs, pol->root_fd, root, fs) != 0) what = "the sandbox root";
  for (size_t i = 0; !what && i < pol->nview; i++)
    if (pol->view_fds[i] >= 0 && add_fd(rs, pol->view_fds[i], i == 0 ? root : ro, fs) != 0)
      what = "a tree of the mount view";
  for (size_t i = 0; !what && i < pol->nro; i++)
    if (add_fd(rs, pol->ro_fds[i], ro, fs) != 0) what = "a read root";
  for (size_t i = 0; !what && pol->rx_paths && pol->rx_paths[i]; i++)
    if (add_path(rs, pol->rx_paths[i], rx, fs) != 0) what = pol->rx_paths[i];
  for (size_t i = 0; !what && pol->ro_paths && pol->ro_paths[i]; i++)
    if (add_path(rs, pol->ro_paths[i], ro, fs) != 0) what = pol->ro_paths[i];
  const uint64_t dev = LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE;
  for (size_t i = 0; !what && pol->dev_paths && pol->dev_paths[i]; i++)
    if (add_path(rs, pol->dev_paths[i], dev, fs) != 0) what = pol->dev_paths[i];
  if (!what && pol->rw_dir && add_path(rs, pol->rw_dir, rw, fs) != 0) what = pol->rw_dir;
  for (size_t i = 0; !what && i < pol->nrw; i++)
    if (add_fd(rs, pol->rw_fds[i], rw, fs) != 0) what = "a private directory of the mount view";
  /* terminals: ioctl too (ABI 5 handles device ioctls) */
  if (!what && pol->tty_fd >= 0 && add_fd(rs, pol->tty_fd, ro | dev | LL_FS_IOCTL_DEV, fs) != 0) what = "/dev/pts";
  if (!what && pol->proc_fd >= 0 && add_fd(rs, pol->proc_fd, ro | LL_FS_WRITE_FILE, fs) != 0) what = "/proc";
  /* the mount view holds only what commands may see: listing it is fine */
  if (!what && pol->list_fd >= 0 && add_fd(rs, pol->list_fd, LL_FS_READ_DIR, fs) != 0) what = "/";
  if (what) {
    snprintf(why, whylen, "cannot add a Landlock rule for %s: %s", what, strerror(errno));
    close(rs);
    return -1;
  }
  return rs;
}
