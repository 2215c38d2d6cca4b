/* Where a confined command's time goes (issue 35): what installing the
 * seccomp filter costs a process. Each command installs the sandbox's
 * filter as its last step (confine/child.c); the kernel compiles it and
 * emulates it per system call number at each install, and frees it when
 * the process ends. Forks a child n times per round that installs nothing,
 * a one-instruction filter, or the sandbox's (confine/seccomp.c), then
 * exits; the three alternate within each round. Prints the medians.
 *   seccomp_cost [n] [rounds] */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "confine/seccomp.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* microseconds a fork + install + exit + wait, averaged over n */
static double per_process(const struct sock_fprog *p, int n) {
  double t0 = now();
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      exit(1);
    }
    if (pid == 0) {
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(2);
      if (p && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, p, 0, 0) != 0) _exit(3);
      _exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "the child failed (seccomp refused?)\n");
      exit(1);
    }
  }
  return (now() - t0) / n * 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200, rounds = argc > 2 ? atoi(argv[2]) : 7;
  if (n < 1 || rounds < 1 || rounds > 99) return 2;
  static sb_seccomp f;
  char why[200];
  if (sb_seccomp_build(&f, false, why, sizeof why) != 0) {
    fprintf(stderr, "%s\n", why);
    return 1;
  }
  struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  const struct sock_fprog tiny = {1, allow}, ours = {f.len, f.prog};
  double none[99], one[99], full[99];
  for (int r = 0; r < rounds; r++) {
    none[r] = per_process(NULL, n);
    one[r] = per_process(&tiny, n);
    full[r] = per_process(&ours, n);
  }
  qsort(none, (size_t)rounds, sizeof *none, cmp);
  qsort(one, (size_t)rounds, sizeof *one, cmp);
  qsort(full, (size_t)rounds, sizeof *full, cmp);
  int m = rounds / 2;
  printf("seccomp per process (fork, install, exit; medians of %d rounds of %d): none %.0f us, a 1-instruction "
         "filter +%.0f us, the sandbox's (%u instructions) +%.0f us\n",
         rounds, n, none[m], one[m] - none[m], f.len, full[m] - none[m]);
  return 0;
}
