/* The sandbox's namespaces and their init (see ns.h); the view itself is
 * confine/view.c. */
#include "confine/ns.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"
#include "confine/netns.h"
#include "confine/ns_impl.h"
#include "plat/fd.h"
#include "plat/proc.h"

#define STACK_SIZE (256 * 1024)

/* ---- in the init: system calls only ------------------------------------------ */

/* The host's first request when the network namespace comes after the
 * view: join the one it sends, or make one (none came); answered, then the
 * init serves as usual. -1: the init must end (it is still in the host's
 * network namespace then; the host fails the sandbox). */
CHILD static int join_net(init_arg *a) {
  int fd = -1, nfds = 0;
  ssize_t n = sb_recv_fds(a->ctl, &a->msg, sizeof a->msg, &fd, 1, &nfds);
  sb_ns_answer ans = {EPROTO};
  if (n == (ssize_t)sizeof a->msg && a->msg.op == SB_NS_NETJOIN) {
    errno = EIO;
    int r = nfds ? setns(fd, CLONE_NEWNET) : unshare(CLONE_NEWNET) == 0 ? sb_netns_loopback_up() : -1;
    ans.err = r == 0 ? 0 : errno;
  }
  if (nfds) close(fd);
  return send(a->ctl, &ans, sizeof ans, MSG_NOSIGNAL) == (ssize_t)sizeof ans && !ans.err ? 0 : -1;
}

/* The host's requests, one at a time; the answer carries an fd for
 * SB_NS_CLONE. */
CHILD static void serve(init_arg *a) {
  ssize_t n = recv(a->ctl, &a->msg, sizeof a->msg, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) { /* the host is gone or done */
    close(a->ctl);
    a->ctl = -1;
    return;
  }
  if (n < 0) return;
  sb_ns_answer ans = {EINVAL};
  int fd = -1;
  if ((size_t)n == sizeof a->msg) {
    a->msg.path[sizeof a->msg.path - 1] = a->msg.target[sizeof a->msg.target - 1] = '\0';
    ans.err = sb_view_request(a, &a->msg, &fd);
  }
  sb_send_fds(a->ctl, &ans, sizeof ans, &fd, fd >= 0 ? 1 : 0);
  if (fd >= 0) close(fd);
}

CHILD static int init_main(void *arg) {
  init_arg *a = arg;
  /* a copy of the host: keep nothing of it but the go pipe and our end of
   * the control socket (the report goes there too) */
  sb_child_close_fds(a->go_r, a->ctl);
  for (int t = 0; t < SB_VIEW_TREES; t++) a->tree_fd[t] = a->real_fd[t] = a->skel_fd[t] = -1;
  a->clone_fd = a->upper_fd = -1;
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
  /* We hold the real trees under the view's masks. No command reaches our
   * fds, root or memory through /proc/1: that takes ptrace access, which a
   * process holding fewer capabilities than we do never has (commands hold
   * none). We stay dumpable: the host joins our namespaces through our
   * pidfd, which needs the same access. */
  char go;
  errno = 0;
  if (read(a->go_r, &go, 1) != 1) sb_view_fail(a, ST_GO, NULL); /* uid maps written (or the host is gone) */
  close(a->go_r);
  if (sethostname("sandbox", 7) != 0) sb_view_fail(a, ST_HOSTNAME, NULL);
  if (a->network && !a->net_later && sb_netns_loopback_up() != 0) sb_view_fail(a, ST_LOOPBACK, "lo");
  sb_view_build(a);
  a->rep.err = 0;
  if (send(a->ctl, &a->rep, sizeof a->rep, MSG_NOSIGNAL) != (ssize_t)sizeof a->rep) _exit(1);
  if (a->net_later && join_net(a) != 0) _exit(1);
  /* pid 1: reap whatever is orphaned into the namespace, at once, and keep
   * the view for the host */
  int sig = (int)syscall(SYS_signalfd4, -1, &chld, sizeof(uint64_t), SFD_CLOEXEC | SFD_NONBLOCK);
  for (;;) {
    while (waitpid(-1, NULL, WNOHANG | __WALL) > 0) {}
    if (sig < 0) { /* no signalfd: no keeper either */
      siginfo_t si;
      sigwaitinfo(&chld, &si);
      continue;
    }
    struct pollfd p[2] = {{.fd = sig, .events = POLLIN}, {.fd = a->ctl, .events = POLLIN}};
    if (poll(p, a->ctl >= 0 ? 2 : 1, -1) < 0) continue;
    if (p[0].revents) {
      struct signalfd_siginfo si;
      while (read(sig, &si, sizeof si) > 0) {}
    }
    if (a->ctl >= 0 && p[1].revents) serve(a);
  }
}

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
  mm_areas(a);
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

int sb_ns_create(sb_ns *ns, const sb_ns_view *v, char *why, size_t whylen) {
  sb_ns_init(ns);
  why[0] = '\0';
  init_arg *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  int go[2] = {-1, -1}, ctl[2] = {-1, -1}, netfd = -1;
  pid_t pid = -1;
  int rc = -1;
  if (a == MAP_FAILED || stack == MAP_FAILED || pipe2(go, O_CLOEXEC) != 0 ||
      socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) != 0) {
    snprintf(why, whylen, "namespaces: %s", strerror(errno));
    goto out;
  }
  /* a fresh anonymous mapping is zeros: no memset, whose 31 page faults the
   * host would take and its fork copy */
  if (prepare(a, v, why, whylen) != 0) goto out;
  a->go_r = go[0];
  a->ctl = ctl[1];
  int flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
      (v->network && !a->net_later ? CLONE_NEWNET : 0) | (v->userns ? CLONE_NEWUSER : 0) | SIGCHLD;
  pid = clone(init_main, (char *)stack + STACK_SIZE, flags, a);
  if (pid < 0) {
    int e = errno;
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
