/* TCP servers on a sandbox's loop that read an HTTP request head, let their
 * owner decide (refuse with a response, or connect somewhere), then relay
 * bytes both ways. The allowlist proxy and the exposed-port gate are two
 * owners of this one mechanism. */
#ifndef SB_NET_RELAY_H
#define SB_NET_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

#include "base/mem.h"
#include "net/head.h"
#include "net/netlog.h"

#define SB_CONN_MAX 128 /* open connections per server; more get 503 */

typedef struct sb_netconn sb_netconn;
typedef struct sb_netserver sb_netserver;

/* An owner that transforms what is relayed (TLS interception) rather than
 * passing bytes on: once connected, bytes read from either side go to
 * `data` instead of the other side, and the filter sends with
 * sb_netconn_send. Each hook returns false to close the connection. */
typedef struct sb_netfilter {
  bool (*start)(sb_netconn *c); /* connected (the upstream side is open) */
  bool (*data)(sb_netconn *c, bool from_client, const char *p, size_t n);
  void (*eof)(sb_netconn *c, bool from_client); /* before the end is passed on */
  void (*free)(sb_netconn *c); /* the connection closes */
} sb_netfilter;

/* The head (up to and including the blank line) has arrived. The owner
 * must answer with sb_netconn_reply, _connect or _attach, now or later. */
typedef void (*sb_head_fn)(sb_netconn *c, const char *head, size_t len);

struct sb_netserver {
  uv_loop_t *loop;
  const sb_mem *mem;
  uv_tcp_t listener;
  bool open, closing;
  sb_head_fn on_head;
  void (*on_activity)(sb_netserver *s); /* bytes moved or a connection came */
  void (*on_closed)(sb_netserver *s); /* after sb_netserver_close: all freed */
  void (*on_conn_closing)(sb_netconn *c); /* cancel the owner's requests for c */
  void *ud;
  sb_netlog *log; /* where decisions go for the audit trail, or NULL */
  const char *name; /* in those records: "proxy" or "port" */
  sb_netconn *conns;
  int nconns;
};

struct sb_netconn {
  sb_netserver *srv;
  sb_netconn *next;
  uv_tcp_t a, b; /* a: the client; b: where it goes */
  uv_connect_t creq;
  uv_getaddrinfo_t gai; /* for owners that resolve a name */
  char *head; /* bytes read before the decision */
  size_t headlen, headcap;
  size_t leftover; /* bytes after the head, forwarded after the owner's */
  int handles; /* open libuv handles */
  int reqs; /* requests in flight */
  bool decided, b_open, a_eof, b_eof, closing;
  void *pending; /* what to send once connected (relay-internal) */
  /* for the audit trail: what the owner names the request (the method is
   * the relay's, from the request line), whether its end is recorded, the
   * bytes relayed from the client (up) and to it (down) */
  char method[16], host[256];
  uint16_t port;
  bool log_end;
  uint64_t up, down;
  void *ud; /* the owner's, per connection */
  const sb_netfilter *filter; /* set before connecting, or NULL: bytes as they are */
  void *fud; /* the filter's */
  uv_timer_t timer; /* an owner's deadline (sb_netconn_deadline) */
  bool timer_init;
  void (*on_deadline)(sb_netconn *c);
};

/* Serve on an already listening socket (ours from now on). 0 or a libuv error. */
int sb_netserver_open(sb_netserver *s, uv_loop_t *loop, const sb_mem *mem, int listen_fd);
/* Stop: the listener and every connection close; on_closed runs when done. */
void sb_netserver_close(sb_netserver *s);

/* Answer with `response` and close. */
void sb_netconn_reply(sb_netconn *c, const char *response, size_t len);
/* A standard refusal: "HTTP/1.1 <status>" with the reason as a text body
 * and an X-Sandbox-Error header. */
void sb_netconn_refuse(sb_netconn *c, int status, const char *error_kind, const char *reason);
/* Connect to sa from the host; then send `to_client` (may be NULL) to the
 * client and `to_upstream` plus the bytes after the head upstream, and relay. */
void sb_netconn_connect(sb_netconn *c, const struct sockaddr *sa, const char *to_client, const char *to_upstream,
                        size_t uplen);
/* The same with a socket already connected (fd becomes ours). */
void sb_netconn_attach(sb_netconn *c, int fd, const char *to_upstream, size_t uplen);
/* For a filter: send bytes to one side (copied); false on failure. */
bool sb_netconn_send(sb_netconn *c, bool to_client, const char *p, size_t n);
/* ... the last bytes to the client: the connection closes once they are written. */
void sb_netconn_send_last(sb_netconn *c, const char *p, size_t n);
/* Call fn(c) in ms unless stopped first (ms 0: stop); false if no timer could be made. */
bool sb_netconn_deadline(sb_netconn *c, uint64_t ms, void (*fn)(sb_netconn *c));
/* Record a decision about c (a no-op without srv->log). */
void sb_netconn_log(sb_netconn *c, int what, int status, const char *why);
/* Keep the connection alive across an owner's own request (e.g. DNS). */
void sb_netconn_hold(sb_netconn *c);
void sb_netconn_release(sb_netconn *c);

#endif
