/* What every layer that runs code in a clone child needs (the spawner, the
 * confinement's init and network helper, the network agent), kept below
 * all of them so none reaches into another for it. */
#ifndef SB_BASE_CHILD_H
#define SB_BASE_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "plat/os.h"

/* For functions that run in a child on a stack of our own (a clone child):
 * sanitizer runtimes do not know that stack, keep their instrumentation out. */
#if defined(__GNUC__)
#define SB_CHILD_FN __attribute__((no_sanitize_address, no_sanitize("undefined"), noinline))
#else
#define SB_CHILD_FN
#endif

/* In a child before exec (or _exit): close every fd above 2 but keep1 and
 * keep2 (-1: none). Also what keeps a child from holding another thread's
 * pipes open. Async-signal-safe. */
void sb_child_close_fds(int keep1, int keep2);
/* The same; with one_by_one, as where neither close_range nor closefrom
 * exists (the test switch SANDBOX_NO_CLOSE_RANGE). */
void sb_child_close_fds_as(int keep1, int keep2, bool one_by_one);

/* In a child before exec: every signal the host handles or ignores back to
 * its default, so no handler of the host's runs here and no ignored signal
 * crosses the exec. Async-signal-safe, no allocation. */
void sb_child_default_signals(void);

#if SB_LINUX
/* In a vfork-style child: fds[0..n) at 3, 4, ... open across the exec, the
 * program's memfd prog at 3 + n (closed by the exec), no other fd of ours,
 * then prog run as argv0 with an empty environment. Returns only on
 * failure: -1 with errno. */
int sb_child_exec_program(int prog, const int *fds, int n, const char *argv0);
#endif

/* As sb_clone_child (plat/proc.h) without a sibling: fn(arg) runs in a
 * child that shares our memory until it execs or exits, on the stack
 * [stack, stack + size), but born in the cgroup v2 directory cgroup_fd
 * (clone3 with CLONE_INTO_CGROUP), so it never migrates there: a write to
 * cgroup.procs is a migration under the kernel's cgroup lock, about a
 * tenth of a spawn here. -1 with errno when the kernel refuses (then no
 * child exists): ENOSYS also where clone3 is not ours to make (an
 * architecture without our entry for it, kernels before 5.3, seccomp
 * filters and valgrind that refuse clone3). The caller then clones and
 * joins, which reports a real refusal of the cgroup as before. */
pid_t sb_clone_child_into(int (*fn)(void *), void *arg, void *stack, size_t size, int *pidfd, int cgroup_fd);

#endif
