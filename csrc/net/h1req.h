/* Where each HTTP/1.1 request begins in a stream of them (a kept-alive
 * connection, pipelined or not): request heads are handed to the owner
 * whole, to rewrite, and everything else (bodies by Content-Length or
 * chunked, trailers) passes as it came. After an Upgrade or a CONNECT the
 * rest of the stream is not HTTP and passes untouched. The framing decides
 * only where a head begins: every byte still goes to the one upstream the
 * connection was made to. */
#ifndef SB_NET_H1REQ_H
#define SB_NET_H1REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"

typedef struct sb_h1out {
  bool (*head)(void *ud, const char *head, size_t len); /* a whole head, to rewrite and send */
  bool (*body)(void *ud, const char *p, size_t n); /* anything else, to send as it is */
  void *ud;
} sb_h1out;

typedef struct sb_h1req {
  const sb_mem *mem;
  int state;
  char *buf; /* a head, a chunk-size line or a trailer being gathered */
  size_t len, cap;
  uint64_t left; /* bytes of body or chunk (with its CRLF) still to pass */
} sb_h1req;

void sb_h1req_init(sb_h1req *r, const sb_mem *m);
void sb_h1req_free(sb_h1req *r); /* wipes what it gathered (a head may hold a credential) */
/* Feed bytes. 0, or the HTTP status to refuse the stream with (400, 431,
 * 501) and why; -1 when an output hook returned false. */
int sb_h1req_feed(sb_h1req *r, const char *p, size_t n, const sb_h1out *out, char *why, size_t whylen);

#endif
