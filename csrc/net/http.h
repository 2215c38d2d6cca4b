/* http_get: one GET with libcurl under the sandbox's host policy. Every hop
 * (the URL, then each redirect) is checked by name, resolved here, checked
 * by address and pinned to that address (CURLOPT_RESOLVE), so curl never
 * looks the name up again and a redirect to a refused host, or a name that
 * resolves to a private address, is stopped before any connection. Only
 * http and https; no proxy from the environment; size and time bounded. */
#ifndef SB_NET_HTTP_H
#define SB_NET_HTTP_H

#include <stdbool.h>

#include "net/hosts.h"
#include "base/err.h"
#include "base/mem.h"

typedef struct sb_http_opts {
  double timeout; /* seconds for the whole call, redirects included */
  size_t max_bytes; /* body bytes kept; the rest is not downloaded */
  int max_redirects;
  const char *user_agent;
} sb_http_opts;

typedef struct sb_http_result {
  long status;
  sb_buf body;
  sb_buf headers; /* the final response's header lines, raw */
  bool truncated; /* the body was longer than max_bytes */
  int redirects;
  char url[2048]; /* the final URL */
  char address[64]; /* the address it was fetched from */
} sb_http_result;

/* 0, or -1 with e set (EACCES refused by policy, EINVAL bad URL, ELOOP too
 * many redirects, EIO network errors and time-outs). r's buffers are
 * allocated from m in both cases; free them with sb_http_result_free. */
int sb_http_get(const sb_mem *m, const sb_netpolicy *pol, const char *url, const sb_http_opts *o, sb_http_result *r,
                sb_err *e);
void sb_http_result_free(const sb_mem *m, sb_http_result *r);

#endif
