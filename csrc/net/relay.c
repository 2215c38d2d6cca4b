#include "net/relay.h"

#include "base/clock.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
/* Stop reading a side whose peer lags this much. With SB_CONN_MAX this
 * bounds what a command can make the host hold: 128 x (2 x 256 KiB queued
 * + 2 x 64 KiB reading) = 80 MiB per server at worst. */
#define QUEUE_MAX (256 * 1024)

/* A read buffer that becomes the write request carrying it onwards. */
typedef struct chunk {
  uv_write_t req;
  sb_netconn *c;
  size_t size;
  char data[];
} chunk;

typedef struct pend { /* what to send once connected */
  char *client, *up;
  size_t clen, ulen;
} pend;

static chunk *chunk_new(sb_netconn *c, size_t size) {
  chunk *k = sb_malloc(c->srv->mem, sizeof *k + size);
  if (k) {
    k->c = c;
    k->size = size;
  }
  return k;
}

static void chunk_free(chunk *k) { sb_free(k->c->srv->mem, k, sizeof *k + k->size); }

static chunk *chunk_of(const uv_buf_t *buf) { return (chunk *)(void *)(buf->base - offsetof(chunk, data)); }

/* ---- closing ------------------------------------------------------------ */

static void server_maybe_done(sb_netserver *s) {
  if (s->closing && !s->open && !s->conns && s->on_closed) s->on_closed(s);
}

static void conn_maybe_free(sb_netconn *c) {
  if (c->handles || c->reqs || !c->closing) return;
  sb_netserver *s = c->srv;
  for (sb_netconn **pp = &s->conns; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      s->nconns--;
      break;
    }
  pend *p = c->pending;
  if (p) {
    if (p->client) sb_free(s->mem, p->client, p->clen + 1); /* sb_memdup adds a NUL */
    if (p->up) sb_free(s->mem, p->up, p->ulen + 1);
    sb_free(s->mem, p, sizeof *p);
  }
  sb_free(s->mem, c->head, c->headcap);
  sb_free(s->mem, c, sizeof *c);
  server_maybe_done(s);
}

static void on_conn_handle_closed(uv_handle_t *h) {
  sb_netconn *c = h->data;
  c->handles--;
  conn_maybe_free(c);
}

static void conn_close(sb_netconn *c) {
  if (c->closing) return;
  c->closing = true;
  if (c->log_end) sb_netconn_log(c, SB_NE_END, 0, "");
  if (c->srv->on_conn_closing) c->srv->on_conn_closing(c); /* an owner's lookup */
  if (c->filter && c->filter->free) c->filter->free(c);
  c->filter = NULL;
  if (!uv_is_closing((uv_handle_t *)&c->a)) uv_close((uv_handle_t *)&c->a, on_conn_handle_closed);
  if (c->b_open && !uv_is_closing((uv_handle_t *)&c->b)) uv_close((uv_handle_t *)&c->b, on_conn_handle_closed);
  if (c->timer_init && !uv_is_closing((uv_handle_t *)&c->timer))
    uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
  conn_maybe_free(c);
}

static void on_deadline(uv_timer_t *t) {
  sb_netconn *c = t->data;
  if (!c->closing && c->on_deadline) c->on_deadline(c);
}

bool sb_netconn_deadline(sb_netconn *c, uint64_t ms, void (*fn)(sb_netconn *c)) {
  if (c->closing) return false;
  if (!c->timer_init) {
    if (!ms) return true;
    if (uv_timer_init(c->srv->loop, &c->timer) != 0) return false;
    c->timer.data = c;
    c->timer_init = true;
    c->handles++;
  }
  c->on_deadline = fn;
  if (!ms) return uv_timer_stop(&c->timer) == 0;
  return uv_timer_start(&c->timer, on_deadline, ms, 0) == 0;
}

void sb_netconn_hold(sb_netconn *c) { c->reqs++; }

void sb_netconn_release(sb_netconn *c) {
  c->reqs--;
  conn_maybe_free(c);
}

/* ---- relaying ------------------------------------------------------------ */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)hint;
  sb_netconn *c = h->data;
  chunk *k = chunk_new(c, CHUNK);
  *buf = k ? uv_buf_init(k->data, CHUNK) : uv_buf_init(NULL, 0);
}

static uv_stream_t *peer(sb_netconn *c, uv_stream_t *s) {
  return s == (uv_stream_t *)&c->a ? (uv_stream_t *)&c->b : (uv_stream_t *)&c->a;
}

static void on_relay_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void on_relay_written(uv_write_t *w, int status) {
  chunk *k = (chunk *)w;
  sb_netconn *c = k->c;
  uv_stream_t *dst = w->handle;
  chunk_free(k);
  c->reqs--;
  if (status < 0) conn_close(c);
  else if (!c->closing && uv_stream_get_write_queue_size(dst) < QUEUE_MAX / 2) {
    uv_stream_t *src = peer(c, dst); /* resume a side paused for this one */
    bool src_eof = src == (uv_stream_t *)&c->a ? c->a_eof : c->b_eof;
    if (!src_eof && !uv_is_active((uv_handle_t *)src)) uv_read_start(src, on_alloc, on_relay_read);
  }
  conn_maybe_free(c);
}

static void on_shutdown(uv_shutdown_t *r, int status) {
  sb_netconn *c = r->data;
  (void)status;
  sb_free(c->srv->mem, r, sizeof *r);
  c->reqs--;
  if (c->a_eof && c->b_eof) conn_close(c);
  conn_maybe_free(c);
}

static void send_chunk(sb_netconn *c, uv_stream_t *dst, chunk *k, size_t len) {
  uv_buf_t b = uv_buf_init(k->data, (unsigned)len);
  if (uv_write(&k->req, dst, &b, 1, on_relay_written) != 0) {
    chunk_free(k);
    conn_close(c);
    return;
  }
  c->reqs++;
}

static bool send_copy(sb_netconn *c, uv_stream_t *dst, const char *p, size_t len) {
  if (!len) return true;
  chunk *k = chunk_new(c, len);
  if (!k) return false;
  memcpy(k->data, p, len);
  send_chunk(c, dst, k, len);
  return true;
}

bool sb_netconn_send(sb_netconn *c, bool to_client, const char *p, size_t n) {
  if (c->closing) return false;
  return send_copy(c, to_client ? (uv_stream_t *)&c->a : (uv_stream_t *)&c->b, p, n);
}

static void on_relay_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  sb_netconn *c = s->data;
  if (n > 0) {
    uv_stream_t *dst = peer(c, s);
    if (s == (uv_stream_t *)&c->a) c->up += (uint64_t)n;
    else c->down += (uint64_t)n;
    if (c->srv->on_activity) c->srv->on_activity(c->srv);
    if (c->filter) {
      bool ok = c->filter->data(c, s == (uv_stream_t *)&c->a, buf->base, (size_t)n);
      chunk_free(chunk_of(buf));
      if (!ok) conn_close(c);
    } else {
      send_chunk(c, dst, chunk_of(buf), (size_t)n);
    }
    if (!c->closing && uv_stream_get_write_queue_size(dst) > QUEUE_MAX) uv_read_stop(s);
    return;
  }
  if (buf->base) chunk_free(chunk_of(buf));
  if (n == 0) return;
  if (n != UV_EOF) {
    conn_close(c);
    return;
  }
  /* one side finished sending: pass the end on, close when both have */
  if (s == (uv_stream_t *)&c->a) c->a_eof = true;
  else c->b_eof = true;
  uv_read_stop(s);
  if (c->filter && c->filter->eof) c->filter->eof(c, s == (uv_stream_t *)&c->a);
  if (c->closing) return;
  uv_shutdown_t *r = sb_malloc(c->srv->mem, sizeof *r);
  if (!r) {
    conn_close(c);
    return;
  }
  r->data = c;
  if (uv_shutdown(r, peer(c, s), on_shutdown) != 0) {
    sb_free(c->srv->mem, r, sizeof *r);
    conn_close(c);
    return;
  }
  c->reqs++;
}

static void start_relay(sb_netconn *c) {
  pend *p = c->pending;
  c->b.data = c;
  /* no Nagle on either side: a relayed small write (a request head, a TLS
   * record) would otherwise wait for the peer's delayed ACK */
  uv_tcp_nodelay(&c->a, 1);
  uv_tcp_nodelay(&c->b, 1);
  c->up += (p ? p->ulen : 0) + c->leftover; /* the request as sent on counts as the client's bytes */
  if ((p && !send_copy(c, (uv_stream_t *)&c->a, p->client, p->clen)) ||
      (p && !send_copy(c, (uv_stream_t *)&c->b, p->up, p->ulen))) {
    conn_close(c);
    return;
  }
  if (c->filter) { /* the bytes after the head are the filter's too */
    if (!c->filter->start(c) ||
        (c->leftover && !c->closing && !c->filter->data(c, true, c->head + c->headlen, c->leftover))) {
      conn_close(c);
      return;
    }
    if (c->closing) return;
  } else if (!send_copy(c, (uv_stream_t *)&c->b, c->head + c->headlen, c->leftover)) {
    conn_close(c);
    return;
  }
  uv_read_start((uv_stream_t *)&c->a, on_alloc, on_relay_read);
  uv_read_start((uv_stream_t *)&c->b, on_alloc, on_relay_read);
}

/* ---- the owner's answers -------------------------------------------------- */

static void on_reply_written(uv_write_t *w, int status) {
  chunk *k = (chunk *)w;
  sb_netconn *c = k->c;
  (void)status;
  chunk_free(k);
  c->reqs--;
  conn_close(c);
}

void sb_netconn_reply(sb_netconn *c, const char *response, size_t len) {
  c->decided = true;
  sb_netconn_send_last(c, response, len);
}

void sb_netconn_send_last(sb_netconn *c, const char *response, size_t len) {
  if (c->closing) return;
  chunk *k = chunk_new(c, len);
  if (!k) {
    conn_close(c);
    return;
  }
  memcpy(k->data, response, len);
  uv_buf_t b = uv_buf_init(k->data, (unsigned)len);
  if (uv_write(&k->req, (uv_stream_t *)&c->a, &b, 1, on_reply_written) != 0) {
    chunk_free(k);
    conn_close(c);
    return;
  }
  c->reqs++;
}

void sb_netconn_log(sb_netconn *c, int what, int status, const char *why) {
  if (!c->srv->log) return;
  sb_netevent ev = {.time = sb_wall(),
                    .what = (uint8_t)what,
                    .port = c->port,
                    .status = (uint16_t)status,
                    .server = c->srv->name ? c->srv->name : "",
                    .up = c->up,
                    .down = c->down};
  snprintf(ev.method, sizeof ev.method, "%s", c->method);
  snprintf(ev.host, sizeof ev.host, "%s", c->host);
  snprintf(ev.why, sizeof ev.why, "%s", why);
  sb_netlog_push(c->srv->log, &ev);
}

void sb_netconn_refuse(sb_netconn *c, int status, const char *kind, const char *reason) {
  c->log_end = false; /* refused: no relayed connection to end */
  sb_netconn_log(c, SB_NE_REFUSE, status, reason);
  const char *text = status == 400 ? "Bad Request"
      : status == 401              ? "Unauthorized"
      : status == 403              ? "Forbidden"
      : status == 431              ? "Request Header Fields Too Large"
      : status == 502              ? "Bad Gateway"
      : status == 503              ? "Service Unavailable"
      : status == 504              ? "Gateway Timeout"
                                   : "Error";
  char buf[2048];
  int body = (int)strlen(reason) + 1;
  int n = snprintf(buf, sizeof buf,
                   "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                   "X-Sandbox-Error: %s\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s\n",
                   status, text, kind, body, reason);
  sb_netconn_reply(c, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static bool keep_pending(sb_netconn *c, const char *to_client, const char *up, size_t ulen) {
  const sb_mem *m = c->srv->mem;
  pend *p = sb_malloc(m, sizeof *p);
  if (!p) return false;
  memset(p, 0, sizeof *p);
  c->pending = p;
  p->clen = to_client ? strlen(to_client) : 0;
  p->ulen = up ? ulen : 0;
  p->client = p->clen ? sb_memdup(m, to_client, p->clen) : NULL;
  p->up = p->ulen ? sb_memdup(m, up, p->ulen) : NULL;
  return (!p->clen || p->client) && (!p->ulen || p->up);
}

static void on_connected(uv_connect_t *r, int status) {
  sb_netconn *c = r->data;
  c->reqs--;
  if (c->closing) {
    conn_maybe_free(c);
    return;
  }
  if (status < 0) {
    char why[256];
    snprintf(why, sizeof why, "sandbox proxy: cannot connect: %s", uv_strerror(status));
    sb_netconn_refuse(c, 502, "upstream-unreachable", why);
    return;
  }
  start_relay(c);
}

void sb_netconn_connect(sb_netconn *c, const struct sockaddr *sa, const char *to_client, const char *to_upstream,
                        size_t uplen) {
  c->decided = true;
  if (c->closing) return;
  if (!keep_pending(c, to_client, to_upstream, uplen) || uv_tcp_init(c->srv->loop, &c->b) != 0) {
    conn_close(c);
    return;
  }
  c->b.data = c;
  c->b_open = true;
  c->handles++;
  c->creq.data = c;
  if (uv_tcp_connect(&c->creq, &c->b, sa, on_connected) != 0) {
    sb_netconn_refuse(c, 502, "upstream-unreachable", "sandbox proxy: cannot connect");
    return;
  }
  c->reqs++;
}

void sb_netconn_attach(sb_netconn *c, int fd, const char *to_upstream, size_t uplen) {
  c->decided = true;
  if (c->closing || !keep_pending(c, NULL, to_upstream, uplen) || uv_tcp_init(c->srv->loop, &c->b) != 0) {
    close(fd);
    conn_close(c);
    return;
  }
  c->b.data = c;
  c->b_open = true;
  c->handles++;
  if (uv_tcp_open(&c->b, fd) != 0) {
    close(fd);
    conn_close(c);
    return;
  }
  start_relay(c);
}

/* ---- reading the head ------------------------------------------------------ */

/* Until the head is complete its bytes are [head, head + leftover). */
static void on_head_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  sb_netconn *c = s->data;
  if (n <= 0) {
    if (buf->base) chunk_free(chunk_of(buf));
    if (n < 0) conn_close(c); /* gone before asking anything */
    return;
  }
  size_t old = c->headlen + c->leftover;
  if (old + (size_t)n > c->headcap) {
    size_t cap = old + (size_t)n + 1024;
    char *h = sb_realloc(c->srv->mem, c->head, c->headcap, cap);
    if (!h) {
      chunk_free(chunk_of(buf));
      conn_close(c);
      return;
    }
    c->head = h;
    c->headcap = cap;
  }
  memcpy(c->head + old, buf->base, (size_t)n);
  chunk_free(chunk_of(buf));
  size_t total = old + (size_t)n, from = old > 3 ? old - 3 : 0;
  for (size_t i = from; i + 4 <= total; i++)
    if (memcmp(c->head + i, "\r\n\r\n", 4) == 0) {
      c->headlen = i + 4;
      c->leftover = total - c->headlen;
      uv_read_stop(s);
      if (c->headlen > SB_HEAD_MAX) {
        sb_netconn_refuse(c, 431, "bad-request", "sandbox: the request head is too long");
        return;
      }
      if (!sb_http_head_valid(c->head, c->headlen)) {
        sb_netconn_refuse(c, 400, "bad-request",
                          "sandbox: malformed request head (only CRLF line "
                          "ends, no control bytes, no folded headers)");
        return;
      }
      char target[8192];
      if (!sb_http_request_line(c->head, c->headlen, c->method, sizeof c->method, target, sizeof target))
        c->method[0] = '\0';
      c->srv->on_head(c, c->head, c->headlen);
      return;
    }
  c->headlen = 0;
  c->leftover = total;
  if (total > SB_HEAD_MAX) {
    uv_read_stop(s);
    sb_netconn_refuse(c, 431, "bad-request", "sandbox: the request head is too long");
  }
}

static void on_connection(uv_stream_t *l, int status) {
  sb_netserver *s = l->data;
  if (status < 0 || s->closing) return;
  sb_netconn *c = sb_malloc(s->mem, sizeof *c);
  if (!c) return;
  memset(c, 0, sizeof *c);
  c->srv = s;
  if (uv_tcp_init(s->loop, &c->a) != 0) {
    sb_free(s->mem, c, sizeof *c);
    return;
  }
  c->a.data = c;
  c->handles = 1;
  c->next = s->conns;
  s->conns = c;
  s->nconns++;
  if (uv_accept(l, (uv_stream_t *)&c->a) != 0) {
    conn_close(c);
    return;
  }
  if (s->nconns > SB_CONN_MAX) {
    sb_netconn_refuse(c, 503, "too-many-connections", "sandbox: too many open connections");
    return;
  }
  if (s->on_activity) s->on_activity(s);
  uv_read_start((uv_stream_t *)&c->a, on_alloc, on_head_read);
}

int sb_netserver_open(sb_netserver *s, uv_loop_t *loop, const sb_mem *mem, int fd) {
  s->loop = loop;
  s->mem = mem;
  s->conns = NULL;
  s->nconns = 0;
  s->closing = false;
  int r = uv_tcp_init(loop, &s->listener);
  if (r != 0) {
    close(fd);
    return r;
  }
  s->listener.data = s;
  s->open = true;
  if ((r = uv_tcp_open(&s->listener, fd)) != 0 ||
      (r = uv_listen((uv_stream_t *)&s->listener, 128, on_connection)) != 0) {
    sb_netserver_close(s);
    return r;
  }
  return 0;
}

static void on_listener_closed(uv_handle_t *h) {
  sb_netserver *s = h->data;
  s->open = false;
  server_maybe_done(s);
}

void sb_netserver_close(sb_netserver *s) {
  if (s->closing) return;
  s->closing = true;
  for (sb_netconn *c = s->conns, *next; c; c = next) {
    next = c->next;
    conn_close(c);
  }
  if (s->open) uv_close((uv_handle_t *)&s->listener, on_listener_closed);
  else server_maybe_done(s);
}
