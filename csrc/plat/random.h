#ifndef SB_PLAT_RANDOM_H
#define SB_PLAT_RANDOM_H
/* Unpredictable bytes from the kernel: getrandom on Linux, getentropy
 * (macOS 10.12, FreeBSD 12, glibc 2.25) elsewhere, in 256-byte steps. */
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

#include "plat/os.h"
#if SB_LINUX
#include <sys/random.h>
#elif defined(__APPLE__)
#include <sys/random.h>
#endif

static inline bool sb_random(void *buf, size_t n) {
#if SB_LINUX
  return getrandom(buf, n, GRND_NONBLOCK) == (ssize_t)n;
#else
  for (size_t done = 0; done < n;) {
    size_t k = n - done > 256 ? 256 : n - done;
    if (getentropy((char *)buf + done, k) != 0) return false;
    done += k;
  }
  return true;
#endif
}

#endif
