/* Captured output of a command, bounded: the first bytes (head) and the
 * last bytes (tail, a ring) are kept, everything in between is counted as
 * dropped. Memory stays within the cap whatever the command prints. */
#ifndef SB_EXEC_OUTBUF_H
#define SB_EXEC_OUTBUF_H

#include <stdbool.h>
#include <stdint.h>

#include "base/mem.h"

typedef struct sb_outbuf {
  size_t head_cap, tail_cap;
  char *head, *tail;
  size_t head_len, tail_len, tail_pos; /* tail: ring of tail_len valid bytes ending at tail_pos */
  uint64_t total;
} sb_outbuf;

void sb_outbuf_init(sb_outbuf *o, size_t cap);
int sb_outbuf_add(const sb_mem *m, sb_outbuf *o, const char *p, size_t n); /* 0 or -1 (OOM) */
uint64_t sb_outbuf_dropped(const sb_outbuf *o);
size_t sb_outbuf_len(const sb_outbuf *o); /* kept bytes */
/* Copy the kept bytes in order: head, then tail. dst holds sb_outbuf_len(). */
void sb_outbuf_copy(const sb_outbuf *o, char *dst);
size_t sb_outbuf_head_len(const sb_outbuf *o);
void sb_outbuf_free(const sb_mem *m, sb_outbuf *o);

/* Output kept for h:read (a background command's stream without a
 * callback), in order: what each runner queues until the reader pops it.
 * How much may wait, and what happens beyond, is the runner's policy. */
typedef struct sb_outq {
  sb_buf b;
  size_t off; /* bytes before it are read */
} sb_outq;

static inline size_t sb_outq_pending(const sb_outq *q) { return q->b.len - q->off; }
/* Append (moving the unread part to the front first when that avoids
 * growing); 0 or -1 (OOM: nothing appended). */
int sb_outq_push(const sb_mem *m, sb_outq *q, const char *d, size_t n);
/* Everything unread, valid until the next push (false: nothing). */
bool sb_outq_pop(sb_outq *q, const char **d, size_t *n);
void sb_outq_free(const sb_mem *m, sb_outq *q);

#endif
