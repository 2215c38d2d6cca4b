/* libFuzzer: what a sandboxed command controls on the network side — the
 * request heads the proxy and the exposed-port gate parse, and host names
 * the policy checks. Invariants: parsed fields hold no CR, LF or NUL; a
 * rewritten head keeps no header the gate must strip (the token can never
 * reach the command); "*.x" never admits x; deny always wins. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/hosts.h"
#include "net/head.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)

static void *plain(void *ud, void *p, size_t o, size_t n) {
  (void)ud;
  (void)o;
  if (!n) {
    free(p);
    return NULL;
  }
  return realloc(p, n);
}

static bool clean(const char *s) { return !strpbrk(s, "\r\n"); }

static void heads(const char *d, size_t n) {
  char method[32], target[8192], v[512];
  if (!sb_http_head_valid(d, n)) return; /* refused with 400 before any owner sees it */
  CHECK(!memchr(d, 0, n));
  if (sb_http_request_line(d, n, method, sizeof method, target, sizeof target)) {
    CHECK(method[0] && target[0] && clean(method) && clean(target));
    CHECK(!strchr(method, ' ') && !strchr(target, ' '));
  }
  if (sb_http_header(d, n, "X-Sandbox-Token", v, sizeof v)) CHECK(clean(v));
  static const char *const drop[] = {"X-Sandbox-Token", "Authorization", NULL};
  char out[20000];
  size_t m = sb_http_rewrite(d, n, "GET / HTTP/1.1", drop, "Connection: close\r\n", out, sizeof out);
  /* with no new request line the original one is kept, byte for byte */
  static char same[20000];
  size_t k = sb_http_rewrite(d, n, NULL, drop, NULL, same, sizeof same);
  if (k) {
    size_t l1 = (size_t)((const char *)memmem(d, n, "\r\n", 2) - d);
    CHECK(k >= l1 + 2 && memcmp(same, d, l1 + 2) == 0);
  }
  if (!m) return;
  CHECK(m >= 4 && memcmp(out + m - 4, "\r\n\r\n", 4) == 0);
  /* every header line of the result: none of the dropped names */
  const char *p = memchr(out, '\n', m) + 1, *end = out + m - 2;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) break;
    CHECK(eol[-1] == '\r');
    CHECK(strncasecmp(p, "X-Sandbox-Token:", 16) != 0 && strncasecmp(p, "Authorization:", 14) != 0);
    p = eol + 1;
  }
}

static void hosts(const char *d, size_t n) {
  sb_mem m = {plain, NULL};
  sb_netpolicy pol;
  memset(&pol, 0, sizeof pol);
  char why[300];
  sb_hostrule r;
  static const char *const allow[] = {"*.example.com", "example.org", "10.0.0.0/8", "[::1]:8080"};
  for (size_t i = 0; i < 4; i++) {
    CHECK(sb_hostrule_parse(allow[i], strlen(allow[i]), &r, why, sizeof why));
    CHECK(sb_hostlist_add(&m, &pol.allow, &r));
  }
  CHECK(sb_hostrule_parse("bad.example.com", 15, &r, why, sizeof why));
  CHECK(sb_hostlist_add(&m, &pol.deny, &r));
  if (sb_hostrule_parse(d, n, &r, why, sizeof why)) CHECK(sb_hostlist_add(&m, &pol.allow, &r));
  char host[300];
  if (n < sizeof host) {
    memcpy(host, d, n);
    host[n] = '\0';
    bool ok = sb_net_host_allowed(&pol, host, 443, why, sizeof why);
    if (strcasecmp(host, "bad.example.com") == 0 || strcasecmp(host, "bad.example.com.") == 0) CHECK(!ok);
  }
  CHECK(!sb_net_host_allowed(&pol, "bad.example.com", 443, why, sizeof why));
  sb_netpolicy_free(&m, &pol);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 16384) return 0;
  heads((const char *)data, size);
  hosts((const char *)data, size);
  return 0;
}
