/* sandbox-rtree: a remote command's keeper on the engine (remote/tree.h,
 * remote/helper.h). A static program a remote runner uploads once per
 * sandbox and starts each command under, in place of the sh wrapper: one
 * exec of a small static image, where the wrapper cost a second shell
 * and its script (docs/PERFORMANCE.md). Built apart, with nothing of the
 * module (plain libc, linked statically), for the engine's architecture.
 *
 *   sandbox-rtree check                         prints SB_RHELPER_HELLO
 *   sandbox-rtree run DEADLINE GRACE CMD [ARG]  (seconds; a DEADLINE of 0 is none)
 *   sandbox-rtree kill SIG MARK                 (SIG by name: TERM, KILL, ...)
 *   sandbox-rtree remove                        its own file and directory
 *
 * run: the look-up execvp makes, answered by the first byte of stdout
 * (SB_RTREE_GO, or SB_RTREE_ENOENT / SB_RTREE_EACCES and nothing run), then
 * the command as its child. The helper is the child subreaper of all the
 * command starts, so whatever it leaves — a double-forked daemon, one that
 * left its session, one that rewrote its environment — stays a descendant;
 * when the command ends and anything is left, all of it is killed before
 * the helper ends (the wrapper could only find what kept the mark). With a
 * deadline: SIGTERM to the tree at it, SIGKILL a grace later (the backstop
 * for a host that went away mid-command). The signals a kill of the tree
 * sends do not end the helper before its command, and it ends as the
 * command did: by the same signal, or with its exit status.
 *
 * kill: the signal to every process whose environment holds the mark and
 * to all below them; SIGKILL until two scans in a row find none. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "remote/tree_proto.h"

extern char **environ;

static void say(const char *a, const char *b, const char *c) {
  const char *parts[] = {"sandbox-rtree: ", a, b, c, "\n"};
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    if (parts[i] && write(2, parts[i], strlen(parts[i])) < 0) return;
}

/* Small formatting of our own: stdio's would be most of the program's
 * size, and the program's bytes travel in every runner's first upload. */
static char *cat(char *d, const char *end, const char *s) {
  while (*s && d < end) *d++ = *s++;
  *d = '\0';
  return d;
}

static char *num(char *d, const char *end, long v) {
  char tmp[24];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (n && d < end) *d++ = tmp[--n];
  *d = '\0';
  return d;
}

/* "/proc/PID/what" into buf (40 bytes) */
static const char *proc_path(char *buf, long pid, const char *what) {
  char *end = buf + 39;
  cat(num(cat(buf, end, "/proc/"), end, pid), end, what);
  return buf;
}

/* Seconds as the runner writes them ("12.50"); 0 for anything else. */
static double seconds(const char *s) {
  double v = 0, scale = 1;
  bool frac = false;
  for (; *s; s++) {
    if (*s == '.' && !frac) frac = true;
    else if (*s >= '0' && *s <= '9') {
      if (frac) v += (scale /= 10) * (*s - '0');
      else v = v * 10 + (*s - '0');
    } else return 0;
  }
  return v;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ---- the processes of a tree ------------------------------------------- */

typedef struct proc {
  int pid, ppid;
  bool in;
} proc;

typedef struct table {
  proc *p;
  size_t n, cap;
} table;

/* Does /proc/PID/environ hold exactly this entry? (read in pieces: an
 * environment can be large; an unreadable one is not ours) */
static bool env_has(int pid, const char *entry, size_t elen) {
  char path[40], buf[4096];
  int fd = open(proc_path(path, pid, "/environ"), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t pos = 0;
  bool match = true, found = false;
  ssize_t n;
  while (!found && (n = read(fd, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n && !found; i++) {
      if (buf[i] == '\0') {
        found = match && pos == elen;
        match = true;
        pos = 0;
      } else if (match) {
        match = pos < elen && entry[pos] == buf[i];
        pos++;
      }
    }
  close(fd);
  return found || (match && pos == elen);
}

static int by_pid(const void *a, const void *b) { return ((const proc *)a)->pid - ((const proc *)b)->pid; }

/* Every process, its parent, and whether it is in the tree: roots (the
 * helper itself, or those with the mark) and all below them. */
static bool scan(table *t, int root, const char *entry) {
  t->n = 0;
  DIR *d = opendir("/proc");
  if (!d) return false;
  size_t elen = entry ? strlen(entry) : 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    char *end;
    long pid = strtol(de->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    char path[40], buf[512];
    int fd = open(proc_path(path, pid, "/stat"), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    /* the name may hold anything: the fields follow its last ')':
     * " S PPID ..." */
    char *rp = strrchr(buf, ')');
    if (!rp || rp[1] != ' ' || !rp[2] || rp[3] != ' ') continue;
    long ppid = strtol(rp + 4, &end, 10);
    if (end == rp + 4) continue;
    if (t->n == t->cap) {
      size_t cap = t->cap ? 2 * t->cap : 256;
      proc *p = realloc(t->p, cap * sizeof *p);
      if (!p) break;
      t->p = p;
      t->cap = cap;
    }
    bool in = pid == root || (entry && env_has((int)pid, entry, elen));
    t->p[t->n++] = (proc){(int)pid, (int)ppid, in};
  }
  closedir(d);
  qsort(t->p, t->n, sizeof *t->p, by_pid);
  for (bool more = true; more;) { /* below what is in: in */
    more = false;
    for (size_t i = 0; i < t->n; i++) {
      if (t->p[i].in) continue;
      proc key = {.pid = t->p[i].ppid};
      proc *parent = bsearch(&key, t->p, t->n, sizeof *t->p, by_pid);
      if (parent && parent->in) more = t->p[i].in = true;
    }
  }
  return true;
}

/* sig to the tree but `spare`; how many were signalled. */
static int sweep(table *t, int sig, int root, const char *entry, int spare) {
  if (!scan(t, root, entry)) return 0;
  int n = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->p[i].in && t->p[i].pid != spare && kill(t->p[i].pid, sig) == 0) n++;
  return n;
}

/* ---- run ------------------------------------------------------------------ */

/* As the sh wrapper's look-up (execvp's): a path with a slash as it is, a
 * name on PATH (an empty entry is "."); a regular executable file found,
 * or EACCES where only something else was, else ENOENT. */
static int lookup(const char *name, char *out, size_t cap) {
  struct stat st;
  if (strchr(name, '/')) {
    if (stat(name, &st) != 0) return ENOENT;
    if (!S_ISREG(st.st_mode) || access(name, X_OK) != 0) return EACCES;
    if (strlen(name) >= cap) return ENOENT;
    memcpy(out, name, strlen(name) + 1);
    return 0;
  }
  const char *path = getenv("PATH");
  int err = ENOENT;
  /* the wrapper split PATH as sh splits a word on IFS=:, which keeps a
   * leading empty field and drops a trailing one */
  for (const char *p = path && *path ? path : NULL; p;) {
    const char *colon = strchr(p, ':');
    size_t dl = colon ? (size_t)(colon - p) : strlen(p);
    if (!colon && !dl) break;
    if (dl + strlen(name) + 3 <= cap) {
      memcpy(out, dl ? p : ".", dl ? dl : 1);
      out[dl ? dl : 1] = '/';
      memcpy(out + (dl ? dl : 1) + 1, name, strlen(name) + 1);
    }
    if (dl + strlen(name) + 3 <= cap && stat(out, &st) == 0) {
      if (S_ISREG(st.st_mode) && access(out, X_OK) == 0) return 0;
      err = EACCES;
    }
    if (!colon) break;
    p = colon + 1;
  }
  return err;
}

static void on_signal(int sig) { (void)sig; }

/* What a kill of the tree sends must not end the helper before the
 * command: caught (a handler, so the command's exec resets it), unless
 * ignored on entry (then the command inherits that, as under sh). */
static void shield(void) {
  static const int sigs[] = {SIGHUP,  SIGINT,    SIGQUIT, SIGABRT,  SIGUSR1, SIGUSR2, SIGPIPE,
                             SIGALRM, SIGTERM,   SIGTSTP, SIGTTIN,  SIGTTOU, SIGURG,  SIGXCPU,
                             SIGXFSZ, SIGVTALRM, SIGPROF, SIGWINCH, SIGIO,   SIGPWR,  SIGSYS};
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
    if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(sigs[i], &sa, NULL);
}

/* Reap what has ended; the command's status into *status once it has. */
static void reap(pid_t cmd, int *status, bool *done) {
  int st;
  pid_t w;
  while ((w = waitpid(-1, &st, WNOHANG)) > 0)
    if (w == cmd) {
      *status = st;
      *done = true;
    }
}

/* Anything of the tree left (reaping what ended)? */
static bool left(void) {
  int st;
  pid_t w;
  while ((w = waitpid(-1, &st, WNOHANG)) > 0) {}
  return w == 0;
}

/* End as the command did. */
static int end_as(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  int sig = WTERMSIG(status);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  sigprocmask(SIG_UNBLOCK, &s, NULL);
  kill(getpid(), sig);
  return 128 + sig; /* a signal whose default is not to end */
}

static int run(int argc, char **argv) {
  if (argc < 5) return 2;
  double deadline = seconds(argv[2]), grace = seconds(argv[3]);
  char **cmd = argv + 4;
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 || access("/proc/self/stat", R_OK) != 0) {
    if (write(1, (char[]){SB_RTREE_NOTREE}, 1) < 0) {}
    return 127;
  }
  char path[4096];
  int err = lookup(cmd[0], path, sizeof path);
  if (err) {
    if (write(1, (char[]){err == ENOENT ? SB_RTREE_ENOENT : SB_RTREE_EACCES}, 1) < 0) {}
    return 127;
  }
  /* a file without #! runs as a shell script, as execvp and sh run it:
   * that argv made here, not in the child, which shares our memory */
  int n = argc - 4;
  char **as_sh = malloc((size_t)(n + 2) * sizeof *as_sh);
  if (!as_sh) return 126;
  as_sh[0] = "sh";
  as_sh[1] = path;
  for (int i = 1; i <= n; i++) as_sh[i + 1] = cmd[i];
  shield();
  sigset_t chld, orig;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &orig);
  if (write(1, (char[]){SB_RTREE_GO}, 1) < 0) {}
  pid_t pid = vfork();
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &orig, NULL);
    execve(path, cmd, environ);
    if (errno == ENOEXEC) execve("/bin/sh", as_sh, environ);
    int e = errno;
    say(cmd[0], ": ", strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  if (pid < 0) {
    say("cannot start ", cmd[0], strerror(errno));
    return 126;
  }
  table t = {0};
  int status = 0;
  bool done = false;
  double t_term = deadline > 0 ? now() + deadline : 0, t_kill = 0;
  while (reap(pid, &status, &done), !done) {
    double at = now();
    if (t_term > 0 && at >= t_term) {
      t_term = 0;
      sweep(&t, SIGTERM, getpid(), NULL, getpid());
      t_kill = at + grace;
    }
    if (t_kill > 0 && at >= t_kill) {
      t_kill = 0;
      sweep(&t, SIGKILL, getpid(), NULL, getpid());
    }
    double next = t_term > 0 ? t_term : t_kill;
    struct timespec ts;
    if (next > 0) {
      double w = next - at > 0 ? next - at : 0.001;
      ts.tv_sec = (time_t)w;
      ts.tv_nsec = (long)((w - (double)(time_t)w) * 1e9);
    }
    sigtimedwait(&chld, NULL, next > 0 ? &ts : NULL);
  }
  /* nothing of the command may outlive it: whatever is left, killed and
   * reaped (a process in the kernel's uninterruptible sleep is waited for
   * up to 10 s) */
  for (int round = 0; left() && round < 1000; round++) {
    if (round) nap(0.01);
    sweep(&t, SIGKILL, getpid(), NULL, getpid());
  }
  free(t.p);
  free(as_sh);
  return end_as(status);
}

/* ---- kill, check, remove -------------------------------------------------- */

static int signal_named(const char *name) {
  static const struct {
    const char *name;
    int sig;
  } names[] = {{"HUP", SIGHUP},      {"INT", SIGINT},     {"QUIT", SIGQUIT}, {"ILL", SIGILL},   {"TRAP", SIGTRAP},
               {"ABRT", SIGABRT},    {"BUS", SIGBUS},     {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"USR1", SIGUSR1},
               {"SEGV", SIGSEGV},    {"USR2", SIGUSR2},   {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},
               {"CHLD", SIGCHLD},    {"CONT", SIGCONT},   {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},
               {"TTOU", SIGTTOU},    {"URG", SIGURG},     {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM},
               {"PROF", SIGPROF},    {"WINCH", SIGWINCH}, {"IO", SIGIO},     {"PWR", SIGPWR},   {"SYS", SIGSYS},
               {"STKFLT", SIGSTKFLT}};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(names[i].name, name) == 0) return names[i].sig;
  return 0;
}

static int kill_tree(const char *name, const char *mark) {
  int sig = signal_named(name);
  if (!sig || !*mark) return 2;
  char entry[200];
  if (strlen(mark) > 100) return 2;
  cat(cat(cat(entry, entry + sizeof entry - 1, SB_RTREE_VAR), entry + sizeof entry - 1, "="), entry + sizeof entry - 1,
      mark);
  table t = {0};
  if (sig != SIGKILL) sweep(&t, sig, -1, entry, getpid());
  else /* until two scans in a row find nothing: a child made after a scan read its parent is in the next one */
    for (int round = 0, quiet = 0; round < 50 && quiet < 2; round++)
      quiet = sweep(&t, SIGKILL, -1, entry, getpid()) ? 0 : quiet + 1;
  free(t.p);
  return 0;
}

static int check(void) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 || access("/proc/self/stat", R_OK) != 0) return 3;
  static const char hello[] = SB_RHELPER_HELLO "\n";
  return write(1, hello, sizeof hello - 1) == (ssize_t)sizeof hello - 1 ? 0 : 3;
}

/* Its own file and directory, when they are where a runner put them. */
static int remove_self(const char *self) {
  const char *base = strrchr(self, '/');
  if (!base || strcmp(base + 1, SB_RHELPER_NAME) != 0) return 2;
  char dir[4096];
  size_t dl = (size_t)(base - self);
  if (dl >= sizeof dir) return 2;
  memcpy(dir, self, dl);
  dir[dl] = '\0';
  const char *dbase = strrchr(dir, '/');
  if (!dbase || strncmp(dbase + 1, SB_RHELPER_DIR_PREFIX, strlen(SB_RHELPER_DIR_PREFIX)) != 0) return 2;
  return unlink(self) == 0 && rmdir(dir) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  if (strcmp(argv[1], "run") == 0) return run(argc, argv);
  if (strcmp(argv[1], "kill") == 0 && argc == 4) return kill_tree(argv[2], argv[3]);
  if (strcmp(argv[1], "check") == 0) return check();
  if (strcmp(argv[1], "remove") == 0) return remove_self(argv[0]);
  return 2;
}
