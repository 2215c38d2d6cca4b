#include "base/mem.h"

#include <stdlib.h>

#include <string.h>

void sb_mem_init(sb_mem *m, lua_State *L) { m->f = lua_getallocf(L, &m->ud); }

static void *plain_alloc(void *ud, void *p, size_t oldn, size_t n) {
  (void)ud;
  (void)oldn;
  if (n == 0) {
    free(p);
    return NULL;
  }
  return realloc(p, n);
}

void sb_mem_init_plain(sb_mem *m) {
  m->f = plain_alloc;
  m->ud = NULL;
}

void *sb_malloc(const sb_mem *m, size_t n) { return n ? m->f(m->ud, NULL, 0, n) : NULL; }

void *sb_realloc(const sb_mem *m, void *p, size_t oldn, size_t n) {
  if (n == 0) {
    sb_free(m, p, oldn);
    return NULL;
  }
  return m->f(m->ud, p, p ? oldn : 0, n);
}

void sb_free(const sb_mem *m, void *p, size_t n) {
  if (p) m->f(m->ud, p, n, 0);
}

char *sb_memdup(const sb_mem *m, const char *s, size_t n) {
  char *d = sb_malloc(m, n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

int sb_buf_reserve(const sb_mem *m, sb_buf *b, size_t extra) {
  if (extra > (size_t)-1 / 2 - b->len) return -1;
  size_t need = b->len + extra;
  if (need <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  char *p = sb_realloc(m, b->p, b->cap, cap);
  if (!p) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

int sb_buf_append(const sb_mem *m, sb_buf *b, const void *src, size_t n) {
  if (sb_buf_reserve(m, b, n) != 0) return -1;
  if (n) memcpy(b->p + b->len, src, n);
  b->len += n;
  return 0;
}

void sb_buf_free(const sb_mem *m, sb_buf *b) {
  sb_free(m, b->p, b->cap);
  b->p = NULL;
  b->len = b->cap = 0;
}

void sb_buf_trim(const sb_mem *m, sb_buf *b, size_t keep) {
  b->len = 0;
  if (b->cap > keep) sb_buf_free(m, b);
}
