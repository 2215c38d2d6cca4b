/* Memory through the Lua state's allocator (lua_getallocf), so a host's
 * allocator and its caps apply to sandbox data. Nothing here raises: every
 * failure is a NULL / -1 the caller turns into ENOSPC. */
#ifndef SB_MEM_H
#define SB_MEM_H

#include <stddef.h>
#include <lua.h>

typedef struct sb_mem {
  lua_Alloc f;
  void *ud;
} sb_mem;

void sb_mem_init(sb_mem *m, lua_State *L);
/* The C library's malloc, for threads other than the Lua state's (a host's
 * allocator is only ever called from the state's own thread). */
void sb_mem_init_plain(sb_mem *m);
void *sb_malloc(const sb_mem *m, size_t n);
void *sb_realloc(const sb_mem *m, void *p, size_t oldn, size_t n);
void sb_free(const sb_mem *m, void *p, size_t n);
char *sb_memdup(const sb_mem *m, const char *s, size_t n); /* adds a NUL */

/* A growable byte buffer owned by whoever holds it. */
typedef struct sb_buf {
  char *p;
  size_t len, cap;
} sb_buf;

int sb_buf_reserve(const sb_mem *m, sb_buf *b, size_t extra); /* 0 or -1 */
int sb_buf_append(const sb_mem *m, sb_buf *b, const void *src, size_t n);
void sb_buf_free(const sb_mem *m, sb_buf *b);
/* Keep a reusable scratch buffer from pinning a large block forever. */
void sb_buf_trim(const sb_mem *m, sb_buf *b, size_t keep);

#endif
