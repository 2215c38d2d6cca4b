/* The allowlist proxy of a sandbox's commands: HTTP CONNECT (for HTTPS and
 * any TCP) and absolute-form HTTP requests, listening inside the commands'
 * network namespace (they have no other way out). Every request is checked
 * by name, then resolved on the service loop and checked by address; the
 * connection goes to the first allowed address (pinned: no second lookup a
 * DNS server could answer differently). A refusal is an HTTP 403 with
 * X-Sandbox-Error: blocked-by-allowlist and the reason as the body.
 * Requests to a host with a secret get its header on the way: plain HTTP
 * here, HTTPS through net/intercept.c. */
#ifndef SB_NET_PROXY_H
#define SB_NET_PROXY_H

#include "net/hosts.h"
#include "net/relay.h"
#include "net/tlsca.h"

typedef struct sb_proxy {
  sb_netserver srv;
  const sb_netpolicy *policy; /* the sandbox's; read-only while serving */
  sb_netlog *log; /* set before opening: the audit trail's, or NULL */
  sb_tlsca *ca; /* set before opening: intercepts CONNECTs to hosts with a secret (NULL: refused) */
  void (*on_closed)(struct sb_proxy *p);
  void *ud;
} sb_proxy;

/* On the loop's thread: serve on listen_fd (ours from now on). */
int sb_proxy_open(sb_proxy *p, uv_loop_t *loop, const sb_mem *m, const sb_netpolicy *pol, int listen_fd);
/* On the loop's thread: close; p->on_closed runs when all is freed. */
void sb_proxy_close(sb_proxy *p);

#endif
