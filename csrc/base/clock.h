/* Monotonic seconds: deadlines, durations, benchmarks (never wall time). */
#ifndef SB_CLOCK_H
#define SB_CLOCK_H

#include <time.h>

static inline double sb_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
