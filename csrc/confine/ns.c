#include "confine/ns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"
#include "confine/system.h"
#include "exec/spawn.h" /* SB_CHILD_FN, sb_child_close_fds */

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

struct sb_mount_attr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

#define STACK_SIZE (256 * 1024)

/* The steps of the view, for messages. */
enum { ST_GO = 1, ST_HOSTNAME, ST_LOOPBACK, ST_PRIVATE, ST_BASE, ST_PIVOT, ST_NEWROOT, ST_SYSTEM,
       ST_ETC, ST_DEV, ST_PTS, ST_SHM, ST_TMP, ST_PROC, ST_PROC_RO, ST_ROOT, ST_ROOT_CHECK, ST_RO,
       ST_FINISH, ST_OVERLAY, ST_COUNT };
static const char *const step_names[ST_COUNT] = {
    NULL, "waiting for the host", "setting the host name", "bringing up the loopback",
    "making mounts private", "mounting a tmpfs", "pivot_root", "mounting the new root",
    "binding a system directory", "binding /etc", "building /dev", "mounting /dev/pts",
    "mounting /dev/shm", "mounting /tmp", "mounting /proc", "making /proc/sys read-only",
    "binding the sandbox root", "checking the bound root", "binding a read-only tree",
    "switching to the new root", "mounting the overlay"};

typedef struct report {
  int err, step;
  char detail[256];
} report;

/* Everything the init needs, prepared by the host: the child is a copy and
 * may only make system calls (the host may have other threads). */
typedef struct init_arg {
  int go_r, ready_w;
  unsigned long arg_start, arg_end, env_start, env_end; /* the host's, in the copy */
  bool network, userns;
  char tmp_opts[64];
  char root[SB_NS_PATH];
  dev_t root_dev;
  ino_t root_ino;
  bool overlay;             /* the root is an overlayfs: lower = root, these above it */
  char upper[SB_NS_PATH], work[SB_NS_PATH];
  dev_t upper_dev;
  ino_t upper_ino;
  char ov_opts[3 * 2 * SB_NS_PATH + 128];
  int nro;
  char ro[SB_NS_MAX_RO][SB_NS_PATH];
  bool ro_check[SB_NS_MAX_RO]; /* read roots: bound inode must be the held one */
  dev_t ro_dev[SB_NS_MAX_RO];
  ino_t ro_ino[SB_NS_MAX_RO];
  char a[SB_NS_PATH + 16], b[SB_NS_PATH + 16], c[SB_NS_PATH + 16], d[SB_NS_PATH + 16]; /* scratch */
  report rep;
} init_arg;

/* ---- in the child: system calls only ---------------------------------------- */

#define CHILD SB_CHILD_FN

CHILD static size_t slen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
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

CHILD static _Noreturn void fail(init_arg *a, int step, const char *detail) {
  a->rep.err = errno ? errno : EIO;
  a->rep.step = step;
  size_t i = 0;
  for (; detail && detail[i] && i + 1 < sizeof a->rep.detail; i++) a->rep.detail[i] = detail[i];
  a->rep.detail[i] = '\0';
  ssize_t w = write(a->ready_w, &a->rep, sizeof a->rep);
  (void)w;
  _exit(1);
}

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
  char *slash = path + slen(path);
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
  struct sb_mount_attr at = {.attr_set = MOUNT_ATTR_NOSUID | (ro ? MOUNT_ATTR_RDONLY : 0) |
                                         (nodev ? MOUNT_ATTR_NODEV : 0) | (noexec ? MOUNT_ATTR_NOEXEC : 0)};
  if (syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &at, sizeof at) == 0) return 0;
  if (errno != ENOSYS) return -1;
  unsigned long f = MS_BIND | MS_REMOUNT | MS_NOSUID | (ro ? MS_RDONLY : 0) | (nodev ? MS_NODEV : 0) |
                    (noexec ? MS_NOEXEC : 0);
  return mount(NULL, path, NULL, f, NULL);
}

CHILD static int restrict_mount(const char *path, bool ro, bool nodev, bool noexec) {
  return restrict_one(path, ro, nodev, noexec, true);
}

/* Bind src (a host path, under /oldroot) at dst, then restrict it. */
CHILD static int bind(char *src, char *dst, bool ro, bool nodev) {
  struct stat st;
  if (stat(src, &st) != 0) return -1;
  if ((S_ISDIR(st.st_mode) ? mkdirs(dst) : touch(dst)) != 0) return -1;
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
    } else if (bind(src, dst, true, true) != 0) {
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
        char *slash = dst + slen(dst);
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
        char *slash = src + slen(src);
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
    if (bind(src, dst, true, true) != 0) fail(a, ST_ETC, path);
  next:;
  }
}

/* A minimal /dev: the harmless nodes bound from the host, a private pts,
 * the usual symlinks, a private /dev/shm. */
CHILD static void dev(init_arg *a) {
  if (tmpfs(join(a->b, "/newroot/dev", NULL, NULL), "mode=0755", MS_NOSUID | MS_NOEXEC) != 0)
    fail(a, ST_DEV, "/dev");
  for (int i = 0; sb_system_dev[i]; i++) {
    char *src = join(a->a, "/oldroot", sb_system_dev[i], NULL);
    char *dst = join(a->b, "/newroot", sb_system_dev[i], NULL);
    if (touch(dst) != 0 || mount(src, dst, NULL, MS_BIND, NULL) != 0 ||
        restrict_mount(dst, false, false, true) != 0)
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
  if (mkdirs(pts) != 0 || mount("devpts", pts, "devpts", MS_NOSUID | MS_NOEXEC,
                                "newinstance,ptmxmode=0666,mode=0620") != 0)
    fail(a, ST_PTS, "/dev/pts");
  if (tmpfs(join(a->b, "/newroot/dev/shm", NULL, NULL), a->tmp_opts, MS_NOSUID | MS_NODEV) != 0)
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
  static const char *const masked[] = {"kcore", "keys", "timer_list", "sched_debug", "kmsg",
                                       "latency_stats", "acpi", "asound", "scsi"};
  for (size_t i = 0; i < sizeof masked / sizeof *masked; i++) {
    char *q = join(a->c, "/newroot/proc/", masked[i], NULL);
    struct stat st;
    if (stat(q, &st) != 0) continue;
    int r = S_ISDIR(st.st_mode) ? mount("tmpfs", q, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=0")
                                : mount("/newroot/dev/null", q, NULL, MS_BIND, NULL);
    if (r != 0) fail(a, ST_PROC_RO, masked[i]);
  }
}

/* A tree of the host at its real path: the sandbox root read-write, the
 * read roots and read_paths read-only. The held directories are checked
 * to be what got bound (a path swapped meanwhile is refused). */
CHILD static void tree(init_arg *a, const char *path, bool ro, bool check, dev_t dv, ino_t ino) {
  char *src = join(a->a, "/oldroot", path, NULL);
  char *dst = join(a->b, "/newroot", path, NULL);
  if (bind(src, dst, ro, true) != 0) fail(a, ro ? ST_RO : ST_ROOT, path);
  struct stat st;
  if (check && (stat(dst, &st) != 0 || st.st_dev != dv || st.st_ino != ino)) {
    errno = EXDEV;
    fail(a, ST_ROOT_CHECK, path);
  }
}

/* An OverlaySandbox's root: overlayfs at the root's path, the root itself
 * (as the host holds it) below, the sandbox's upper and work directories
 * above. No redirects and no metacopy: the upper layer holds whole files
 * and plain whiteouts, which the host's review reads. */
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
  if (stat(upper, &st) != 0) fail(a, ST_OVERLAY, a->upper);
  if (st.st_dev != a->upper_dev || st.st_ino != a->upper_ino) {
    errno = EXDEV;
    fail(a, ST_OVERLAY, a->upper);
  }
  if (mkdirs(dst) != 0) fail(a, ST_OVERLAY, a->root);
  /* the paths were escaped by the host (',' ':' '\\'); /oldroot is prefixed there */
  if (mount("overlay", dst, "overlay", MS_NOSUID | MS_NODEV, a->ov_opts) != 0) fail(a, ST_OVERLAY, a->root);
}

CHILD static void build_view(init_arg *a) {
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail(a, ST_PRIVATE, "/");
  /* a tmpfs to stand on, with the host's tree below it at /oldroot */
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") != 0) fail(a, ST_BASE, "/tmp");
  if (chdir("/tmp") != 0 || mkdir("newroot", 0755) != 0 || mkdir("oldroot", 0755) != 0)
    fail(a, ST_BASE, "/tmp");
  if (syscall(SYS_pivot_root, ".", "oldroot") != 0) fail(a, ST_PIVOT, "the host's root");
  if (chdir("/") != 0) fail(a, ST_PIVOT, "/");
  if (mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
    fail(a, ST_NEWROOT, "/");
  system_dirs(a);
  etc_files(a);
  dev(a);
  if (tmpfs(join(a->b, "/newroot/tmp", NULL, NULL), a->tmp_opts, MS_NOSUID | MS_NODEV) != 0)
    fail(a, ST_TMP, "/tmp");
  if (mkdirs(join(a->b, "/newroot/var", NULL, NULL)) != 0 || symlink("/tmp", "/newroot/var/tmp") != 0)
    fail(a, ST_TMP, "/var/tmp");
  proc(a);
  if (a->overlay) overlay(a);
  else tree(a, a->root, false, true, a->root_dev, a->root_ino);
  for (int i = 0; i < a->nro; i++) tree(a, a->ro[i], true, a->ro_check[i], a->ro_dev[i], a->ro_ino[i]);
  /* switch: the host's tree goes, the new root stays, read-only itself */
  if (umount2("/oldroot", MNT_DETACH) != 0 || chdir("/newroot") != 0 ||
      syscall(SYS_pivot_root, ".", ".") != 0 || umount2(".", MNT_DETACH) != 0 || chdir("/") != 0)
    fail(a, ST_FINISH, "/");
  if (restrict_one("/", true, true, false, false) != 0) /* only the top: the trees below keep theirs */
    fail(a, ST_FINISH, "/ read-only");
}

CHILD static int init_main(void *arg) {
  init_arg *a = arg;
  /* a copy of the host: keep nothing of it but our two pipe ends */
  sb_child_close_fds(a->go_r, a->ready_w);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < _NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, NULL);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_SETMASK, &chld, NULL); /* waited for below */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); /* the namespace dies with the host */
  /* the copy still carries the host's command line and environment, which
   * /proc/1 would show to commands: blank them, name the process */
  if (a->arg_end > a->arg_start) {
    static const char name[] = "sandbox-init";
    char *q = (char *)a->arg_start;
    size_t n = a->arg_end - a->arg_start;
    for (size_t i = 0; i < n; i++) q[i] = i < sizeof name ? name[i] : '\0';
  }
  if (a->env_end > a->env_start)
    for (char *p = (char *)a->env_start; p < (char *)a->env_end; p++) *p = '\0';
  prctl(PR_SET_NAME, "sandbox-init", 0, 0, 0);
  char go;
  errno = 0;
  if (read(a->go_r, &go, 1) != 1) fail(a, ST_GO, NULL); /* uid maps written (or the host is gone) */
  close(a->go_r);
  if (sethostname("sandbox", 7) != 0) fail(a, ST_HOSTNAME, NULL);
  if (a->network && sb_netns_loopback_up() != 0) fail(a, ST_LOOPBACK, "lo");
  build_view(a);
  a->rep.err = 0;
  if (write(a->ready_w, &a->rep, sizeof a->rep) != (ssize_t)sizeof a->rep) _exit(1);
  close(a->ready_w);
  /* pid 1: reap whatever is orphaned into the namespace, at once */
  for (;;) {
    while (waitpid(-1, NULL, WNOHANG | __WALL) > 0) {}
    siginfo_t si;
    sigwaitinfo(&chld, &si);
  }
}

/* ---- on the host --------------------------------------------------------------- */

void sb_ns_init(sb_ns *ns) {
  ns->init = -1;
  ns->pidfd = -1;
  ns->userns = false;
  for (int i = 0; i < SB_NS_COUNT; i++) ns->fd[i] = -1;
}

static int copy_path(char *dst, const char *src, char *why, size_t whylen) {
  size_t n = strlen(src);
  if (n == 0 || n >= SB_NS_PATH || src[0] != '/') {
    snprintf(why, whylen, "mount view: the path '%.100s' cannot be mounted (not absolute, or too long)", src);
    return -1;
  }
  memcpy(dst, src, n + 1);
  return 0;
}

static int fd_path(int fd, char *out, size_t cap) {
  char lnk[48];
  snprintf(lnk, sizeof lnk, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(lnk, out, cap - 1);
  if (n <= 0) return -1;
  out[n] = '\0';
  return 0;
}

/* Where the host's command line and environment lie (fields 48-51 of
 * /proc/self/stat), to blank them in the init's copy. */
static void mm_areas(init_arg *a) {
  char buf[2048];
  if (sb_read_small(AT_FDCWD, "/proc/self/stat", buf, sizeof buf) <= 0) return;
  char *p = strrchr(buf, ')'); /* the command name may hold anything */
  if (!p) return;
  unsigned long v[53] = {0};
  int field = 3; /* the state, after ") " */
  for (p++; *p && field <= 52; field++) {
    while (*p == ' ') p++;
    char *end;
    v[field] = strtoul(p, &end, 10);
    while (*end && *end != ' ') end++; /* a field that is not a number */
    p = end;
  }
  if (field > 51) {
    a->arg_start = v[48];
    a->arg_end = v[49];
    a->env_start = v[50];
    a->env_end = v[51];
  }
}

/* Fill the init's arguments from the view. */
/* Append "key=/oldroot<path>" to the overlay's options, escaping what its
 * option parser splits on. */
static int ov_opt(char *out, size_t cap, const char *key, const char *path) {
  size_t n = strlen(out);
  int w = snprintf(out + n, cap - n, "%s%s=/oldroot", n ? "," : "", key);
  if (w < 0 || (size_t)w >= cap - n) return -1;
  n += (size_t)w;
  for (const char *p = path; *p; p++) {
    if (n + 3 >= cap) return -1;
    if (*p == ',' || *p == ':' || *p == '\\') out[n++] = '\\';
    out[n++] = *p;
  }
  out[n] = '\0';
  return 0;
}

static int prepare_overlay(init_arg *a, const sb_ns_view *v, char *why, size_t whylen) {
  char upper[SB_NS_PATH], work[SB_NS_PATH];
  struct stat st;
  if (fd_path(v->upper_fd, upper, sizeof upper) != 0 || fd_path(v->work_fd, work, sizeof work) != 0 ||
      fstat(v->upper_fd, &st) != 0)
    return snprintf(why, whylen, "overlay: the state directory: %s", strerror(errno)), -1;
  if (copy_path(a->upper, upper, why, whylen) != 0 || copy_path(a->work, work, why, whylen) != 0) return -1;
  a->upper_dev = st.st_dev;
  a->upper_ino = st.st_ino;
  a->overlay = true;
  a->ov_opts[0] = '\0';
  if (ov_opt(a->ov_opts, sizeof a->ov_opts, "lowerdir", a->root) != 0 ||
      ov_opt(a->ov_opts, sizeof a->ov_opts, "upperdir", upper) != 0 ||
      ov_opt(a->ov_opts, sizeof a->ov_opts, "workdir", work) != 0)
    return snprintf(why, whylen, "overlay: the layers' paths are too long"), -1;
  size_t n = strlen(a->ov_opts);
  snprintf(a->ov_opts + n, sizeof a->ov_opts - n, ",redirect_dir=off,metacopy=off,index=off%s",
           v->userns ? ",userxattr" : "");
  return 0;
}

static int prepare(init_arg *a, const sb_ns_view *v, char *why, size_t whylen) {
  mm_areas(a);
  a->network = v->network;
  a->userns = v->userns;
  snprintf(a->tmp_opts, sizeof a->tmp_opts, "mode=1777,size=%llu", (unsigned long long)v->tmp_size);
  if (copy_path(a->root, v->root_path, why, whylen) != 0) return -1;
  if (strcmp(a->root, "/") == 0) {
    snprintf(why, whylen, "mount view: the sandbox root is / (the whole host), which a view cannot "
             "hide anything from; use a directory, or confine = {namespaces = false}");
    return -1;
  }
  struct stat st;
  if (fstat(v->root_fd, &st) != 0) return snprintf(why, whylen, "mount view: %s", strerror(errno)), -1;
  a->root_dev = st.st_dev;
  a->root_ino = st.st_ino;
  if (v->upper_fd >= 0 && prepare_overlay(a, v, why, whylen) != 0) return -1;
  for (size_t i = 0; i < v->nro; i++) {
    if ((size_t)a->nro >= SB_NS_MAX_RO) break;
    char real[SB_NS_PATH];
    if (fd_path(v->ro_fds[i], real, sizeof real) != 0 || fstat(v->ro_fds[i], &st) != 0 ||
        copy_path(a->ro[a->nro], real, why, whylen) != 0)
      return why[0] ? -1 : (snprintf(why, whylen, "mount view: a read root: %s", strerror(errno)), -1);
    a->ro_check[a->nro] = true;
    a->ro_dev[a->nro] = st.st_dev;
    a->ro_ino[a->nro] = st.st_ino;
    a->nro++;
  }
  for (size_t i = 0; v->read_paths && v->read_paths[i]; i++) {
    if ((size_t)a->nro >= SB_NS_MAX_RO) break;
    if (copy_path(a->ro[a->nro], v->read_paths[i], why, whylen) != 0) return -1;
    a->ro_check[a->nro++] = false;
  }
  return 0;
}

/* uid and gid maps of the init's user namespace: the host's ids as
 * themselves (files commands create belong to the host user). */
static int write_maps(pid_t pid) {
  char path[64], map[64];
  snprintf(map, sizeof map, "%d %d 1\n", (int)geteuid(), (int)geteuid());
  snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
  if (sb_write_small(AT_FDCWD, path, map) != 0) return -1;
  snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
  if (sb_write_small(AT_FDCWD, path, "deny") != 0) return -1;
  snprintf(map, sizeof map, "%d %d 1\n", (int)getegid(), (int)getegid());
  snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
  return sb_write_small(AT_FDCWD, path, map);
}

static const char *const ns_names[SB_NS_COUNT] = {"user", "mnt", "ipc", "uts", "cgroup", "net", "pid"};

int sb_ns_create(sb_ns *ns, const sb_ns_view *v, char *why, size_t whylen) {
  sb_ns_init(ns);
  why[0] = '\0';
  init_arg *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  int go[2] = {-1, -1}, ready[2] = {-1, -1};
  pid_t pid = -1;
  int rc = -1;
  if (a == MAP_FAILED || stack == MAP_FAILED || pipe2(go, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0) {
    snprintf(why, whylen, "namespaces: %s", strerror(errno));
    goto out;
  }
  memset(a, 0, sizeof *a);
  if (prepare(a, v, why, whylen) != 0) goto out;
  a->go_r = go[0];
  a->ready_w = ready[1];
  int flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
              (v->network ? CLONE_NEWNET : 0) | (v->userns ? CLONE_NEWUSER : 0) | SIGCHLD;
  pid = clone(init_main, (char *)stack + STACK_SIZE, flags, a);
  if (pid < 0) {
    int e = errno;
    if (v->userns && (e == EPERM || e == ENOSPC || e == EACCES))
      snprintf(why, whylen, "namespaces: user namespaces are refused here (%s): Docker's default "
               "seccomp profile and Ubuntu's kernel.apparmor_restrict_unprivileged_userns do this, as "
               "does user.max_user_namespaces = 0; run as root, allow them, or set confine = "
               "{namespaces = false} (capabilities dropped, seccomp and Landlock stay)", strerror(e));
    else
      snprintf(why, whylen, "namespaces: cannot create the sandbox's namespaces (%s); set confine = "
               "{namespaces = false} to run commands without them (capabilities dropped, seccomp and "
               "Landlock stay)", strerror(e));
    goto out;
  }
  close(go[0]);
  go[0] = -1;
  close(ready[1]);
  ready[1] = -1;
  if (v->userns && write_maps(pid) != 0) {
    snprintf(why, whylen, "namespaces: cannot map the user namespace's ids (%s)", strerror(errno));
    goto out;
  }
  ns->userns = v->userns;
  if (write(go[1], "g", 1) != 1) {
    snprintf(why, whylen, "namespaces: the init is gone (%s)", strerror(errno));
    goto out;
  }
  report r;
  ssize_t n;
  while ((n = read(ready[0], &r, sizeof r)) < 0 && errno == EINTR) {}
  if (n != (ssize_t)sizeof r) {
    snprintf(why, whylen, "mount view: the init ended without a word");
    goto out;
  }
  if (r.err) {
    r.detail[sizeof r.detail - 1] = '\0';
    snprintf(why, whylen, "mount view: %s%s%s failed: %s; set confine = {namespaces = false} to run "
             "commands without their own namespaces (capabilities dropped, seccomp and Landlock stay)",
             r.step > 0 && r.step < ST_COUNT ? step_names[r.step] : "a step", r.detail[0] ? " " : "",
             r.detail, strerror(r.err));
    goto out;
  }
  char path[64];
  for (int i = 0; i < SB_NS_COUNT; i++) {
    if ((i == SB_NS_USER && !v->userns) || (i == SB_NS_NET && !v->network)) continue;
    snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, ns_names[i]);
    if ((ns->fd[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
      snprintf(why, whylen, "namespaces: cannot open %s (%s)", path, strerror(errno));
      goto out;
    }
  }
  ns->pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* -1 without pidfd: kill by pid then */
  ns->init = pid;
  pid = -1;
  rc = 0;
out:
  if (pid > 0) {
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
  }
  if (rc != 0) sb_ns_close(ns);
  for (int i = 0; i < 2; i++) {
    if (go[i] >= 0) close(go[i]);
    if (ready[i] >= 0) close(ready[i]);
  }
  if (stack != MAP_FAILED) munmap(stack, STACK_SIZE);
  if (a != MAP_FAILED) munmap(a, sizeof *a);
  return rc;
}

const sb_netns *sb_ns_netns(const sb_ns *ns, sb_netns *out) {
  if (ns->fd[SB_NS_NET] < 0) return NULL;
  out->net = ns->fd[SB_NS_NET];
  out->user = ns->fd[SB_NS_USER];
  return out;
}

int sb_ns_open(const sb_ns *ns, const char *path) {
  char p[SB_NS_PATH + 64];
  snprintf(p, sizeof p, "/proc/%d/root%s", (int)ns->init, path);
  return open(p, O_PATH | O_CLOEXEC);
}

void sb_ns_close(sb_ns *ns) {
  if (ns->init > 0) {
    if (ns->pidfd >= 0) syscall(SYS_pidfd_send_signal, ns->pidfd, SIGKILL, NULL, 0);
    else kill(ns->init, SIGKILL);
    while (waitpid(ns->init, NULL, __WALL) < 0 && errno == EINTR) {}
  }
  if (ns->pidfd >= 0) close(ns->pidfd);
  for (int i = 0; i < SB_NS_COUNT; i++)
    if (ns->fd[i] >= 0) close(ns->fd[i]);
  sb_ns_init(ns);
}
