/* The seccomp baseline of commands (SPEC §6), of the kind Docker's default
 * profile applies, answering EPERM:
 *
 *   no kexec, module loading, clock setting, bpf, perf_event_open,
 *   userfaultfd, keyrings, io_uring, raw mount calls, swap, reboot,
 *   accounting, quotas, other namespaces (setns, unshare and clone with a
 *   CLONE_NEW* flag; clone3 and openat2 answer ENOSYS, as their arguments
 *   cannot be inspected, so libc falls back), personality tricks;
 *   no set-user-ID / set-group-ID bits through the chmod, open/creat and
 *   mknod families, no extended attributes (file capabilities live there),
 *   no FS_IOC_SETFLAGS / FS_IOC_FSSETXATTR (immutable files), no TIOCSTI;
 *   without the sandbox's PID namespace: no prlimit, setpriority,
 *   sched_set* on another process.
 *
 * Only the native ABI runs: other architectures (i386 on x86-64) and the
 * x32 ABI are refused whole. Built once per sandbox on the host, installed
 * by each command as its last step (confine/child.c). */
#ifndef SB_CONFINE_SECCOMP_H
#define SB_CONFINE_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>

#include "plat/linux_abi.h"

#define SB_SECCOMP_MAX 512

typedef struct sb_seccomp {
  struct sock_filter prog[SB_SECCOMP_MAX];
  unsigned short len;
  int denied; /* system calls refused outright (for the report) */
} sb_seccomp;

/* Build the filter; `scope_pids`: also refuse acting on other processes'
 * limits and scheduling (no PID namespace to hide them). 0, or -1 with why
 * (an architecture this build does not know). */
int sb_seccomp_build(sb_seccomp *f, bool scope_pids, char *why, size_t whylen);
/* Does this kernel take seccomp filters? */
bool sb_seccomp_available(void);

#endif
