/* The mount view commands see (SPEC §6, §6.1), built by the sandbox's init
 * and kept by it for the sandbox's life. Everything here runs in the init,
 * a copy of the host: system calls only.
 *
 * Built once, as bubblewrap builds a view, on a read-only tmpfs root: the
 * system directories and the /etc allowlist read-only (confine/system.c);
 * the sandbox root at its real absolute path (read-only when the policy
 * says so; nosuid, nodev; checked to be the very directory the sandbox
 * holds open), or an overlayfs of it; read roots and read_paths read-only;
 * /tmp and /dev/shm from one private tmpfs (one budget of bytes and
 * inodes); a minimal /dev; /proc of the PID namespace; no /sys.
 *
 * No command can break the view for the next: every tree is a mount point
 * (it cannot be moved or removed), and a tree below /tmp or /dev/shm has
 * the way to it pinned (the first directory below the writable tree is a
 * read-only mount of itself).
 *
 * Kept afterwards: confine/view_keep.c. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine/system.h"
#include "confine/view_impl.h"

CHILD size_t sb_view_slen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

CHILD unsigned long long sb_view_attrs(bool ro, bool nodev, bool noexec) {
  return MOUNT_ATTR_NOSUID | (ro ? MOUNT_ATTR_RDONLY : 0) | (nodev ? MOUNT_ATTR_NODEV : 0) |
      (noexec ? MOUNT_ATTR_NOEXEC : 0);
}

CHILD unsigned long sb_view_ms_flags(bool ro, bool nodev, bool noexec) {
  return MS_BIND | MS_REMOUNT | MS_NOSUID | (ro ? MS_RDONLY : 0) | (nodev ? MS_NODEV : 0) | (noexec ? MS_NOEXEC : 0);
}

/* out = a + b (+ c), bounded. */
CHILD static char *join(char *out, const char *a, const char *b, const char *c) {
  size_t n = 0, cap = SB_NS_PATH + 15;
  for (const char *s = a; s && *s && n < cap; s++) out[n++] = *s;
  for (const char *s = b; s && *s && n < cap; s++) out[n++] = *s;
  for (const char *s = c; s && *s && n < cap; s++) out[n++] = *s;
  out[n] = '\0';
  return out;
}

CHILD _Noreturn void sb_view_fail(init_arg *a, int step, const char *detail) {
  a->rep.err = errno ? errno : EIO;
  a->rep.step = step;
  size_t i = 0;
  for (; detail && detail[i] && i + 1 < sizeof a->rep.detail; i++) a->rep.detail[i] = detail[i];
  a->rep.detail[i] = '\0';
  ssize_t w = send(a->ctl, &a->rep, sizeof a->rep, MSG_NOSIGNAL);
  (void)w;
  _exit(1);
}
#define fail sb_view_fail

/* mkdir -p (0755), tolerating what exists. */
CHILD static int mkdirs(char *path) {
  for (char *p = path + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      int r = mkdir(path, 0755);
      *p = c;
      if (r != 0 && errno != EEXIST) return -1;
      if (c == '\0') return 0;
    }
  }
}

/* A file to mount over: its parents, then the (empty) file itself. */
CHILD static int touch(char *path) {
  char *slash = path + sb_view_slen(path);
  while (slash > path && *slash != '/') slash--;
  if (slash > path) {
    *slash = '\0';
    int r = mkdirs(path);
    *slash = '/';
    if (r != 0) return -1;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) return errno == EISDIR ? 0 : -1;
  close(fd);
  return 0;
}

/* Restrict a mount (and everything below it): read-only or not, never
 * set-id or devices. Falls back to a plain remount without mount_setattr. */
CHILD static int restrict_one(const char *path, bool ro, bool nodev, bool noexec, bool recursive) {
  struct sb_mount_attr at = {.attr_set = sb_view_attrs(ro, nodev, noexec)};
  if (syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &at, sizeof at) == 0) return 0;
  if (errno != ENOSYS) return -1;
  return mount(NULL, path, NULL, sb_view_ms_flags(ro, nodev, noexec), NULL);
}

CHILD static int restrict_mount(const char *path, bool ro, bool nodev, bool noexec) {
  return restrict_one(path, ro, nodev, noexec, true);
}

/* Make dst ready to be mounted over, as src is (a directory or a file). */
CHILD static int prepare_dst(char *src, char *dst) {
  struct stat st;
  if (stat(src, &st) != 0) return -1;
  return S_ISDIR(st.st_mode) ? mkdirs(dst) : touch(dst);
}

/* Bind src (a host path, under /oldroot) at dst, then restrict it. */
CHILD static int bind_tree(char *src, char *dst, bool ro, bool nodev) {
  if (prepare_dst(src, dst) != 0) return -1;
  if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0) return -1;
  return restrict_mount(dst, ro, nodev, false);
}

CHILD static int tmpfs(char *dst, const char *opts, unsigned long flags) {
  if (mkdirs(dst) != 0) return -1;
  return mount("tmpfs", dst, "tmpfs", flags, opts);
}

/* The system directories: on a merged-/usr system the top-level ones are
 * symlinks (recreated as such), otherwise read-only binds. */
CHILD static void system_dirs(init_arg *a) {
  for (int i = 0; sb_system_rx[i]; i++) {
    char *src = join(a->a, "/oldroot", sb_system_rx[i], NULL);
    char *dst = join(a->b, "/newroot", sb_system_rx[i], NULL);
    struct stat st;
    if (lstat(src, &st) != 0) {
      if (errno == ENOENT) continue;
      fail(a, ST_SYSTEM, sb_system_rx[i]);
    }
    if (S_ISLNK(st.st_mode)) {
      ssize_t n = readlink(src, a->c, SB_NS_PATH);
      if (n <= 0 || n >= SB_NS_PATH) fail(a, ST_SYSTEM, sb_system_rx[i]);
      a->c[n] = '\0';
      if (symlink(a->c, dst) != 0 && errno != EEXIST) fail(a, ST_SYSTEM, sb_system_rx[i]);
    } else if (bind_tree(src, dst, true, true) != 0) {
      fail(a, ST_SYSTEM, sb_system_rx[i]);
    }
  }
}

/* The /etc allowlist (and the other read-only system files). A symlink
 * into /usr or a relative one is recreated; an absolute one elsewhere
 * (resolv.conf -> /run/...) gives way to the file it names. */
CHILD static void etc_files(init_arg *a) {
  for (int i = 0; sb_system_ro[i]; i++) {
    const char *path = sb_system_ro[i];
    char *src = join(a->a, "/oldroot", path, NULL);
    char *dst = join(a->b, "/newroot", path, NULL);
    struct stat st;
    int hops = 0;
    while (lstat(src, &st) == 0 && S_ISLNK(st.st_mode) && hops++ < 8) {
      ssize_t n = readlink(src, a->c, SB_NS_PATH);
      if (n <= 0 || n >= SB_NS_PATH) break;
      a->c[n] = '\0';
      if (hops == 1 && (a->c[0] != '/' || strncmp(a->c, "/usr/", 5) == 0)) {
        char *slash = dst + sb_view_slen(dst);
        while (slash > dst && *slash != '/') slash--;
        *slash = '\0';
        mkdirs(dst);
        *slash = '/';
        if (symlink(a->c, dst) != 0 && errno != EEXIST) fail(a, ST_ETC, path);
        goto next;
      }
      if (a->c[0] == '/') {
        join(a->d, "/oldroot", a->c, NULL);
      } else { /* relative, after the first hop: beside the link */
        char *slash = src + sb_view_slen(src);
        while (slash > src && *slash != '/') slash--;
        slash[1] = '\0';
        join(a->d, src, a->c, NULL);
      }
      src = join(a->a, a->d, NULL, NULL);
    }
    if (stat(src, &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) continue;
      fail(a, ST_ETC, path);
    }
    if (bind_tree(src, dst, true, true) != 0) fail(a, ST_ETC, path);
  next:;
  }
}

/* One private tmpfs for /tmp and /dev/shm (mounted beside the new root, so
 * it goes when the old tree does, and bound into place): one budget of
 * bytes and inodes for both. */
CHILD static void scratch(init_arg *a) {
  if (tmpfs(join(a->c, "/scratch", NULL, NULL), a->tmp_opts, MS_NOSUID | MS_NODEV) != 0) fail(a, ST_TMP, "/tmp");
  static const char *const sub[] = {"/scratch/tmp", "/scratch/shm"};
  for (int i = 0; i < 2; i++)
    if ((mkdir(sub[i], 0755) != 0 && errno != EEXIST) || chmod(sub[i], 01777) != 0)
      fail(a, i ? ST_SHM : ST_TMP, sub[i] + 8);
}

/* A minimal /dev: the harmless nodes bound from the host, a private pts,
 * the usual symlinks, /dev/shm from the scratch tmpfs. */
CHILD static void dev(init_arg *a) {
  if (tmpfs(join(a->b, "/newroot/dev", NULL, NULL), "mode=0755", MS_NOSUID | MS_NOEXEC) != 0) fail(a, ST_DEV, "/dev");
  for (int i = 0; sb_system_dev[i]; i++) {
    char *src = join(a->a, "/oldroot", sb_system_dev[i], NULL);
    char *dst = join(a->b, "/newroot", sb_system_dev[i], NULL);
    if (touch(dst) != 0 || mount(src, dst, NULL, MS_BIND, NULL) != 0 || restrict_mount(dst, false, false, true) != 0)
      fail(a, ST_DEV, sb_system_dev[i]);
  }
  static const char *const links[][2] = {{"/proc/self/fd", "/newroot/dev/fd"},
                                         {"/proc/self/fd/0", "/newroot/dev/stdin"},
                                         {"/proc/self/fd/1", "/newroot/dev/stdout"},
                                         {"/proc/self/fd/2", "/newroot/dev/stderr"},
                                         {"pts/ptmx", "/newroot/dev/ptmx"}};
  for (size_t i = 0; i < sizeof links / sizeof *links; i++)
    if (symlink(links[i][0], links[i][1]) != 0) fail(a, ST_DEV, links[i][1]);
  char *pts = join(a->b, "/newroot/dev/pts", NULL, NULL);
  if (mkdirs(pts) != 0 ||
      mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") != 0)
    fail(a, ST_PTS, "/dev/pts");
  char *shm = join(a->b, "/newroot/dev/shm", NULL, NULL);
  if (mkdirs(shm) != 0 || mount("/scratch/shm", shm, NULL, MS_BIND, NULL) != 0 ||
      restrict_mount(shm, false, true, false) != 0)
    fail(a, ST_SHM, "/dev/shm");
}

/* /proc of the PID namespace; what a uid 0 could change or read of the
 * host through it is made read-only or masked (as container engines do). */
CHILD static void proc(init_arg *a) {
  char *p = join(a->b, "/newroot/proc", NULL, NULL);
  if (mkdirs(p) != 0 || mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
    fail(a, ST_PROC, "/proc");
  static const char *const ro[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
  for (size_t i = 0; i < sizeof ro / sizeof *ro; i++) {
    char *q = join(a->c, "/newroot/proc/", ro[i], NULL);
    if (access(q, F_OK) != 0) continue;
    if (mount(q, q, NULL, MS_BIND | MS_REC, NULL) != 0 || restrict_mount(q, true, true, true) != 0)
      fail(a, ST_PROC_RO, ro[i]);
  }
  static const char *const masked[] = {"kcore",         "keys", "timer_list", "sched_debug", "kmsg",
                                       "latency_stats", "acpi", "asound",     "scsi"};
  for (size_t i = 0; i < sizeof masked / sizeof *masked; i++) {
    char *q = join(a->c, "/newroot/proc/", masked[i], NULL);
    struct stat st;
    if (stat(q, &st) != 0) continue;
    int r = S_ISDIR(st.st_mode) ? mount("tmpfs", q, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=0")
                                : mount("/newroot/dev/null", q, NULL, MS_BIND, NULL);
    if (r != 0) fail(a, ST_PROC_RO, masked[i]);
  }
}

/* The trees' places in the new root, made before anything is pinned. */
CHILD static void prepare_trees(init_arg *a) {
  if (mkdirs(join(a->b, "/newroot", a->root, NULL)) != 0) fail(a, ST_ROOT, a->root);
  for (int i = 0; i < a->nro; i++) {
    char *src = join(a->a, "/oldroot", a->ro[i], NULL);
    if (prepare_dst(src, join(a->b, "/newroot", a->ro[i], NULL)) != 0) fail(a, ST_RO, a->ro[i]);
  }
}

/* A tree below /tmp or /dev/shm, where commands may write: the first
 * directory below that tree on the way to it becomes a read-only mount of
 * itself, so no command can move, remove or fill in the way (a tree right
 * below is a mount point itself). */
CHILD static void pin_way(init_arg *a, const char *path) {
  static const char *const writable[] = {"/tmp/", "/dev/shm/"};
  for (int w = 0; w < 2; w++) {
    size_t n = sb_view_slen(writable[w]);
    if (strncmp(path, writable[w], n) != 0) continue;
    const char *rest = path + n, *slash = rest;
    while (*slash && *slash != '/') slash++;
    if (!*slash || slash == rest) return;
    char *dir = join(a->c, "/newroot", writable[w], NULL);
    size_t dl = sb_view_slen(dir);
    for (const char *s = rest; s < slash && dl < SB_NS_PATH; s++) dir[dl++] = *s;
    dir[dl] = '\0';
    if (mount(dir, dir, NULL, MS_BIND | MS_REC, NULL) != 0 || restrict_mount(dir, true, true, false) != 0)
      fail(a, ST_PIN, path);
    return;
  }
}

/* With allow rules: the tree at dst, as commands see it, becomes a
 * skeleton, an empty tmpfs bound read-only over it; the keeper fills it
 * through its own writable mount (kept by fd once the old tree goes), and
 * binds allowed paths from the real tree below (kept by fd too). */
CHILD static void skeleton(init_arg *a, int t, char *dst) {
  a->real_fd[t] = open(dst, O_PATH | O_DIRECTORY | O_CLOEXEC);
  char *skel = join(a->d, "/skel", NULL, NULL);
  size_t n = sb_view_slen(skel);
  skel[n++] = (char)('a' + t / 26);
  skel[n++] = (char)('a' + t % 26);
  skel[n] = '\0';
  if (a->real_fd[t] < 0 || tmpfs(skel, "mode=0755,size=4m,nr_inodes=16384", MS_NOSUID | MS_NODEV) != 0 ||
      (a->skel_fd[t] = open(skel, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
      mount(skel, dst, NULL, MS_BIND, NULL) != 0 || restrict_mount(dst, true, true, false) != 0)
    fail(a, ST_SKELETON, dst + 8);
}

/* A tree of the host at its real path: the sandbox root (read-only if the
 * policy says so), the read roots and read_paths read-only. The held
 * directories are checked to be what got bound (a path swapped meanwhile
 * is refused). */
CHILD static void tree(init_arg *a, int t, const char *path, bool ro, bool check, dev_t dv, ino_t ino) {
  char *src = join(a->a, "/oldroot", path, NULL);
  char *dst = join(a->b, "/newroot", path, NULL);
  if (bind_tree(src, dst, ro, true) != 0) fail(a, ro ? ST_RO : ST_ROOT, path);
  struct stat st;
  if (check && (stat(dst, &st) != 0 || st.st_dev != dv || st.st_ino != ino)) {
    errno = EXDEV;
    fail(a, ST_ROOT_CHECK, path);
  }
  if (t >= 0 && a->skeleton) skeleton(a, t, dst);
}

/* An OverlaySandbox's root: overlayfs at the root's path, the root itself
 * (as the host holds it) below, the sandbox's upper and work directories
 * above. No redirects and no metacopy: the upper layer holds whole files
 * and plain whiteouts, which the host's review reads. The host's own file
 * operations use a clone of this mount, taken before anything is masked
 * or made read-only in it. */
CHILD static void overlay(init_arg *a) {
  char *lower = join(a->a, "/oldroot", a->root, NULL);
  char *dst = join(a->b, "/newroot", a->root, NULL);
  char *upper = join(a->c, "/oldroot", a->upper, NULL);
  struct stat st;
  if (stat(lower, &st) != 0) fail(a, ST_ROOT_CHECK, a->root);
  if (st.st_dev != a->root_dev || st.st_ino != a->root_ino) { /* swapped meanwhile */
    errno = EXDEV;
    fail(a, ST_ROOT_CHECK, a->root);
  }
  if (a->upper_opts[0]) { /* in memory: the kernel holds the layer to its size */
    char *fs = join(a->c, "/upperfs", NULL, NULL);
    if (tmpfs(fs, a->upper_opts, MS_NOSUID | MS_NODEV) != 0 || mkdir("/upperfs/upper", 0755) != 0 ||
        mkdir("/upperfs/work", 0755) != 0 ||
        (a->upper_fd = open("/upperfs/upper", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
      fail(a, ST_OVERLAY, "the upper layer in memory");
  } else {
    if (stat(upper, &st) != 0) fail(a, ST_OVERLAY, a->upper);
    if (st.st_dev != a->upper_dev || st.st_ino != a->upper_ino) {
      errno = EXDEV;
      fail(a, ST_OVERLAY, a->upper);
    }
  }
  /* the paths were escaped by the host (',' ':' '\\'); /oldroot is prefixed there */
  if (mount("overlay", dst, "overlay", MS_NOSUID | MS_NODEV, a->ov_opts) != 0) fail(a, ST_OVERLAY, a->root);
  a->clone_fd = (int)syscall(SYS_open_tree, AT_FDCWD, dst, OPEN_TREE_CLONE | O_CLOEXEC); /* -1: none */
  if (a->root_ro && restrict_mount(dst, true, true, false) != 0) fail(a, ST_OVERLAY, a->root);
  if (a->skeleton) skeleton(a, 0, dst);
}

/* The proxy's authority for secrets over HTTPS (net/tlsca.c): its bundle
 * (the host's plus ours) in place of the system bundle, read-only. */
CHILD static void ca_bundle(init_arg *a) {
  if (!a->ca_bundle[0]) return;
  char *src = join(a->a, "/oldroot", a->ca_bundle, NULL);
  char *dst = join(a->b, "/newroot", SB_VIEW_CA_BUNDLE, NULL);
  struct stat st;
  if ((lstat(dst, &st) != 0 && touch(dst) != 0) || mount(src, dst, NULL, MS_BIND, NULL) != 0 ||
      restrict_mount(dst, true, true, true) != 0)
    fail(a, ST_ETC, SB_VIEW_CA_BUNDLE);
}

void sb_view_build(init_arg *a) {
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail(a, ST_PRIVATE, "/");
  /* a tmpfs to stand on, with the host's tree below it at /oldroot */
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") != 0) fail(a, ST_BASE, "/tmp");
  if (chdir("/tmp") != 0 || mkdir("newroot", 0755) != 0 || mkdir("oldroot", 0755) != 0) fail(a, ST_BASE, "/tmp");
  if (syscall(SYS_pivot_root, ".", "oldroot") != 0) fail(a, ST_PIVOT, "the host's root");
  if (chdir("/") != 0) fail(a, ST_PIVOT, "/");
  if (mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) fail(a, ST_NEWROOT, "/");
  if (a->minimal) { /* no command will see it: the overlay's mount for the file operations, alone */
    prepare_trees(a);
    overlay(a);
    goto finish;
  }
  system_dirs(a);
  etc_files(a);
  ca_bundle(a);
  scratch(a);
  dev(a);
  char *tmp = join(a->b, "/newroot/tmp", NULL, NULL);
  if (mkdirs(tmp) != 0 || mount("/scratch/tmp", tmp, NULL, MS_BIND, NULL) != 0 ||
      restrict_mount(tmp, false, true, false) != 0)
    fail(a, ST_TMP, "/tmp");
  proc(a);
  prepare_trees(a);
  /* /var/tmp is /tmp, unless a tree lives there (it is then a directory) */
  if (mkdirs(join(a->b, "/newroot/var", NULL, NULL)) != 0 ||
      (symlink("/tmp", "/newroot/var/tmp") != 0 && errno != EEXIST))
    fail(a, ST_TMP, "/var/tmp");
  pin_way(a, a->root);
  for (int i = 0; i < a->nro; i++) pin_way(a, a->ro[i]);
  if (a->overlay) overlay(a);
  else tree(a, 0, a->root, a->root_ro, true, a->root_dev, a->root_ino);
  for (int i = 0; i < a->nro; i++)
    tree(a, i < a->nread_roots ? i + 1 : -1, a->ro[i], true, a->ro_check[i], a->ro_dev[i], a->ro_ino[i]);
finish:
  /* switch: the host's tree goes, the new root stays, read-only itself */
  if (umount2("/oldroot", MNT_DETACH) != 0 || chdir("/newroot") != 0 || syscall(SYS_pivot_root, ".", ".") != 0 ||
      umount2(".", MNT_DETACH) != 0 || chdir("/") != 0)
    fail(a, ST_FINISH, "/");
  if (restrict_one("/", true, true, false, false) != 0) /* only the top: the trees below keep theirs */
    fail(a, ST_FINISH, "/ read-only");
  /* the keeper's handles on the trees as commands see them */
  if ((a->tree_fd[0] = open(a->root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) fail(a, ST_KEEPER, a->root);
  for (int i = 0; i < a->nread_roots; i++)
    if ((a->tree_fd[i + 1] = open(a->ro[i], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) fail(a, ST_KEEPER, a->ro[i]);
}
