#include "exec/outbuf.h"

#include <string.h>

void sb_outbuf_init(sb_outbuf *o, size_t cap) {
  memset(o, 0, sizeof *o);
  /* 40 % head, 60 % tail: failures usually summarise at the end */
  o->head_cap = cap / 5 * 2;
  o->tail_cap = cap - o->head_cap;
}

int sb_outbuf_add(const sb_mem *m, sb_outbuf *o, const char *p, size_t n) {
  o->total += n;
  if (o->head_len < o->head_cap) {
    if (!o->head && !(o->head = sb_malloc(m, o->head_cap))) return -1;
    size_t k = o->head_cap - o->head_len < n ? o->head_cap - o->head_len : n;
    memcpy(o->head + o->head_len, p, k);
    o->head_len += k;
    p += k;
    n -= k;
  }
  if (n == 0 || o->tail_cap == 0) return 0;
  if (!o->tail && !(o->tail = sb_malloc(m, o->tail_cap))) return -1;
  if (n >= o->tail_cap) { /* only the last tail_cap bytes matter */
    memcpy(o->tail, p + n - o->tail_cap, o->tail_cap);
    o->tail_len = o->tail_cap;
    o->tail_pos = 0;
    return 0;
  }
  for (size_t done = 0; done < n;) {
    size_t k = o->tail_cap - o->tail_pos;
    if (k > n - done) k = n - done;
    memcpy(o->tail + o->tail_pos, p + done, k);
    o->tail_pos = (o->tail_pos + k) % o->tail_cap;
    done += k;
  }
  o->tail_len = o->tail_len + n > o->tail_cap ? o->tail_cap : o->tail_len + n;
  return 0;
}

uint64_t sb_outbuf_dropped(const sb_outbuf *o) { return o->total - o->head_len - o->tail_len; }
size_t sb_outbuf_len(const sb_outbuf *o) { return o->head_len + o->tail_len; }
size_t sb_outbuf_head_len(const sb_outbuf *o) { return o->head_len; }

void sb_outbuf_copy(const sb_outbuf *o, char *dst) {
  if (o->head_len) memcpy(dst, o->head, o->head_len);
  dst += o->head_len;
  if (!o->tail_len) return;
  /* the ring's oldest byte sits at tail_pos once full, at 0 before */
  size_t start = o->tail_len == o->tail_cap ? o->tail_pos : 0;
  size_t first = o->tail_cap - start < o->tail_len ? o->tail_cap - start : o->tail_len;
  memcpy(dst, o->tail + start, first);
  memcpy(dst + first, o->tail, o->tail_len - first);
}

void sb_outbuf_free(const sb_mem *m, sb_outbuf *o) {
  sb_free(m, o->head, o->head_cap);
  sb_free(m, o->tail, o->tail_cap);
  o->head = o->tail = NULL;
  o->head_len = o->tail_len = 0;
}

int sb_outq_push(const sb_mem *m, sb_outq *q, const char *d, size_t n) {
  if (q->off == q->b.len) q->b.len = q->off = 0;
  size_t pending = q->b.len - q->off;
  if (q->off > 0 && q->b.len + n > q->b.cap) {
    memmove(q->b.p, q->b.p + q->off, pending);
    q->b.len = pending;
    q->off = 0;
  }
  return sb_buf_append(m, &q->b, d, n);
}

bool sb_outq_pop(sb_outq *q, const char **d, size_t *n) {
  if (q->off >= q->b.len) return false;
  *d = q->b.p + q->off;
  *n = q->b.len - q->off;
  q->off = q->b.len;
  return true;
}

void sb_outq_free(const sb_mem *m, sb_outq *q) {
  sb_buf_free(m, &q->b);
  q->off = 0;
}
