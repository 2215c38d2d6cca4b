/* An audit event as a JSON line (SPEC §17): a Lua table (flat, or nested
 * to three levels) or pieces written straight from C, valid UTF-8 out
 * whatever came in, strings and lists cut at a bound that says so, keys
 * seq, time, kind first and the rest in order. lua/audit.c owns the stream;
 * this file owns only how an event looks on its line. */
#ifndef SB_LUA_AUDIT_LINE_H
#define SB_LUA_AUDIT_LINE_H

#include <stdbool.h>
#include <string.h>

#include "base/mem.h"
#include "lua/compat.h"

typedef struct sb_aline {
  lua_State *L;
  const sb_mem *m;
  sb_buf *b;
  bool bad; /* out of memory */
} sb_aline;

void sb_aline_grow(sb_aline *w, const char *s, size_t n); /* put's slow path */

static inline void sb_aline_put(sb_aline *w, const char *s, size_t n) {
  sb_buf *b = w->b;
  if (b->len + n <= b->cap) { /* the common case, without a call */
    memcpy(b->p + b->len, s, n);
    b->len += n;
  } else {
    sb_aline_grow(w, s, n);
  }
}

static inline void sb_aline_lit(sb_aline *w, const char *s) { sb_aline_put(w, s, strlen(s)); }
void sb_aline_str(sb_aline *w, const char *s, size_t n); /* a JSON string */
void sb_aline_int(sb_aline *w, long long v);
void sb_aline_time(sb_aline *w, double t); /* seconds with microseconds */
/* The event table at idx as a JSON object (seq, time, kind first). */
void sb_aline_event(sb_aline *w, int idx);

#endif
