/* A remote command's whole tree (SPEC §5 and §15): what exec/cmdtree.h is
 * for the local runner, over envd.
 *
 * envd signals only the process it started (no process group, no cgroup of
 * its own per command), and stops forwarding output once it has sent a
 * SIGTERM. So every remote command runs under a small POSIX sh wrapper
 * that marks its environment with AGENT_SANDBOX_TREE=<random mark>, which
 * everything it starts inherits (daemons that left its session included):
 * - run: the look-up execvp would make, answered by the first byte of
 *   stdout (SB_RTREE_GO, or SB_RTREE_ENOENT / SB_RTREE_EACCES and nothing
 *   run); then the command (as exec runs it: argv as given, never a shell
 *   builtin); then every process left with the mark is killed, so nothing
 *   outlives the command; a command a signal ended ends the wrapper by the
 *   same signal. A foreground command's deadline is kept by a watchdog in
 *   the tree (SIGTERM, grace, SIGKILL to all of it) for when this host goes
 *   away mid-command; envd's own deadline would kill the wrapper alone.
 * - kill: a second process that sends a signal to every process with the
 *   mark (SIGKILL until none is left): the tree kill of timeouts, kill and
 *   dispose.
 * The mark is found in /proc/PID/environ (one grep over /proc): a process
 * that rewrites its environment and execs again leaves the tree; the
 * microVM is the boundary, and dispose kills the whole sandbox.
 *
 * Once uploaded, the engine-side helper (remote/helper.h) takes the
 * wrapper's place for the commands it can run: the same first byte, its
 * own deadline, and the tree as its descendants as well as the mark. */
#ifndef SB_EXEC_RTREE_H
#define SB_EXEC_RTREE_H

#include "remote/process.h"
#include "remote/tree_proto.h"

/* With it, the wrapper reads the login profile, then sets again the
 * variables it names (space-separated) as they were. */
#define SB_RTREE_LOGIN "AGENT_SANDBOX_LOGIN"

typedef struct sb_rtree {
  char mark[33]; /* 32 hex digits from the kernel's generator */
} sb_rtree;

/* A new mark; false when the kernel gives no random bytes. */
bool sb_rtree_init(sb_rtree *t);

/* A runner's deadline guard: one process per runner that keeps the
 * deadlines of its commands (the backstop for a host that goes away
 * mid-command) in place of a watchdog per command, whose subshell and
 * sleep were a third of a quick command's time. A command registers its
 * deadline in the guard's directory and sends it SIGUSR1 only when the
 * guard would wake too late for it; the guard sweeps a command whose
 * deadline passed (SIGTERM, the grace, SIGKILL to its tree), and ends by
 * itself after `idle` seconds without a command. A wrapper that finds
 * the guard gone (its pid not holding its lock file, or closing) runs its
 * own watchdog and answers SB_RTREE_ALONE. */
typedef struct sb_rtree_guard {
  sb_rtree mark; /* of the guard and its sleeps: unguard sweeps them */
  char spec[300]; /* "PID DIR", the wrapper's argument */
  bool live; /* (a plain struct: copied whole) */
} sb_rtree_guard;

/* A keeper's short answer on stdout (a guard's "PID DIR", a helper's
 * path): its first bytes, one trailing newline cut, and how it ended.
 * sb_rtree_collect is the envd event callback that fills it. */
typedef struct sb_rtree_answer {
  char text[301];
  size_t len;
  int exit_code; /* -1: ended by a signal, or no end seen */
  bool ended;
} sb_rtree_answer;
sb_code sb_rtree_collect(void *ud, const sb_rproc_event *ev, sb_err *e);

/* Start a guard (one envd Start, at most limit seconds); not live on failure. */
sb_code sb_rtree_guard_start(const sb_mem *m, const sb_envd *d, sb_rtree_guard *g, double idle, double limit,
                             sb_err *e);
/* End a live guard, its sleeps and its directory. */
sb_code sb_rtree_guard_stop(const sb_mem *m, const sb_envd *d, sb_rtree_guard *g, double limit, sb_err *e);

/* What envd starts for a command: SB_RTREE_SHELL with these arguments
 * before the command's own argv ("-c", the wrapper, its name, "run", the
 * deadline and the grace in seconds — a deadline of 0 is none —, and the
 * live guard's "PID DIR" or "-": the watchdog's own then). With check,
 * the wrapper first makes sure the sweep can work in this sandbox (/proc, a
 * grep that takes -z), and answers SB_RTREE_NOTREE if not: a runner asks
 * until one command has passed. The numbers are written into nums, which
 * must live as long as out is used. */
#define SB_RTREE_SHELL "/bin/sh"
#define SB_RTREE_PREFIX 7
typedef struct sb_rtree_nums {
  char deadline[32], grace[32];
} sb_rtree_nums;
void sb_rtree_prefix(const char *out[SB_RTREE_PREFIX], sb_rtree_nums *nums, double deadline, double grace,
                     const sb_rtree_guard *guard, bool check);

/* What envd starts for a command under the engine-side helper
 * (remote/helper.h): the helper's path as the program, then "run", the
 * deadline and the grace, before the command's own argv. */
#define SB_RHELPER_PREFIX 4
void sb_rtree_helper_prefix(const char *out[SB_RHELPER_PREFIX], sb_rtree_nums *nums, const char *helper,
                            double deadline, double grace);

/* Send sig to every process of the tree (by its name); SIGKILL is repeated
 * until none is left. One envd Start, followed to its end (at most limit
 * seconds): through the helper at that path when one is given (what carries
 * the mark and all below it), the wrapper's sweep where that fails. */
sb_code sb_rtree_signal(const sb_mem *m, const sb_envd *d, const sb_rtree *t, int sig, const char *helper, double limit,
                        sb_err *e);

#endif
