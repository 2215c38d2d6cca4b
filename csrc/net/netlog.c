#include "net/netlog.h"

#include <stdlib.h>

/* The C library's allocator: records come from the service thread, where
 * a host's Lua allocator must not be called. */

int sb_netlog_init(sb_netlog *l) {
  l->v = NULL;
  l->n = l->cap = 0;
  l->dropped = 0;
  atomic_init(&l->any, false);
  return uv_mutex_init(&l->mu);
}

void sb_netlog_push(sb_netlog *l, const sb_netevent *ev) {
  uv_mutex_lock(&l->mu);
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    sb_netevent *v = cap <= SB_NETLOG_MAX ? realloc(l->v, cap * sizeof *v) : NULL;
    if (!v) {
      l->dropped++;
      atomic_store(&l->any, true);
      uv_mutex_unlock(&l->mu);
      return;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = *ev;
  atomic_store(&l->any, true);
  uv_mutex_unlock(&l->mu);
}

size_t sb_netlog_take(sb_netlog *l, sb_netevent **v, uint64_t *dropped) {
  *v = NULL;
  *dropped = 0;
  if (!atomic_load(&l->any)) return 0;
  uv_mutex_lock(&l->mu);
  atomic_store(&l->any, false);
  size_t n = l->n;
  *v = l->v;
  *dropped = l->dropped;
  l->v = NULL;
  l->n = l->cap = 0;
  l->dropped = 0;
  uv_mutex_unlock(&l->mu);
  return n;
}

void sb_netlog_free(sb_netlog *l) {
  free(l->v);
  l->v = NULL;
  uv_mutex_destroy(&l->mu);
}
