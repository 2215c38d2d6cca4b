/* Clocks: monotonic seconds for deadlines, durations and benchmarks; wall
 * time only where a timestamp is shown (audit entries, file times). */
#ifndef SB_BASE_CLOCK_H
#define SB_BASE_CLOCK_H

#include <time.h>

static inline double sb_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline double sb_wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
