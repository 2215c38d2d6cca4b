/* The seccomp filter of commands, checked exhaustively off the kernel: a
 * small classic-BPF interpreter runs the built program for every system
 * call number of both ABIs with argument vectors that hit each rule's
 * edges, and compares each answer with the contract below (SPEC §6),
 * written independently of how the filter is laid out (a search tree with
 * merged ranges). Also refuses opcodes or jumps the kernel would reject.
 *   seccomp_eval          prints "ok <instructions> <checks>" or the first mismatch */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/fs.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "confine/seccomp.h"

#if defined(__x86_64__)

#define ALLOW SECCOMP_RET_ALLOW
#define ERR(e) (SECCOMP_RET_ERRNO | (e))
#define SETID (S_ISUID | S_ISGID)
#define NEW_NS (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
                CLONE_NEWCGROUP)

/* -1: the program is malformed (a jump past its end, an unknown opcode) */
static int64_t run(const sb_seccomp *f, const struct seccomp_data *d) {
  uint32_t a = 0;
  size_t pc = 0;
  while (pc < f->len) {
    const struct sock_filter *i = &f->prog[pc];
    switch (i->code) {
    case BPF_LD | BPF_W | BPF_ABS:
      if (i->k > sizeof *d - 4 || i->k % 4) return -1;
      memcpy(&a, (const char *)d + i->k, 4);
      pc++;
      break;
    case BPF_JMP | BPF_JA: pc += 1 + i->k; break;
    case BPF_JMP | BPF_JEQ | BPF_K: pc += 1 + (a == i->k ? i->jt : i->jf); break;
    case BPF_JMP | BPF_JGT | BPF_K: pc += 1 + (a > i->k ? i->jt : i->jf); break;
    case BPF_JMP | BPF_JGE | BPF_K: pc += 1 + (a >= i->k ? i->jt : i->jf); break;
    case BPF_JMP | BPF_JSET | BPF_K: pc += 1 + ((a & i->k) ? i->jt : i->jf); break;
    case BPF_RET | BPF_K: return i->k;
    default: return -1;
    }
  }
  return -1; /* fell off the end */
}

static const long refused[] = {
    SYS_kexec_load, SYS_kexec_file_load, SYS_init_module, SYS_finit_module, SYS_delete_module,
    SYS_settimeofday, SYS_clock_settime, SYS_clock_adjtime, SYS_adjtimex, SYS_bpf, SYS_perf_event_open,
    SYS_userfaultfd, SYS_add_key, SYS_request_key, SYS_keyctl, SYS_io_uring_setup, SYS_io_uring_enter,
    SYS_io_uring_register, SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_open_tree,
    SYS_move_mount, SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick, SYS_mount_setattr, SYS_swapon,
    SYS_swapoff, SYS_reboot, SYS_acct, SYS_quotactl, SYS_quotactl_fd, SYS_setns, SYS_open_by_handle_at,
    SYS_name_to_handle_at, SYS_fanotify_init, SYS_lookup_dcookie, SYS_vhangup, SYS_syslog, SYS_setxattr,
    SYS_lsetxattr, SYS_fsetxattr, 463 /* setxattrat */,
#if defined(__x86_64__)
    SYS_iopl, SYS_ioperm, SYS_create_module, SYS_get_kernel_syms, SYS_query_module, SYS_uselib, SYS_ustat,
    SYS_sysfs, SYS__sysctl, SYS_nfsservctl,
#endif
};

static bool in(long nr, const long *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (list[i] == nr) return true;
  return false;
}

/* What a command must get, from the contract. */
static uint32_t expected(const struct seccomp_data *d, bool scope_pids) {
  long nr = d->nr;
  uint32_t a0 = (uint32_t)d->args[0], a1 = (uint32_t)d->args[1], a2 = (uint32_t)d->args[2],
           a3 = (uint32_t)d->args[3];
  uint32_t creating = O_CREAT | (O_TMPFILE & ~O_DIRECTORY);
  if (in(nr, refused, sizeof refused / sizeof *refused)) return ERR(EPERM);
  if (nr == SYS_clone3 || nr == SYS_openat2) return ERR(ENOSYS);
  if (nr == SYS_fchmod || nr == SYS_chmod || nr == SYS_creat || nr == SYS_mknod) return a1 & SETID ? ERR(EPERM) : ALLOW;
  if (nr == SYS_fchmodat || nr == 452 /* fchmodat2 */ || nr == SYS_mknodat) return a2 & SETID ? ERR(EPERM) : ALLOW;
  if (nr == SYS_openat) return (a2 & creating) && (a3 & SETID) ? ERR(EPERM) : ALLOW;
  if (nr == SYS_open) return (a1 & creating) && (a2 & SETID) ? ERR(EPERM) : ALLOW;
  if (nr == SYS_clone) return a0 & NEW_NS ? ERR(EPERM) : ALLOW;
  if (nr == SYS_unshare) return a0 & (NEW_NS | 0x80) ? ERR(EPERM) : ALLOW;
  if (nr == SYS_ioctl)
    return a1 == FS_IOC_SETFLAGS || a1 == FS_IOC32_SETFLAGS || a1 == FS_IOC_FSSETXATTR || a1 == TIOCSTI ||
                   a1 == TIOCLINUX
               ? ERR(EPERM)
               : ALLOW;
  if (nr == SYS_personality)
    return a0 == 0 || a0 == 8 || a0 == 0x20000 || a0 == 0x20008 || a0 == 0xffffffffu ? ALLOW : ERR(EPERM);
  if (scope_pids) {
    if (nr == SYS_prlimit64 || nr == SYS_sched_setaffinity || nr == SYS_sched_setscheduler ||
        nr == SYS_sched_setparam)
      return a0 ? ERR(EPERM) : ALLOW;
    if (nr == SYS_setpriority) return a1 ? ERR(EPERM) : ALLOW;
  }
  return ALLOW;
}

/* Values that sit on the rules' edges, tried in every argument. */
static const uint32_t edges[] = {0, 1, 0xffffffffu, S_ISUID, S_ISGID, 0755, 04755, 02755, O_CREAT, O_CREAT | O_EXCL,
                                 O_TMPFILE, O_RDWR, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS, 0x80, CLONE_VM | SIGCHLD,
                                 CLONE_THREAD, FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR, TIOCSTI,
                                 TIOCLINUX, FS_IOC_GETFLAGS, TCGETS, 8, 0x20000, 0x20008, 0x0400000, 12345};
#define NEDGES (sizeof edges / sizeof *edges)

int main(void) {
  static sb_seccomp f[2];
  char why[256];
  long checks = 0;
  for (int scope = 0; scope < 2; scope++) {
    if (sb_seccomp_build(&f[scope], scope, why, sizeof why) != 0) {
      printf("build failed: %s\n", why);
      return 1;
    }
    for (uint32_t nr = 0; nr < 600; nr++) {
      struct seccomp_data d = {.nr = (int)nr, .arch = AUDIT_ARCH_X86_64};
      /* every argument position through every edge value (others 0), then
       * the pairs a creating open needs */
      for (int pos = 0; pos < 6; pos++)
        for (size_t v = 0; v < NEDGES; v++) {
          memset(d.args, 0, sizeof d.args);
          d.args[pos] = edges[v];
          for (int pass = 0; pass < 2; pass++) {
            if (pass) /* a creating flag beside, for the open family */
              for (int p = 0; p < 6; p++)
                if (p != pos) d.args[p] = O_CREAT;
            int64_t got = run(&f[scope], &d);
            uint32_t want = expected(&d, scope);
            checks++;
            if (got != (int64_t)want) {
              printf("mismatch: nr %u, args[%d] = %#x (pass %d), scope_pids %d: got %#llx, want %#x\n", nr, pos,
                     edges[v], pass, scope, (long long)got, want);
              return 1;
            }
          }
        }
      /* other ABIs: refused whole */
      d.arch = AUDIT_ARCH_I386;
      memset(d.args, 0, sizeof d.args);
      if (run(&f[scope], &d) != ERR(EPERM)) {
        printf("mismatch: i386 nr %u not refused\n", nr);
        return 1;
      }
      d.arch = AUDIT_ARCH_X86_64;
      d.nr = (int)(nr | 0x40000000u);
      if (run(&f[scope], &d) != ERR(EPERM)) {
        printf("mismatch: x32 nr %u not refused\n", nr);
        return 1;
      }
      checks += 2;
    }
  }
  printf("ok %u %u %ld\n", f[0].len, f[1].len, checks);
  return 0;
}
#else
int main(void) {
  puts("ok: the contract table here is x86-64's");
  return 0;
}
#endif
