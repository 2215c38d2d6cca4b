#include "net/intercept.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "net/h1req.h"
#include "plat/bytes.h"

#define PLAIN (16 * 1024)
/* A host that takes the connection but never completes TLS: the command's
 * CONNECT fails after this long rather than waiting on its own timeouts. */
#define HANDSHAKE_MS 10000

typedef struct icpt {
  sb_netconn *c;
  sb_tlsca *ca;
  const sb_secret *secret;
  SSL *down, *up; /* down: we serve the command; up: we are the host's client */
  BIO *down_in, *down_out, *up_in, *up_out; /* memory BIOs, owned by their SSL */
  bool up_ready, down_started, down_ready, done;
  sb_h1req req;
} icpt;

static icpt *of(sb_netconn *c) { return c->fud; }

/* Ciphertext an SSL produced, to its side. */
static bool flush(icpt *t, BIO *out, bool to_client) {
  char buf[4 * PLAIN]; /* up to four records a write */
  int n;
  while ((n = BIO_read(out, buf, sizeof buf)) > 0)
    if (!sb_netconn_send(t->c, to_client, buf, (size_t)n)) return false;
  return true;
}

static bool ssl_write(icpt *t, SSL *s, const char *p, size_t n) {
  while (n) {
    int w = SSL_write(s, p, n > PLAIN ? PLAIN : (int)n);
    if (w <= 0) return false; /* a memory BIO takes everything: anything else is an error */
    p += w;
    n -= (size_t)w;
  }
  return flush(t, s == t->up ? t->up_out : t->down_out, s == t->down);
}

/* The command gets an HTTP error inside its TLS session, then the end. */
static void refuse_inside(icpt *t, int status, const char *why) {
  char buf[1024];
  int body = (int)strlen(why) + 1;
  int n = snprintf(buf, sizeof buf,
                   "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Sandbox-Error: bad-request\r\n"
                   "Connection: close\r\nContent-Length: %d\r\n\r\n%s\n",
                   status,
                   status == 431       ? "Request Header Fields Too Large"
                       : status == 501 ? "Not Implemented"
                       : status == 503 ? "Service Unavailable"
                                       : "Bad Request",
                   body, why);
  sb_netconn_log(t->c, SB_NE_REFUSE, status, why);
  t->done = true;
  if (n > 0 && (size_t)n < sizeof buf && SSL_write(t->down, buf, n) > 0) SSL_shutdown(t->down);
  char out[PLAIN];
  int k = BIO_read(t->down_out, out, sizeof out);
  sb_netconn_send_last(t->c, out, k > 0 ? (size_t)k : 0);
}

/* A request head on its way up: the secret's header set, whatever the
 * command sent in its place, and the proxy's own headers dropped. */
static bool on_head(void *ud, const char *head, size_t len) {
  icpt *t = ud;
  const sb_secret *s = t->secret;
  const char *drop[] = {"Proxy-Authorization", "Proxy-Connection", s->header, NULL};
  size_t cap = len + s->hlen + s->vlen + 8, n = 0;
  char *out = sb_malloc(t->c->srv->mem, cap), *line = sb_malloc(t->c->srv->mem, s->hlen + s->vlen + 5);
  bool ok = false;
  if (out && line) {
    snprintf(line, s->hlen + s->vlen + 5, "%s: %s\r\n", s->header, s->value);
    n = sb_http_rewrite(head, len, NULL, drop, line, out, cap);
    ok = n && ssl_write(t, t->up, out, n);
  }
  if (line) {
    sb_wipe(line, s->hlen + s->vlen + 5);
    sb_free(t->c->srv->mem, line, s->hlen + s->vlen + 5);
  }
  if (out) {
    sb_wipe(out, cap);
    sb_free(t->c->srv->mem, out, cap);
  }
  if (ok) { /* the audit record names the request's method, then the tunnel's again */
    char tunnel[sizeof t->c->method];
    memcpy(tunnel, t->c->method, sizeof tunnel);
    size_t m = strcspn(head, " ");
    snprintf(t->c->method, sizeof t->c->method, "%.*s", (int)(m < sizeof tunnel ? m : sizeof tunnel - 1), head);
    sb_netconn_log(t->c, SB_NE_SECRET, 0, s->header);
    memcpy(t->c->method, tunnel, sizeof tunnel);
  }
  return ok;
}

static bool on_body(void *ud, const char *p, size_t n) {
  icpt *t = ud;
  return ssl_write(t, t->up, p, n);
}

static bool pump_up(icpt *t);

/* What the command sent, decrypted, framed and on its way up. */
static bool pump_down(icpt *t) {
  if (!t->down_ready) {
    int r = SSL_do_handshake(t->down);
    if (!flush(t, t->down_out, true)) return false;
    if (r != 1) {
      if (SSL_get_error(t->down, r) == SSL_ERROR_WANT_READ) return true;
      char why[300];
      sb_tlsca_error(t->down, r, why, sizeof why);
      sb_netconn_log(t->c, SB_NE_REFUSE, 0, why); /* the command did not trust us, or spoke no TLS */
      return false;
    }
    t->down_ready = true;
    if (!pump_up(t)) return false; /* anything the host sent meanwhile */
  }
  char buf[PLAIN], why[200];
  const sb_h1out out = {on_head, on_body, t};
  for (;;) {
    int n = SSL_read(t->down, buf, sizeof buf);
    if (n <= 0) {
      int e = SSL_get_error(t->down, n);
      if (e == SSL_ERROR_WANT_READ) return true;
      if (e == SSL_ERROR_ZERO_RETURN) { /* the command's close_notify, passed on */
        SSL_shutdown(t->up);
        return flush(t, t->up_out, false);
      }
      ERR_clear_error();
      return false;
    }
    int st = sb_h1req_feed(&t->req, buf, (size_t)n, &out, why, sizeof why);
    sb_wipe(buf, (size_t)n);
    if (st < 0) return false;
    if (st > 0) {
      refuse_inside(t, st, why);
      return true;
    }
  }
}

/* What the host answered, decrypted and re-encrypted to the command. */
static bool pump_up(icpt *t) {
  char buf[PLAIN];
  for (;;) {
    int n = SSL_read(t->up, buf, sizeof buf);
    if (n <= 0) {
      int e = SSL_get_error(t->up, n);
      if (e == SSL_ERROR_WANT_READ) return flush(t, t->up_out, false); /* e.g. a key update's answer */
      if (e == SSL_ERROR_ZERO_RETURN) {
        SSL_shutdown(t->down);
        return flush(t, t->down_out, true);
      }
      ERR_clear_error();
      return false;
    }
    if (!ssl_write(t, t->down, buf, (size_t)n)) return false;
  }
}

static bool up_handshake(icpt *t) {
  int r = SSL_do_handshake(t->up);
  if (!flush(t, t->up_out, false)) return false;
  if (r == 1) {
    t->up_ready = t->down_started = true;
    sb_netconn_deadline(t->c, 0, NULL);
    static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
    if (!sb_netconn_send(t->c, true, ok, sizeof ok - 1)) return false;
    return BIO_ctrl_pending(t->down_in) ? pump_down(t) : true;
  }
  if (SSL_get_error(t->up, r) == SSL_ERROR_WANT_READ) return true;
  char why[300], msg[600];
  sb_tlsca_error(t->up, r, why, sizeof why);
  snprintf(msg, sizeof msg, "sandbox proxy: TLS to %.200s:%u failed: %s (the request was not sent)", t->c->host,
           t->c->port, why);
  t->done = true;
  sb_netconn_refuse(t->c, 502, "upstream-tls", msg);
  return true;
}

static void handshake_late(sb_netconn *c) {
  icpt *t = of(c);
  if (t->up_ready || t->done) return;
  char msg[400];
  snprintf(msg, sizeof msg,
           "sandbox proxy: TLS to %.200s:%u failed: no handshake within %d s (the request was not sent)", c->host,
           c->port, HANDSHAKE_MS / 1000);
  t->done = true;
  sb_netconn_refuse(c, 504, "upstream-tls", msg);
}

static bool f_start(sb_netconn *c) {
  return sb_netconn_deadline(c, HANDSHAKE_MS, handshake_late) && up_handshake(of(c));
}

static bool f_data(sb_netconn *c, bool from_client, const char *p, size_t n) {
  icpt *t = of(c);
  if (t->done) return true;
  if (BIO_write(from_client ? t->down_in : t->up_in, p, (int)n) != (int)n) return false;
  if (from_client) return t->down_started ? pump_down(t) : true;
  if (!t->up_ready) return up_handshake(t);
  return t->down_ready ? pump_up(t) : true;
}

static void f_eof(sb_netconn *c, bool from_client) {
  icpt *t = of(c);
  if (t->done) return;
  SSL *s = from_client ? t->up : t->down; /* the other side hears the end, encrypted */
  if ((from_client ? t->up_ready : t->down_ready) && SSL_shutdown(s) >= 0)
    flush(t, from_client ? t->up_out : t->down_out, !from_client);
  ERR_clear_error();
}

static void f_free(sb_netconn *c) {
  icpt *t = of(c);
  if (!t) return;
  SSL_free(t->down);
  SSL_free(t->up);
  sb_h1req_free(&t->req);
  sb_free(c->srv->mem, t, sizeof *t);
  c->fud = NULL;
}

static const sb_netfilter filter = {f_start, f_data, f_eof, f_free};

bool sb_intercept_begin(sb_netconn *c, sb_tlsca *ca, const sb_secret *sec, char *why, size_t whylen) {
  icpt *t = sb_malloc(c->srv->mem, sizeof *t);
  if (!t) {
    snprintf(why, whylen, "out of memory");
    return false;
  }
  memset(t, 0, sizeof *t);
  t->c = c;
  t->ca = ca;
  t->secret = sec;
  sb_h1req_init(&t->req, c->srv->mem);
  c->fud = t;
  c->filter = &filter;
  if (!(t->down = sb_tlsca_accept(ca, c->host, why, whylen)) || !(t->up = sb_tlsca_connect(ca, c->host, why, whylen)))
    return false; /* the connection's close frees t */
  t->down_in = BIO_new(BIO_s_mem());
  t->down_out = BIO_new(BIO_s_mem());
  t->up_in = BIO_new(BIO_s_mem());
  t->up_out = BIO_new(BIO_s_mem());
  if (!t->down_in || !t->down_out || !t->up_in || !t->up_out) {
    BIO_free(t->down_in);
    BIO_free(t->down_out);
    BIO_free(t->up_in);
    BIO_free(t->up_out);
    snprintf(why, whylen, "out of memory");
    return false;
  }
  BIO_set_mem_eof_return(t->down_in, -1); /* empty is "wait for more", not the end */
  BIO_set_mem_eof_return(t->up_in, -1);
  SSL_set_bio(t->down, t->down_in, t->down_out);
  SSL_set_bio(t->up, t->up_in, t->up_out);
  return true;
}
