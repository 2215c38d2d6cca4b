/* The sandbox's namespaces and the host's side of their init (see ns.h):
 * the init is a program of its own (csrc/init/main.c), the view it builds
 * confine/view.c. */
#include "confine/ns.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/child.h"
#include "base/file.h"
#include "confine/netns.h"
#include "confine/ns_impl.h"
#include "plat/fd.h"
#include "plat/proc.h"

#define STACK_SIZE (256 * 1024)

/* ---- starting the init ---------------------------------------------------------- */

/* The init program's bytes (confine/init_program.c). */
extern const unsigned char sb_init_program[], sb_init_program_end[];

typedef struct start_arg {
  int prog, ctl, go_r, arg;
  int err; /* set by the child when it cannot exec (it shares our memory) */
} start_arg;

/* Our capabilities carried across the exec as ambient ones: with a user
 * namespace the exec comes before the host maps our ids, so the kernel
 * does not see root in us then and would drop them (and a root host with
 * SECBIT_NOROOT would too). */
CHILD static int keep_caps(void) {
  sb_cap_header h = {SB_CAP_VERSION_3, 0};
  /* zeroed: valgrind's capget marks only the first of the two written */
  sb_cap_data d[2] = {{0}};
  if (syscall(SYS_capget, &h, d) != 0) return -1;
  d[0].inheritable = d[0].permitted;
  d[1].inheritable = d[1].permitted;
  if (syscall(SYS_capset, &h, d) != 0) return -1;
  for (int cap = 0; cap < 64; cap++)
    if (cap < 32 ? d[0].permitted >> cap & 1 : d[1].permitted >> (cap - 32) & 1)
      if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0) return -1;
  return 0;
}

/* The vfork-style child, already in the new namespaces: our three fds in
 * the init's places, nothing else of ours, the program from its memfd. */
CHILD static int start_main(void *arg) {
  start_arg *s = arg;
  sb_child_default_signals(); /* no handler of the host's may run here */
  const int fds[] = {[SB_INIT_CTL_FD - 3] = s->ctl, [SB_INIT_GO_FD - 3] = s->go_r, [SB_INIT_ARG_FD - 3] = s->arg};
  _Static_assert(SB_INIT_PROG_FD == 3 + sizeof fds / sizeof fds[0], "the program follows the init's fds");
  if (keep_caps() == 0) sb_child_exec_program(s->prog, fds, 3, "sandbox-init");
  s->err = errno ? errno : EIO;
  _exit(127);
}

/* What the init says failed, for the host's message. */
const char *const sb_view_step_names[ST_COUNT] = {NULL,
                                                  "waiting for the host",
                                                  "setting the host name",
                                                  "bringing up the loopback",
                                                  "making mounts private",
                                                  "mounting a tmpfs",
                                                  "pivot_root",
                                                  "mounting the new root",
                                                  "binding a system directory",
                                                  "binding /etc",
                                                  "building /dev",
                                                  "mounting /dev/pts",
                                                  "mounting /dev/shm",
                                                  "mounting /tmp",
                                                  "mounting /proc",
                                                  "making /proc/sys read-only",
                                                  "binding the sandbox root",
                                                  "checking the bound root",
                                                  "binding a read-only tree",
                                                  "switching to the new root",
                                                  "mounting the overlay",
                                                  "pinning the way to a tree",
                                                  "making a tree's skeleton",
                                                  "opening the view's trees"};

/* ---- on the host --------------------------------------------------------------- */

void sb_ns_init(sb_ns *ns) {
  ns->init = -1;
  ns->pidfd = -1;
  ns->ctl = -1;
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

/* Fill the init's arguments from the view. */
/* Append "key=/oldroot<path>" to the overlay's options, escaping what its
 * option parser splits on. */
static int ov_opt(char *out, size_t cap, const char *key, const char *path) {
  size_t n = strlen(out);
  bool mem = strncmp(path, "/upperfs/", 9) == 0; /* the init's own, not the host's */
  int w = snprintf(out + n, cap - n, "%s%s=%s", n ? "," : "", key, mem ? "" : "/oldroot");
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
  if (sb_fd_path(v->upper_fd, upper, sizeof upper) != 0 || sb_fd_path(v->work_fd, work, sizeof work) != 0 ||
      fstat(v->upper_fd, &st) != 0)
    return snprintf(why, whylen, "overlay: the state directory: %s", strerror(errno)), -1;
  if (v->upper_size) { /* the layers on a tmpfs of that size, made by the init */
    snprintf(upper, sizeof upper, "/upperfs/upper");
    snprintf(work, sizeof work, "/upperfs/work");
    snprintf(a->upper_opts, sizeof a->upper_opts, "mode=0755,size=%llu,nr_inodes=%llu",
             (unsigned long long)v->upper_size, (unsigned long long)sb_ns_upper_inodes(v->upper_size));
  }
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
  /* in a user namespace the kernel takes only redirect_dir=nofollow with
   * userxattr (it never makes redirects either way: the upper layer holds
   * plain directories and whiteouts, as the review reads it) */
  snprintf(a->ov_opts + n, sizeof a->ov_opts - n, ",%s,metacopy=off,index=off",
           v->userns ? "userxattr,redirect_dir=nofollow" : "redirect_dir=off");
  return 0;
}

static int prepare(init_arg *a, const sb_ns_view *v, char *why, size_t whylen) {
  a->network = v->network;
  a->userns = v->userns;
  /* as root, the network namespace is made beside the init while it builds
   * the view (in the init's clone, ~1 ms here, it came before the view);
   * under a user namespace of the init's own, only the init can own it */
  a->net_later = v->network && !v->userns;
  /* bytes, and inodes in proportion (one per 16 KiB): a command cannot pin
   * unbounded kernel memory with empty files */
  snprintf(a->tmp_opts, sizeof a->tmp_opts, "mode=0755,size=%llu,nr_inodes=%llu", (unsigned long long)v->tmp_size,
           (unsigned long long)sb_ns_tmp_inodes(v->tmp_size));
  a->root_ro = v->root_ro;
  a->minimal = v->minimal;
  a->skeleton = v->skeleton;
  if (copy_path(a->root, v->root_path, why, whylen) != 0) return -1;
  if (strcmp(a->root, "/") == 0) {
    snprintf(why, whylen,
             "mount view: the sandbox root is / (the whole host), which a view cannot "
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
    if (sb_fd_path(v->ro_fds[i], real, sizeof real) != 0 || fstat(v->ro_fds[i], &st) != 0 ||
        copy_path(a->ro[a->nro], real, why, whylen) != 0)
      return why[0] ? -1 : (snprintf(why, whylen, "mount view: a read root: %s", strerror(errno)), -1);
    a->ro_check[a->nro] = true;
    a->ro_dev[a->nro] = st.st_dev;
    a->ro_ino[a->nro] = st.st_ino;
    a->nro++;
  }
  a->nread_roots = a->nro;
  if (v->ca_bundle && copy_path(a->ca_bundle, v->ca_bundle, why, whylen) != 0) return -1;
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

/* The init's answer to a request sent on ctl (and the fd it sends into
 * *fd_out). 0, or -1 with errno. */
static int answer(int ctl, int *fd_out) {
  if (fd_out) *fd_out = -1;
  /* the init answers at once; one that does not within 10 s is broken */
  struct pollfd p = {.fd = ctl, .events = POLLIN};
  int r;
  while ((r = poll(&p, 1, 10000)) < 0 && errno == EINTR) {}
  if (r != 1) return errno = ETIMEDOUT, -1;
  sb_ns_answer ans;
  int fd = -1, nfds;
  ssize_t n = sb_recv_fds(ctl, &ans, sizeof ans, &fd, 1, &nfds); /* a second fd is closed */
  if (n != (ssize_t)sizeof ans) {
    if (nfds) close(fd);
    return errno = EIO, -1;
  }
  if (fd_out) *fd_out = fd;
  else if (nfds) close(fd);
  if (ans.err) return errno = ans.err, -1;
  return 0;
}

/* Send the request m (with infd, unless -1) over ctl. 0, or -1 (EIO). */
static int ask(int ctl, const sb_ns_msg *m, int infd) {
  return sb_send_fds(ctl, m, sizeof *m, &infd, infd >= 0 ? 1 : 0) == 0 ? 0 : (errno = EIO, -1);
}

/* SB_NS_NETJOIN for the init, with the network namespace it joins (or -1:
 * it makes one). Sent while the init still builds the view: it reads it
 * after its report, so no round trip waits for it. */
static int ask_netjoin(int ctl, int netfd) {
  sb_ns_msg *m = calloc(1, sizeof *m);
  if (!m) return errno = ENOMEM, -1;
  m->op = SB_NS_NETJOIN;
  int r = ask(ctl, m, netfd);
  free(m);
  return r;
}

/* The init's arguments in a memfd it maps at its start (zeros: no memset,
 * whose page faults the host would take). */
static init_arg *arg_file(int *fd) {
  *fd = sb_anon_file("sandbox-init-arg");
  if (*fd < 0) return MAP_FAILED;
  if (ftruncate(*fd, sizeof(init_arg)) != 0) return MAP_FAILED;
  return mmap(NULL, sizeof(init_arg), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
}

int sb_ns_create(sb_ns *ns, const sb_ns_view *v, char *why, size_t whylen) {
  sb_ns_init(ns);
  why[0] = '\0';
  int argfd = -1, prog = -1;
  init_arg *a = arg_file(&argfd);
  void *stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  int go[2] = {-1, -1}, ctl[2] = {-1, -1}, netfd = -1;
  pid_t pid = -1;
  int rc = -1;
  if (a == MAP_FAILED || stack == MAP_FAILED || pipe2(go, O_CLOEXEC) != 0 ||
      socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) != 0) {
    snprintf(why, whylen, "namespaces: %s", strerror(errno));
    goto out;
  }
  prog = sb_program_file("sandbox-init", sb_init_program, (size_t)(sb_init_program_end - sb_init_program));
  if (prog < 0) {
    snprintf(why, whylen,
             "namespaces: cannot hold the sandbox's init program in a memfd (%s); where the "
             "sysctl vm.memfd_noexec is 2, set it to 0 or 1, or set confine = {namespaces = false}",
             strerror(errno));
    goto out;
  }
  if (prepare(a, v, why, whylen) != 0) goto out;
  int flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
      (v->network && !a->net_later ? CLONE_NEWNET : 0) | (v->userns ? CLONE_NEWUSER : 0) | SIGCHLD;
  /* The init is exec'd by a child that shares our memory until then (no
   * copy of the host's page tables, none of its pages shared). Every
   * signal blocked across the clone, as for a command: the child has the
   * host's handlers until it resets them. */
  start_arg sa = {.prog = prog, .ctl = ctl[1], .go_r = go[0], .arg = argfd};
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pid = clone(start_main, (char *)stack + STACK_SIZE, flags | CLONE_VM | CLONE_VFORK, &sa);
  int cerr = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (pid < 0) {
    int e = cerr;
    if (v->userns && (e == EPERM || e == ENOSPC || e == EACCES))
      snprintf(why, whylen,
               "namespaces: user namespaces are refused here (%s): Docker's default "
               "seccomp profile and Ubuntu's kernel.apparmor_restrict_unprivileged_userns do this, as "
               "does user.max_user_namespaces = 0; run as root, allow them, or set confine = "
               "{namespaces = false} (capabilities dropped, seccomp and Landlock stay)",
               strerror(e));
    else
      snprintf(why, whylen,
               "namespaces: cannot create the sandbox's namespaces (%s); set confine = "
               "{namespaces = false} to run commands without them (capabilities dropped, seccomp and "
               "Landlock stay)",
               strerror(e));
    goto out;
  }
  if (sa.err) { /* it ended without running the program (reaped below) */
    snprintf(why, whylen,
             "namespaces: cannot start the sandbox's init (%s); where the sysctl vm.memfd_noexec "
             "is 2, set it to 0 or 1, or set confine = {namespaces = false}",
             strerror(sa.err));
    goto out;
  }
  close(go[0]);
  go[0] = -1;
  close(ctl[1]);
  ctl[1] = -1;
  if (v->userns && write_maps(pid) != 0) {
    snprintf(why, whylen, "namespaces: cannot map the user namespace's ids (%s)", strerror(errno));
    goto out;
  }
  ns->userns = v->userns;
  if (write(go[1], "g", 1) != 1) {
    snprintf(why, whylen, "namespaces: the init is gone (%s)", strerror(errno));
    goto out;
  }
  /* SANDBOX_NETNS_IN_INIT: the init makes it after the view (test switch) */
  sb_netns_job job;
  bool net_here = a->net_later && !getenv("SANDBOX_NETNS_IN_INIT");
  if (net_here) sb_netns_job_start(&job);
  if (v->meanwhile) v->meanwhile(v->meanwhile_arg);
  if (net_here) netfd = sb_netns_job_finish(&job);
  if (a->net_later && ask_netjoin(ctl[0], netfd) != 0) {
    snprintf(why, whylen, "namespaces: cannot hand the init its network namespace (%s)", strerror(errno));
    goto out;
  }
  sb_ns_report r;
  ssize_t n;
  while ((n = recv(ctl[0], &r, sizeof r, 0)) < 0 && errno == EINTR) {}
  if (n != (ssize_t)sizeof r) {
    snprintf(why, whylen, "mount view: the init ended without a word");
    goto out;
  }
  if (r.err) {
    r.detail[sizeof r.detail - 1] = '\0';
    snprintf(why, whylen,
             "mount view: %s%s%s failed: %s; set confine = {namespaces = false} to run "
             "commands without their own namespaces (capabilities dropped, seccomp and Landlock stay)",
             r.step > 0 && r.step < ST_COUNT ? sb_view_step_names[r.step] : "a step", r.detail[0] ? " " : "", r.detail,
             strerror(r.err));
    goto out;
  }
  if (a->net_later && answer(ctl[0], NULL) != 0) {
    snprintf(why, whylen, "namespaces: the init cannot join its network namespace (%s)", strerror(errno));
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
  ns->pidfd = sb_pidfd_open(pid); /* -1 without pidfd: kill by pid then */
  ns->init = pid;
  ns->ctl = ctl[0];
  ctl[0] = -1;
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
    if (ctl[i] >= 0) close(ctl[i]);
  }
  if (netfd >= 0) close(netfd);
  if (stack != MAP_FAILED) munmap(stack, STACK_SIZE);
  if (a != MAP_FAILED) munmap(a, sizeof *a);
  if (argfd >= 0) close(argfd);
  if (prog >= 0) close(prog);
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

int sb_ns_request(sb_ns *ns, int op, int tree, const char *path, const char *target, int *fd_out) {
  if (fd_out) *fd_out = -1;
  if (ns->ctl < 0) return errno = ESRCH, -1;
  static const size_t cap = sizeof(((sb_ns_msg *)0)->path);
  size_t pl = strlen(path), tl = target ? strlen(target) : 0;
  if (pl >= cap || tl >= cap) return errno = ENAMETOOLONG, -1;
  sb_ns_msg *m = calloc(1, sizeof *m);
  if (!m) return errno = ENOMEM, -1;
  m->op = op;
  m->tree = tree;
  memcpy(m->path, path, pl + 1);
  if (target) memcpy(m->target, target, tl + 1);
  int r = ask(ns->ctl, m, -1) == 0 ? answer(ns->ctl, fd_out) : -1;
  int err = errno;
  free(m);
  errno = err;
  return r;
}

void sb_ns_close(sb_ns *ns) {
  if (ns->init > 0) {
    if (ns->pidfd >= 0) sb_pidfd_signal(ns->pidfd, SIGKILL);
    else kill(ns->init, SIGKILL);
    while (waitpid(ns->init, NULL, __WALL) < 0 && errno == EINTR) {}
  }
  if (ns->pidfd >= 0) close(ns->pidfd);
  if (ns->ctl >= 0) close(ns->ctl);
  for (int i = 0; i < SB_NS_COUNT; i++)
    if (ns->fd[i] >= 0) close(ns->fd[i]);
  sb_ns_init(ns);
}
