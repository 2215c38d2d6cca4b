#include "net/http.h"
#include "base/clock.h"

#include <curl/curl.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

typedef struct sink {
  const sb_mem *m;
  sb_http_result *r;
  size_t max;
} sink;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  sink *s = ud;
  size_t len = size * n, room = s->max - s->r->body.len;
  if (len > room) { /* keep what fits, then stop the transfer */
    if (room && sb_buf_append(s->m, &s->r->body, p, room) != 0) return 0;
    s->r->truncated = true;
    return 0;
  }
  return sb_buf_append(s->m, &s->r->body, p, len) == 0 ? len : 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  sink *s = ud;
  size_t len = size * n;
  if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) s->r->headers.len = 0; /* a new response */
  if (s->r->headers.len + len > 64 * 1024) return 0; /* absurd headers */
  return sb_buf_append(s->m, &s->r->headers, p, len) == 0 ? len : 0;
}

/* Check the URL's scheme and host, resolve, check the addresses; the
 * CURLOPT_RESOLVE entry pinning the first allowed one. */
static int check_hop(const sb_netpolicy *pol, const char *url, char *pin, size_t pinlen, char *addr_out, size_t addrlen,
                     sb_err *e) {
  CURLU *u = curl_url();
  char *scheme = NULL, *host = NULL, *port = NULL;
  int rc = -1;
  if (!u) {
    sb_fail_oom(e);
    return -1;
  }
  if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
    sb_failf(e, SB_EINVAL, "not a valid absolute URL: %.150s", url);
    goto out;
  }
  if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
    sb_failf(e, SB_EINVAL, "only http and https URLs can be fetched, not %.20s", scheme);
    goto out;
  }
  char name[256];
  size_t hl = strlen(host);
  if (hl >= sizeof name) {
    sb_fail(e, SB_EINVAL, "host name too long");
    goto out;
  }
  if (host[0] == '[') snprintf(name, sizeof name, "%.*s", (int)(hl - 2), host + 1); /* [v6] */
  else snprintf(name, sizeof name, "%s", host);
  uint16_t pn = (uint16_t)atoi(port);
  char why[400];
  if (!sb_net_host_allowed(pol, name, pn, why, sizeof why)) {
    sb_failf(e, SB_EACCES, "%s", why);
    goto out;
  }
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int g = getaddrinfo(name, port, &hints, &res);
  if (g != 0) {
    sb_failf(e, SB_EIO, "cannot resolve %s: %s", name, gai_strerror(g));
    goto out;
  }
  const struct addrinfo *ok = NULL;
  char first[400] = "";
  for (const struct addrinfo *ai = res; ai && !ok; ai = ai->ai_next) {
    if (sb_net_addr_allowed(pol, ai->ai_addr, pn, why, sizeof why)) ok = ai;
    else if (!first[0]) snprintf(first, sizeof first, "%s", why);
  }
  if (!ok) {
    sb_failf(e, SB_EACCES, "%s resolves to %s", name, first);
    freeaddrinfo(res);
    goto out;
  }
  sb_net_addr_str(ok->ai_addr, addr_out, addrlen);
  freeaddrinfo(res);
  /* curl wants the host as in the URL (brackets for v6) and the address
   * with brackets for v6 too */
  snprintf(pin, pinlen, "%s:%s:%s%s%s", host, port, strchr(addr_out, ':') ? "[" : "", addr_out,
           strchr(addr_out, ':') ? "]" : "");
  rc = 0;
out:
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(u);
  return rc;
}

static bool is_redirect(long s) { return s == 301 || s == 302 || s == 303 || s == 307 || s == 308; }

int sb_http_get(const sb_mem *m, const sb_netpolicy *pol, const char *url, const sb_http_opts *o, sb_http_result *r,
                sb_err *e) {
  memset(r, 0, sizeof *r);
  snprintf(r->url, sizeof r->url, "%s", url);
  if (strlen(url) >= sizeof r->url) return sb_fail(e, SB_EINVAL, "URL too long"), -1;
  double deadline = sb_now() + o->timeout;
  sink s = {m, r, o->max_bytes};
  for (;;) {
    char pin[600];
    if (check_hop(pol, r->url, pin, sizeof pin, r->address, sizeof r->address, e) != 0) return -1;
    double left = deadline - sb_now();
    if (left <= 0) return sb_failf(e, SB_EIO, "timed out after %g s", o->timeout), -1;
    CURL *c = curl_easy_init();
    struct curl_slist *resolve = curl_slist_append(NULL, pin);
    if (!c || !resolve) {
      curl_easy_cleanup(c);
      curl_slist_free_all(resolve);
      return sb_fail_oom(e), -1;
    }
    r->body.len = 0;
    r->headers.len = 0;
    r->truncated = false;
    curl_easy_setopt(c, CURLOPT_URL, r->url);
    curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);
    curl_easy_setopt(c, CURLOPT_PROXY, ""); /* never an environment proxy */
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(left * 1000) + 1);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &s);
    curl_easy_setopt(c, CURLOPT_USERAGENT, o->user_agent ? o->user_agent : "lua-sandbox");
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* decoded bytes count against max_bytes */
    CURLcode cc = curl_easy_perform(c);
    char *loc = NULL;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc); /* absolute, resolved by curl */
    char next[sizeof r->url];
    next[0] = '\0';
    if (loc) snprintf(next, sizeof next, "%s", loc);
    curl_easy_cleanup(c);
    curl_slist_free_all(resolve);
    if (cc != CURLE_OK && !(cc == CURLE_WRITE_ERROR && r->truncated)) {
      if (cc == CURLE_OPERATION_TIMEDOUT) return sb_failf(e, SB_EIO, "timed out after %g s", o->timeout), -1;
      return sb_failf(e, SB_EIO, "%s: %s", r->url, curl_easy_strerror(cc)), -1;
    }
    if (!is_redirect(r->status) || !next[0]) return 0;
    if (r->redirects >= o->max_redirects)
      return sb_failf(e, SB_ELOOP, "more than %d redirects (last to %.150s)", o->max_redirects, next), -1;
    r->redirects++;
    snprintf(r->url, sizeof r->url, "%s", next);
  }
}

void sb_http_result_free(const sb_mem *m, sb_http_result *r) {
  sb_buf_free(m, &r->body);
  sb_buf_free(m, &r->headers);
}
