#ifndef SB_PLAT_CPU_H
#define SB_PLAT_CPU_H
/* The CPUs this process may run on: its affinity mask on Linux (a
 * container's cpuset), the online count elsewhere. */
#include <stddef.h>
#include <unistd.h>

#include "plat/os.h"
#if SB_LINUX
#include <sched.h>
#endif

static inline size_t sb_cpu_count(void) {
#if SB_LINUX
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return (size_t)CPU_COUNT(&set);
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (size_t)n : 1;
}

#endif
