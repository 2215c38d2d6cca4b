/* TLS interception of a CONNECT to a host that has a secret (issue 33):
 * the proxy connects to the host and completes a verified TLS handshake
 * with it first (a failure is the CONNECT's 502, with the reason: never a
 * downgrade), then answers 200 and is the TLS server the command talks
 * to, with a leaf from the sandbox's authority. Each HTTP/1.1 request
 * head on the way up gets the secret's header (replacing the command's);
 * bodies, responses, keep-alive and upgraded streams pass as they are. */
#ifndef SB_NET_INTERCEPT_H
#define SB_NET_INTERCEPT_H

#include "net/hosts.h"
#include "net/relay.h"
#include "net/tlsca.h"

/* Make c intercepted, before it connects: false with why. */
bool sb_intercept_begin(sb_netconn *c, sb_tlsca *ca, const sb_secret *sec, char *why, size_t whylen);

#endif
