#include "net/proxy.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/intercept.h"
#include "plat/bytes.h"

/* A request between its head and the answer of the resolver. */
typedef struct preq {
  char host[256];
  uint16_t port;
  bool tunnel; /* CONNECT */
  const sb_secret *secret; /* set on the request upstream (audited when it goes) */
  char *up; /* the head to send upstream (plain HTTP) */
  size_t uplen, upcap;
} preq;

static sb_proxy *proxy_of(sb_netconn *c) { return c->srv->ud; }

static void preq_free(sb_netconn *c) {
  preq *q = c->ud;
  if (!q) return;
  const sb_mem *m = c->srv->mem;
  if (q->up) {
    if (q->secret) sb_wipe(q->up, q->upcap); /* it held a secret's value */
    sb_free(m, q->up, q->upcap);
  }
  sb_free(m, q, sizeof *q);
  c->ud = NULL;
}

/* "host:port" or "[v6]:port" (port required unless def != 0). */
static bool split_authority(const char *a, size_t len, uint16_t def, char *host, size_t hlen, uint16_t *port) {
  const char *colon = NULL, *hs = a, *he;
  if (len && a[0] == '[') {
    const char *rb = memchr(a, ']', len);
    if (!rb) return false;
    hs = a + 1;
    he = rb;
    if (rb + 1 < a + len) {
      if (rb[1] != ':') return false;
      colon = rb + 1;
    }
  } else {
    colon = sb_memrchr(a, ':', len);
    he = colon ? colon : a + len;
  }
  if (he <= hs || (size_t)(he - hs) >= hlen || memchr(a, '@', len)) return false;
  memcpy(host, hs, (size_t)(he - hs));
  host[he - hs] = '\0';
  if (!colon) {
    *port = def;
    return def != 0;
  }
  char *end;
  long v = strtol(colon + 1, &end, 10);
  if (end != a + len || colon + 1 == end || v <= 0 || v > 65535) return false;
  *port = (uint16_t)v;
  return true;
}

static void refuse_blocked(sb_netconn *c, const char *why) {
  char msg[800];
  snprintf(msg, sizeof msg, "sandbox proxy: %s", why);
  sb_netconn_refuse(c, 403, "blocked-by-allowlist", msg);
}

static void on_resolved(uv_getaddrinfo_t *r, int status, struct addrinfo *res) {
  sb_netconn *c = r->data;
  preq *q = c->ud;
  if (status == UV_ECANCELED || c->closing || !q) {
    uv_freeaddrinfo(res);
    preq_free(c);
    sb_netconn_release(c);
    return;
  }
  if (status < 0) {
    char why[400];
    snprintf(why, sizeof why, "sandbox proxy: cannot resolve %s: %s", q->host, uv_strerror(status));
    sb_netconn_refuse(c, 502, "dns-failure", why);
  } else {
    char why[400] = "", first[400] = "";
    const struct addrinfo *ok = NULL;
    for (const struct addrinfo *ai = res; ai && !ok; ai = ai->ai_next) {
      if (sb_net_addr_allowed(proxy_of(c)->policy, ai->ai_addr, q->port, why, sizeof why)) ok = ai;
      else if (!first[0]) snprintf(first, sizeof first, "%s", why);
    }
    if (!ok) {
      char msg[700];
      snprintf(msg, sizeof msg, "%s resolves to %s", q->host, first[0] ? first : "no address");
      refuse_blocked(c, msg);
    } else {
      sb_netconn_log(c, SB_NE_ALLOW, 0, "allowed_hosts");
      if (q->secret && !q->tunnel) sb_netconn_log(c, SB_NE_SECRET, 0, q->secret->header); /* HTTPS: per request */
      c->log_end = true; /* its bytes each way are recorded when it closes */
      if (q->tunnel && q->secret) { /* the 200 comes once the host's TLS is verified */
        char err[300];
        if (sb_intercept_begin(c, proxy_of(c)->ca, q->secret, err, sizeof err)) {
          sb_netconn_connect(c, ok->ai_addr, NULL, NULL, 0);
        } else {
          char msg[400];
          snprintf(msg, sizeof msg, "sandbox proxy: %s", err);
          sb_netconn_refuse(c, 502, "proxy-error", msg);
        }
      } else if (q->tunnel) {
        sb_netconn_connect(c, ok->ai_addr, "HTTP/1.1 200 Connection Established\r\n\r\n", NULL, 0);
      } else sb_netconn_connect(c, ok->ai_addr, NULL, q->up, q->uplen);
    }
  }
  uv_freeaddrinfo(res);
  preq_free(c);
  sb_netconn_release(c);
}

/* Absolute-form "http://authority/path": the origin-form request upstream,
 * with the Host the URL names and one request per connection (a second
 * request on a kept-alive connection could name another host). */
static bool plain_request(sb_netconn *c, preq *q, const char *method, const char *target, const char *head, size_t len,
                          char *why, size_t whylen) {
  const char *auth = target + 7, *path = auth + strcspn(auth, "/?#");
  if (!split_authority(auth, (size_t)(path - auth), 80, q->host, sizeof q->host, &q->port)) {
    snprintf(why, whylen, "bad URL in the request: %.200s", target);
    return false;
  }
  char line[8400], extra[400];
  const char *eol = memmem(head, len, "\r\n", 2), *version = eol;
  while (version > head && version[-1] != ' ') version--;
  snprintf(line, sizeof line, "%s %s%.*s %.*s", method, *path == '/' ? "" : "/", (int)strcspn(path, "#"), path,
           (int)(eol - version), version);
  snprintf(extra, sizeof extra, "Host: %.*s\r\nConnection: close\r\n", (int)(path - auth), auth);
  /* a secret for this host: its header set here, whatever the command sent
   * in its place (the value never crosses into the sandbox) */
  const sb_secret *sec = sb_net_secret_for(proxy_of(c)->policy, q->host, q->port);
  const char *drop[] = {
      "Host", "Connection", "Proxy-Connection", "Proxy-Authorization", "Keep-Alive", sec ? sec->header : NULL, NULL};
  size_t cap = len + sizeof extra + 16 + (sec ? sec->hlen + sec->vlen + 4 : 0);
  q->up = sb_malloc(c->srv->mem, cap);
  if (!q->up) {
    snprintf(why, whylen, "out of memory");
    return false;
  }
  q->upcap = cap;
  char *add = extra;
  if (sec) { /* extra plus the secret's line, built in the request's own buffer's tail */
    size_t el = strlen(extra), need = el + sec->hlen + sec->vlen + 5;
    add = sb_malloc(c->srv->mem, need);
    if (!add) {
      snprintf(why, whylen, "out of memory");
      return false;
    }
    snprintf(add, need, "%s%s: %s\r\n", extra, sec->header, sec->value);
  }
  q->uplen = sb_http_rewrite(head, len, line, drop, add, q->up, cap);
  if (sec) {
    sb_wipe(add, strlen(add));
    sb_free(c->srv->mem, add, sec->hlen + sec->vlen + strlen(extra) + 5);
  }
  if (!q->uplen) {
    snprintf(why, whylen, "request head too large");
    return false;
  }
  q->secret = sec;
  return true;
}

static void on_head(sb_netconn *c, const char *head, size_t len) {
  char method[32], target[8192], why[400];
  if (!sb_http_request_line(head, len, method, sizeof method, target, sizeof target)) {
    sb_netconn_refuse(c, 400, "bad-request", "sandbox proxy: malformed request line");
    return;
  }
  preq *q = sb_malloc(c->srv->mem, sizeof *q);
  if (!q) {
    sb_netconn_refuse(c, 502, "proxy-error", "sandbox proxy: out of memory");
    return;
  }
  memset(q, 0, sizeof *q);
  c->ud = q;
  if (strcmp(method, "CONNECT") == 0) {
    q->tunnel = true;
    if (!split_authority(target, strlen(target), 0, q->host, sizeof q->host, &q->port)) {
      preq_free(c);
      sb_netconn_refuse(c, 400, "bad-request", "sandbox proxy: CONNECT needs host:port");
      return;
    }
    q->secret = sb_net_secret_for(proxy_of(c)->policy, q->host, q->port);
    if (q->secret && !proxy_of(c)->ca) {
      /* no authority to intercept with: refused with the reason rather
       * than tunnelled past the proxy without its secret */
      snprintf(c->host, sizeof c->host, "%s", q->host);
      c->port = q->port;
      snprintf(why, sizeof why,
               "sandbox proxy: %.200s:%u has a secret, but this sandbox has no TLS authority to add it", q->host,
               q->port);
      preq_free(c);
      sb_netconn_refuse(c, 403, "secret-needs-interception", why);
      return;
    }
  } else if (strncasecmp(target, "http://", 7) == 0) {
    if (!plain_request(c, q, method, target, head, len, why, sizeof why)) {
      preq_free(c);
      sb_netconn_refuse(c, 400, "bad-request", why);
      return;
    }
  } else {
    preq_free(c);
    sb_netconn_refuse(c, 400, "bad-request",
                      strncasecmp(target, "https://", 8) == 0
                          ? "sandbox proxy: https URLs go through CONNECT (set HTTPS_PROXY)"
                          : "sandbox proxy: send absolute http:// URLs or CONNECT host:port");
    return;
  }
  snprintf(c->host, sizeof c->host, "%s", q->host);
  c->port = q->port;
  if (!sb_net_host_allowed(proxy_of(c)->policy, q->host, q->port, why, sizeof why)) {
    preq_free(c);
    refuse_blocked(c, why);
    return;
  }
  char port[8];
  snprintf(port, sizeof port, "%u", q->port);
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  c->gai.data = c;
  sb_netconn_hold(c);
  int r = uv_getaddrinfo(c->srv->loop, &c->gai, on_resolved, q->host, port, &hints);
  if (r != 0) {
    preq_free(c);
    snprintf(why, sizeof why, "sandbox proxy: cannot resolve: %s", uv_strerror(r));
    sb_netconn_refuse(c, 502, "dns-failure", why);
    sb_netconn_release(c);
  }
}

static void on_conn_closing(sb_netconn *c) {
  if (c->ud) uv_cancel((uv_req_t *)&c->gai); /* on_resolved frees the request */
}

static void on_srv_closed(sb_netserver *s) {
  sb_proxy *p = s->ud;
  if (p->on_closed) p->on_closed(p);
}

int sb_proxy_open(sb_proxy *p, uv_loop_t *loop, const sb_mem *m, const sb_netpolicy *pol, int listen_fd) {
  memset(&p->srv, 0, sizeof p->srv);
  p->policy = pol;
  p->srv.on_head = on_head;
  p->srv.on_conn_closing = on_conn_closing;
  p->srv.on_closed = on_srv_closed;
  p->srv.ud = p;
  p->srv.name = "proxy";
  p->srv.log = p->log;
  return sb_netserver_open(&p->srv, loop, m, listen_fd);
}

void sb_proxy_close(sb_proxy *p) { sb_netserver_close(&p->srv); }
