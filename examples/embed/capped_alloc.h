/* A host allocator with a hard byte cap, as a game or editor would give
 * Lua. Beyond the cap it returns NULL, which Lua turns into a memory error
 * the script (or the sandbox) handles. fail_at (tests): refuse only the Nth
 * growing allocation after `armed` is set. */
#ifndef CAPPED_ALLOC_H
#define CAPPED_ALLOC_H

#include <stdlib.h>

typedef struct capped_budget {
  size_t cap, used, peak;
  unsigned long refused;
  unsigned long fail_at, count; /* fail_at: 0 = off */
  int armed;
} capped_budget;

static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  capped_budget *b = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    free(ptr);
    b->used -= old;
    return NULL;
  }
  if (nsize > old && b->used + (nsize - old) > b->cap) {
    b->refused++;
    return NULL;
  }
  if (b->armed && nsize > old && ++b->count == b->fail_at) {
    b->refused++;
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (!p) return NULL;
  b->used = b->used - old + nsize;
  if (b->used > b->peak) b->peak = b->used;
  return p;
}

#endif
