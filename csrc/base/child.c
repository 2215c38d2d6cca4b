#include "base/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

#include "plat/proc.h"

SB_CHILD_FN void sb_child_close_fds_as(int keep1, int keep2, bool one_by_one) {
  int a = keep1 < keep2 ? keep1 : keep2, b = keep1 < keep2 ? keep2 : keep1;
  unsigned lo = 3;
  bool ok = !one_by_one;
  for (int k = 0; k < 2 && ok; k++) {
    int keep = k == 0 ? a : b;
    if (keep < 3) continue;
    if ((unsigned)keep > lo) ok = sb_close_range(lo, (unsigned)keep - 1) == 0;
    lo = (unsigned)keep + 1;
  }
  if (ok && sb_close_range(lo, ~0U) == 0) return;
  /* No close_range (kernels before 5.9, macOS, older BSDs): the fds below
   * the last kept one each, the rest in one closefrom where libc has it,
   * else each up to the fd limit, looked up once (a lookup is a system
   * call: per fd it doubled a loop of 20 000 closes, 50 ms a command). */
  for (int fd = 3; fd < b; fd++)
    if (fd != a) close(fd);
  int from = b < 3 ? 3 : b + 1;
  if (one_by_one || sb_closefrom(from) != 0)
    for (int fd = from, limit = sb_fd_limit(); fd < limit; fd++) close(fd);
}

SB_CHILD_FN void sb_child_default_signals(void) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction cur;
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    /* most are at their default already: a look is cheaper than a change */
    if (sigaction(sig, NULL, &cur) == 0 && cur.sa_handler != SIG_DFL) sigaction(sig, &dfl, NULL);
  }
}

#if SB_LINUX
SB_CHILD_FN int sb_child_exec_program(int prog, const int *fds, int n, const char *argv0) {
  enum { MAX = 8 };
  if (n < 0 || n > MAX) return errno = EINVAL, -1;
  /* above the places first (one of ours may be in one), then into them:
   * dup2 clears close-on-exec, as it must here (dup2 onto itself would not) */
  int hi = 3 + n + 1, up[MAX], p = fcntl(prog, F_DUPFD_CLOEXEC, hi);
  if (p < 0) return -1;
  for (int i = 0; i < n; i++)
    if ((up[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, hi)) < 0) return -1;
  for (int i = 0; i < n; i++)
    if (dup2(up[i], 3 + i) < 0) return -1;
  if (dup3(p, 3 + n, O_CLOEXEC) < 0) return -1;
  int from = 3 + n + 1; /* nothing else of ours */
  if (sb_close_range((unsigned)from, ~0U) != 0 && sb_closefrom(from) != 0)
    for (int fd = from, limit = sb_fd_limit(); fd < limit; fd++) close(fd);
  char *const argv[] = {(char *)argv0, NULL}, *const envp[] = {NULL};
  /* execveat (valgrind 3.19 runs neither it nor an execve of /proc/self/fd/N) */
  fexecve(3 + n, argv, envp);
  return -1;
}
#endif

SB_CHILD_FN void sb_child_close_fds(int keep1, int keep2) { sb_child_close_fds_as(keep1, keep2, false); }

#if SB_LINUX && defined(__x86_64__)
/* The kernel's struct clone_args up to `cgroup` (CLONE_ARGS_SIZE_VER2). */
struct sb_clone_args {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};
#define SB_CLONE_INTO_CGROUP 0x200000000ULL

/* long sb_clone3_run(args, size, fn, arg): glibc 2.36 has no clone3, and a
 * child that shares our memory cannot return from the system call into C
 * (it would pop its parent's frames on a stack of its own): the child
 * calls fn on that stack and exits with what it returns. fn and arg wait
 * in r8 and r9, which the system call keeps in both processes. Returns
 * the pid or -errno in the parent. */
long sb_clone3_run(struct sb_clone_args *args, size_t size, int (*fn)(void *), void *arg);
__asm__(".text\n"
        ".globl sb_clone3_run\n"
        ".hidden sb_clone3_run\n"
        ".type sb_clone3_run, @function\n"
        "sb_clone3_run:\n"
        "  mov %rdx, %r8\n"
        "  mov %rcx, %r9\n"
        "  mov $435, %eax\n" /* clone3 */
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "  xor %ebp, %ebp\n" /* the child: no frame above fn's */
        "  mov %r9, %rdi\n"
        "  call *%r8\n"
        "  mov %eax, %edi\n"
        "  mov $60, %eax\n" /* exit */
        "  syscall\n"
        "  hlt\n"
        "1:\n"
        "  ret\n"
        ".size sb_clone3_run, .-sb_clone3_run\n");

pid_t sb_clone_child_into(int (*fn)(void *), void *arg, void *stack, size_t size, int *pidfd, int cgroup_fd) {
  struct sb_clone_args a = {
      .flags = CLONE_VM | CLONE_VFORK | (pidfd ? CLONE_PIDFD : 0) | SB_CLONE_INTO_CGROUP,
      .pidfd = (uint64_t)(uintptr_t)pidfd,
      .stack = (uint64_t)(uintptr_t)stack,
      .stack_size = size & ~(size_t)15, /* the child's first call needs a 16-byte aligned top */
      .cgroup = (uint64_t)cgroup_fd,
  };
  if (((uintptr_t)stack & 15) != 0 || cgroup_fd < 0) {
    errno = EINVAL;
    return -1;
  }
  long r = sb_clone3_run(&a, sizeof a, fn, arg);
  if (r < 0) {
    errno = (int)-r;
    return -1;
  }
  return (pid_t)r;
}
#else
pid_t sb_clone_child_into(int (*fn)(void *), void *arg, void *stack, size_t size, int *pidfd, int cgroup_fd) {
  (void)fn, (void)arg, (void)stack, (void)size, (void)pidfd, (void)cgroup_fd;
  errno = ENOSYS;
  return -1;
}
#endif
