/* A sandbox's own certificate authority, for the proxy's TLS interception
 * of hosts that have a secret (issue 33): generated at construction
 * (OpenSSL, EC P-256), its private key only in the host process. Commands
 * trust its certificate (the bundle file); the proxy presents leaf
 * certificates it issues per host and re-encrypts to the real host with
 * full verification against the host's trust store. */
#ifndef SB_NET_TLSCA_H
#define SB_NET_TLSCA_H

#include <stdbool.h>
#include <stddef.h>

#include "net/hosts.h"

typedef struct sb_tlsca sb_tlsca;
typedef struct ssl_st SSL;

/* A new authority: its key and certificate, a server context for the side
 * facing commands and a client context for upstream (the default trust
 * store, plus `upstream_ca`, a PEM file, when not NULL). The certificate's
 * name constraints permit only the hosts of `hosts` (the secrets' rules),
 * so even a leaked key could not vouch for any other host to a command.
 * NULL with `why`. */
sb_tlsca *sb_tlsca_new(const char *upstream_ca, const sb_hostrule *hosts, size_t nhosts, char *why, size_t whylen);
void sb_tlsca_free(sb_tlsca *ca);
/* Write the bundle commands trust: the host's default bundle, then ours.
 * 0 or an errno. */
int sb_tlsca_write_bundle(const sb_tlsca *ca, const char *path);

/* Service thread only (the leaf cache is not locked). */
/* A server-side connection presenting a leaf for `host` (a name or an IP
 * literal), HTTP/1.1 only; NULL with why. */
SSL *sb_tlsca_accept(sb_tlsca *ca, const char *host, char *why, size_t whylen);
/* A client-side connection to `host`: SNI (names), the name or address
 * verified, HTTP/1.1 only; NULL with why. */
SSL *sb_tlsca_connect(sb_tlsca *ca, const char *host, char *why, size_t whylen);
/* Why a connection's handshake failed, in words (the verification result
 * when that is the cause). */
void sb_tlsca_error(SSL *s, int ret, char *why, size_t whylen);

#endif
