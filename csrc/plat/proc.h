#ifndef SB_PLAT_PROC_H
#define SB_PLAT_PROC_H
/* Processes: Linux's pidfds, parent-death signal and vfork-style clone;
 * elsewhere plain POSIX (fork, waitpid, no pidfd: the runner polls for the
 * exit, and a command outlives a host killed by SIGKILL until its pipes
 * close). Everything here is safe in a child of a vfork-style clone. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plat/os.h"
#if SB_LINUX
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#define SB_WAIT_ALL __WALL /* children of any kind: a clone without SIGCHLD too */
#define SB_MAP_STACK MAP_STACK
#else
#define SB_WAIT_ALL 0
#define SB_MAP_STACK 0
#endif

static inline int sb_pidfd_open(pid_t pid) {
#if SB_LINUX
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

static inline int sb_pidfd_signal(int pidfd, int sig) {
#if SB_LINUX
  return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#else
  (void)pidfd;
  (void)sig;
  errno = ENOSYS;
  return -1;
#endif
}

/* Close fds lo..hi in one call (Linux 5.9; FreeBSD's close_range): 0, or
 * -1 when there is no such call. */
static inline int sb_close_range(unsigned lo, unsigned hi) {
#if SB_LINUX
  return (int)syscall(SYS_close_range, lo, hi, 0);
#else
  (void)lo;
  (void)hi;
  errno = ENOSYS;
  return -1;
#endif
}

/* Close every fd from lo up where libc has closefrom and it cannot fail
 * here: the BSDs' (a system call), and glibc's (2.34: close_range, else a
 * scan of /proc/self/fd on the stack, no allocation) in the build without
 * Linux's layers, which stands in for them. A Linux build does not: there
 * glibc's aborts where close_range is missing and /proc is not mounted.
 * 0, or -1 when there is none. */
static inline int sb_closefrom(int lo) {
#if defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__) || defined(__DragonFly__) || \
    (!SB_LINUX && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34)))
  closefrom(lo);
  return 0;
#else
  (void)lo;
  errno = ENOSYS;
  return -1;
#endif
}

/* Where a loop over fds may stop: the fd limit, at most 65536 (a getrlimit
 * in effect, which a child may call). */
static inline int sb_fd_limit(void) {
  long n = sysconf(_SC_OPEN_MAX);
  return n > 0 && n < 65536 ? (int)n : 65536;
}

/* Reap through a pidfd: 1 reaped (status as waitpid's), 0 still running,
 * -1 error. */
static inline int sb_pidfd_reap(int pidfd, int *status) {
#if SB_LINUX
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG | __WALL) != 0) return -1;
  if (si.si_pid == 0) return 0;
  if (si.si_code == CLD_EXITED) *status = (si.si_status & 0xff) << 8;
  else *status = (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
  return 1;
#else
  (void)pidfd;
  (void)status;
  errno = ENOSYS;
  return -1;
#endif
}

/* The calling child gets SIGKILL when its parent dies (Linux); elsewhere
 * nothing, and 0. */
static inline int sb_die_with_parent(void) {
#if SB_LINUX
  return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
#else
  return 0;
#endif
}

/* Run fn(arg) in a new child that shares our memory until it execs or
 * exits (the parent waits until then), and return its pid (or -1, errno):
 * the cost of a spawn does not grow with the host's heap. Linux: a clone on
 * `stack_top`, with a pidfd into *pidfd when it is not NULL, and as the
 * caller's sibling with `sibling`. Elsewhere vfork(), the child on our
 * stack below this frame (fn is written for that: system calls only, no
 * return into us); no pidfd, and `sibling` is refused (ENOTSUP). */
static inline pid_t sb_clone_child(int (*fn)(void *), void *arg, void *stack_top, int *pidfd, bool sibling) {
#if SB_LINUX
  int flags = CLONE_VM | CLONE_VFORK | (pidfd ? CLONE_PIDFD : 0) | (sibling ? CLONE_PARENT : 0);
  return clone(fn, stack_top, flags, arg, pidfd);
#else
  (void)stack_top;
  if (pidfd) *pidfd = -1;
  if (sibling) {
    errno = ENOTSUP;
    return -1;
  }
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* macOS marks vfork so; it still is one */
#endif
  pid_t pid = vfork();
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
  if (pid == 0) _exit(fn(arg));
  return pid;
#endif
}

#endif
