/* Test host: runs a command under a seccomp filter that refuses new user
 * namespaces (as Docker's default profile does), or with "all" every new
 * namespace, to check that the sandbox fails closed and says why; or, with
 * "i386", one that kills any call made through the i386 ABI (int $0x80), as
 * on a machine where that call faults outside any sandbox (issue 28); or,
 * with "execveat", one that refuses every execveat (EACCES), as an exec
 * from a memfd is where the sysctl vm.memfd_noexec is 2.
 *   no_ns user|all|i386|execveat <program> [args...] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG0 BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define LD_ARCH BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))

/* Install the filter, then become the program. */
static int run_under(struct sock_filter *f, unsigned short n, char **argv) {
  struct sock_fprog p = {n, f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p) != 0) {
    perror("seccomp");
    return 3;
  }
  execvp(argv[0], argv);
  perror("exec");
  return 127;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  if (strcmp(argv[1], "i386") == 0) {
    struct sock_filter f[] = {
        LD_ARCH,
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_I386, 0, 1),
        RET(SECCOMP_RET_KILL_PROCESS),
        RET(SECCOMP_RET_ALLOW),
    };
    return run_under(f, sizeof f / sizeof *f, argv + 2);
  }
  if (strcmp(argv[1], "execveat") == 0) {
    struct sock_filter f[] = {
        LD_NR,
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 1),
        RET(SECCOMP_RET_ERRNO | EACCES),
        RET(SECCOMP_RET_ALLOW),
    };
    return run_under(f, sizeof f / sizeof *f, argv + 2);
  }
  unsigned mask = CLONE_NEWUSER;
  if (strcmp(argv[1], "all") == 0)
    mask |= CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
  struct sock_filter f[] = {
      LD_NR,
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
      RET(SECCOMP_RET_ERRNO | ENOSYS),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 3),
      LD_ARG0,
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1),
      RET(SECCOMP_RET_ERRNO | EPERM),
      RET(SECCOMP_RET_ALLOW),
  };
  return run_under(f, sizeof f / sizeof *f, argv + 2);
}
