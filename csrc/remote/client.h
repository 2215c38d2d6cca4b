/* HTTP calls to a remote engine (SPEC §15): E2B's REST control plane and
 * envd's Connect services, with libcurl.
 *
 * One meaning per timeout (E2B #500): `connect` bounds opening a
 * connection, `call` a whole unary call, `idle` the time a stream may go
 * without a byte (envd sends keepalives more often than that, so a stream
 * that goes quiet for `idle` is a dead link or a dead sandbox, E2B #1128);
 * a stream has no whole-call limit (a command's own timeout is the
 * caller's). Every failure is EIO, ENOENT, EACCES, ... with a sentence that
 * names the call, never a header: keys and tokens stay out of messages.
 * No proxy from the environment: the engine's URL is the one asked for. */
#ifndef SB_REMOTE_CLIENT_H
#define SB_REMOTE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/mem.h"
#include "remote/json.h"
#include "remote/connect.h"

/* Connections kept open between calls (HTTP keep-alive), for every thread
 * of one sandbox: without them each call to an https engine would open a
 * connection of its own, a TCP and a TLS handshake, two round trips and
 * more. */
typedef struct sb_rpool sb_rpool;
sb_rpool *sb_rpool_new(void); /* NULL: out of memory */
void sb_rpool_free(sb_rpool *p); /* once no call uses it */

/* How calls reach the engine: the timeouts, and the pool to use. */
typedef struct sb_rlink {
  double connect; /* seconds */
  double call;
  double idle;
  sb_rpool *pool; /* NULL: a connection per call */
} sb_rlink;

#define SB_RHEADERS_MAX 8

typedef struct sb_rreq {
  const char *method; /* GET, POST, DELETE */
  const char *url; /* absolute */
  const char *what; /* the call, for messages: "Stat", "create sandbox" */
  const char *headers[SB_RHEADERS_MAX]; /* "Name: value", NULL-terminated when fewer */
  const char *body;
  size_t blen;
  size_t max_body; /* response bytes accepted (EFBIG beyond); 0 = 16 MiB */
  const char *secret; /* masked ("***") wherever a failure's message repeats it */
} sb_rreq;

typedef struct sb_rresp {
  long status;
  sb_buf body;
  char next_token[512]; /* the X-Next-Token header of a paged listing ("": the last page) */
} sb_rresp;

/* One call: the response whatever its status (a transport failure is EIO).
 * rs->body is the caller's to free (sb_buf_free) in every case. */
sb_code sb_remote_call(const sb_mem *m, const sb_rlink *t, const sb_rreq *rq, sb_rresp *rs, sb_err *e);

/* A unary Connect call with a JSON body: SB_OK with the reply parsed in
 * *reply (the caller frees it with sb_json_free), or the Connect error in
 * the sandbox's vocabulary. */
sb_code sb_remote_unary(const sb_mem *m, const sb_rlink *t, const sb_rreq *rq, sb_json *reply, sb_err *e);

/* A server stream: the request message is sent as one envelope, every
 * message of the reply goes to fn as it arrives, the end-of-stream
 * message's error (if any) is the result. EIO when the link goes quiet for
 * t->idle seconds or drops before the stream's end. */
sb_code sb_remote_stream(const sb_mem *m, const sb_rlink *t, const sb_rreq *rq, sb_connect_msg_fn fn, void *ud,
                         sb_err *e);

/* Mask every occurrence of secret in e's message ("***"); secrets shorter
 * than 8 bytes are left (no engine issues such keys, and they would mask
 * ordinary words). */
void sb_remote_mask(sb_err *e, const char *secret);

#endif
