#ifndef SB_PLAT_BYTES_H
#define SB_PLAT_BYTES_H
/* Byte helpers glibc has and POSIX does not: memrchr, and a wipe of a
 * secret that the compiler may not drop as a dead store. */
#include <stddef.h>
#include <string.h>

#include "plat/os.h"

static inline void *sb_memrchr(const void *s, int c, size_t n) {
#if SB_LINUX
  return memrchr(s, c, n);
#else
  const unsigned char *p = s;
  while (n--)
    if (p[n] == (unsigned char)c) return (void *)(p + n);
  return NULL;
#endif
}

static inline void sb_wipe(void *p, size_t n) {
#if SB_LINUX || defined(__FreeBSD__)
  explicit_bzero(p, n);
#else
  memset(p, 0, n);
  __asm__ __volatile__("" : : "r"(p) : "memory"); /* the stores are observable */
#endif
}

#endif
