/* Which hosts commands and http_get may reach: allowed_hosts and
 * denied_hosts, checked by name before resolving and by address after
 * (SPEC §5 phase 2). One policy for the proxy and for http_get. */
#ifndef SB_NET_HOSTS_H
#define SB_NET_HOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/mem.h"

/* One entry: "example.org", "*.example.org", "*", an IP ("127.0.0.1",
 * "::1") or a CIDR ("10.0.0.0/8"), each with an optional ":port" (IPv6 in
 * brackets: "[::1]:8080"). */
typedef struct sb_hostrule {
  char name[256]; /* lower case; the suffix after "*." for wildcards */
  bool wildcard; /* "*.x": strict subdomains of x, never x itself */
  bool any; /* "*": every name (addresses are still checked) */
  bool is_addr; /* an IP or a CIDR */
  int family; /* AF_INET or AF_INET6 for addresses */
  uint8_t addr[16]; /* network byte order */
  int prefix; /* CIDR bits */
  uint16_t port; /* 0 = any port */
} sb_hostrule;

typedef struct sb_hostlist {
  sb_hostrule *v;
  size_t n;
} sb_hostlist;

/* A credential the proxy adds on the way out (secrets): the header it sets
 * on requests to hosts the rule matches. The value lives on the host side
 * only (never in a command's environment, files or memory). */
typedef struct sb_secret {
  sb_hostrule rule;
  char *header, *value; /* NUL-terminated */
  size_t hlen, vlen;
} sb_secret;

typedef struct sb_netpolicy {
  sb_hostlist allow, deny;
  sb_secret *secrets;
  size_t nsecrets;
} sb_netpolicy;

/* Parses one entry; false with a message in why. */
bool sb_hostrule_parse(const char *s, size_t len, sb_hostrule *out, char *why, size_t whylen);
bool sb_hostlist_add(const sb_mem *m, sb_hostlist *l, const sb_hostrule *r);
/* Keep a secret (copies header and value); false on out-of-memory. */
bool sb_netpolicy_add_secret(const sb_mem *m, sb_netpolicy *p, const sb_hostrule *r, const char *header, size_t hlen,
                             const char *value, size_t vlen);
/* Frees the lists; secret values are wiped first. */
void sb_netpolicy_free(const sb_mem *m, sb_netpolicy *p);
/* The secret for requests to host:port, or NULL (the first that matches). */
const sb_secret *sb_net_secret_for(const sb_netpolicy *p, const char *host, uint16_t port);

/* Before resolving: may `host` (a name or an IP literal) on `port` be
 * contacted at all? Deny wins; then an allow entry must match. */
bool sb_net_host_allowed(const sb_netpolicy *p, const char *host, uint16_t port, char *why, size_t whylen);

/* After resolving: may this address be connected to for `host`? Denied
 * addresses never; private, loopback, link-local and other special ranges
 * only when an allow entry names the address (an IP or CIDR rule). */
bool sb_net_addr_allowed(const sb_netpolicy *p, const struct sockaddr *sa, uint16_t port, char *why, size_t whylen);

/* The address as text ("10.0.0.1", "::1"). */
const char *sb_net_addr_str(const struct sockaddr *sa, char *buf, size_t len);

#endif
