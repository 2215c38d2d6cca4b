/* The Connect protocol as envd speaks it (SPEC §15, reference/remote.md):
 * the envelope framing of server streams (1 flag byte, a 4-byte big-endian
 * length, the JSON message; flag 0x02 on the last, which carries the end of
 * the stream: an error or nothing), and Connect's error codes turned into the
 * sandbox's vocabulary.
 *
 * The reader is incremental: bytes arrive as curl hands them over, split
 * anywhere, and each whole message is passed on as soon as its last byte is
 * in. A message longer than the reader's limit is refused before it is
 * buffered, so a broken or hostile peer cannot grow the client's memory. */
#ifndef SB_REMOTE_CONNECT_H
#define SB_REMOTE_CONNECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/mem.h"
#include "remote/json.h"

#define SB_CONNECT_FLAG_COMPRESSED 0x01u
#define SB_CONNECT_FLAG_END 0x02u
#define SB_CONNECT_MAX_MESSAGE (16u << 20) /* envd's file chunks and output events fit well */

/* A whole message: return SB_OK to go on, anything else stops the feed
 * (with e set by the callback). */
typedef sb_code (*sb_connect_msg_fn)(void *ud, unsigned flags, const char *msg, size_t len, sb_err *e);

typedef struct sb_connect_reader {
  const sb_mem *m;
  size_t max; /* message limit (SB_CONNECT_MAX_MESSAGE when 0) */
  sb_buf pending; /* the bytes of a message not complete yet */
  bool ended; /* the end-of-stream message was read */
} sb_connect_reader;

void sb_connect_reader_init(sb_connect_reader *r, const sb_mem *m, size_t max);
void sb_connect_reader_free(sb_connect_reader *r);
/* Feed bytes. EIO when a message is over the limit, compressed (we never
 * ask for compression), or follows the end of the stream. */
sb_code sb_connect_feed(sb_connect_reader *r, const char *p, size_t n, sb_connect_msg_fn fn, void *ud, sb_err *e);
/* The transport is done: EIO when it stopped inside a message or before the
 * end-of-stream message (a dropped connection, not a finished stream). */
sb_code sb_connect_done(const sb_connect_reader *r, sb_err *e);

/* Append one envelope holding msg[0, len) to out (0, or -1 out of memory). */
int sb_connect_envelope(const sb_mem *m, sb_buf *out, unsigned flags, const char *msg, size_t len);

/* The sandbox's code for a Connect error code ("not_found", ...), and the
 * code an HTTP status means when the body is not a Connect error. */
sb_code sb_connect_code(const char *name);
sb_code sb_connect_http_code(long status);
/* A failure from an error document ({"code", "message"}) at token at of d
 * (NULL: none): "remote: <what>: <message>" with the Connect code mapped, or
 * without a Connect code the HTTP status's (REST errors carry a number).
 * `what` names the call ("Stat", "create sandbox"). Returns the code. */
sb_code sb_connect_fail(const sb_json *d, size_t at, long status, const char *what, sb_err *e);

#endif
