#include "net/hosts.h"
#include "plat/bytes.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool fail(char *why, size_t n, const char *msg, const char *s, size_t len) {
  snprintf(why, n, "%s: \"%.*s\"", msg, (int)(len > 200 ? 200 : len), s);
  return false;
}

static bool parse_port(const char *s, size_t len, uint16_t *port) {
  if (len == 0 || len > 5) return false;
  unsigned v = 0;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)s[i])) return false;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  if (v == 0 || v > 65535) return false;
  *port = (uint16_t)v;
  return true;
}

/* A name as DNS allows it (letters, digits, '-', '_', dots between labels). */
static bool valid_name(const char *s, size_t len) {
  if (len == 0 || len > 253 || s[0] == '.' || s[len - 1] == '.') return false;
  size_t label = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
    } else if (isalnum(c) || c == '-' || c == '_') {
      if (++label > 63) return false;
    } else {
      return false;
    }
  }
  return true;
}

static bool parse_addr(const char *s, size_t len, sb_hostrule *r) {
  char buf[64];
  if (len >= sizeof buf) return false;
  memcpy(buf, s, len);
  buf[len] = '\0';
  int bits = -1;
  char *slash = strchr(buf, '/');
  if (slash) {
    *slash = '\0';
    char *end;
    long b = strtol(slash + 1, &end, 10);
    if (*end || slash[1] == '\0' || b < 0) return false;
    bits = (int)b;
  }
  if (inet_pton(AF_INET, buf, r->addr) == 1) {
    r->family = AF_INET;
    r->prefix = bits < 0 ? 32 : bits;
    return r->prefix <= 32;
  }
  if (inet_pton(AF_INET6, buf, r->addr) == 1) {
    r->family = AF_INET6;
    r->prefix = bits < 0 ? 128 : bits;
    return r->prefix <= 128;
  }
  return false;
}

bool sb_hostrule_parse(const char *s, size_t len, sb_hostrule *r, char *why, size_t n) {
  memset(r, 0, sizeof *r);
  const char *host = s;
  size_t hlen = len;
  if (len && s[0] == '[') { /* [v6]:port */
    const char *close = memchr(s, ']', len);
    if (!close) return fail(why, n, "unbalanced '[' in host entry", s, len);
    host = s + 1;
    hlen = (size_t)(close - host);
    size_t rest = len - (size_t)(close - s) - 1;
    if (rest && (close[1] != ':' || !parse_port(close + 2, rest - 1, &r->port)))
      return fail(why, n, "bad port in host entry", s, len);
    if (!parse_addr(host, hlen, r) || r->family != AF_INET6)
      return fail(why, n, "bad IPv6 address in host entry", s, len);
    r->is_addr = true;
    return true;
  }
  const char *colon = memchr(s, ':', len);
  if (colon && memchr(colon + 1, ':', len - (size_t)(colon - s) - 1)) colon = NULL; /* bare v6 */
  if (colon) {
    hlen = (size_t)(colon - s);
    if (!parse_port(colon + 1, len - hlen - 1, &r->port)) return fail(why, n, "bad port in host entry", s, len);
  }
  if (parse_addr(host, hlen, r)) {
    r->is_addr = true;
    return true;
  }
  if (hlen == 1 && host[0] == '*') {
    r->any = true;
    return true;
  }
  if (hlen > 2 && host[0] == '*' && host[1] == '.') {
    r->wildcard = true;
    host += 2;
    hlen -= 2;
  }
  if (!valid_name(host, hlen) || memchr(host, '*', hlen))
    return fail(why, n, "not a host name, IP address or CIDR", s, len);
  for (size_t i = 0; i < hlen; i++) r->name[i] = (char)tolower((unsigned char)host[i]);
  r->name[hlen] = '\0';
  return true;
}

bool sb_hostlist_add(const sb_mem *m, sb_hostlist *l, const sb_hostrule *r) {
  sb_hostrule *v = sb_realloc(m, l->v, l->n * sizeof *v, (l->n + 1) * sizeof *v);
  if (!v) return false;
  l->v = v;
  l->v[l->n++] = *r;
  return true;
}

bool sb_netpolicy_add_secret(const sb_mem *m, sb_netpolicy *p, const sb_hostrule *r, const char *header, size_t hlen,
                             const char *value, size_t vlen) {
  sb_secret *v = sb_realloc(m, p->secrets, p->nsecrets * sizeof *v, (p->nsecrets + 1) * sizeof *v);
  if (!v) return false;
  p->secrets = v;
  sb_secret *s = &v[p->nsecrets];
  s->rule = *r;
  s->hlen = hlen;
  s->vlen = vlen;
  if (!(s->header = sb_memdup(m, header, hlen))) return false;
  if (!(s->value = sb_memdup(m, value, vlen))) {
    sb_free(m, s->header, hlen + 1);
    return false;
  }
  p->nsecrets++;
  return true;
}

void sb_netpolicy_free(const sb_mem *m, sb_netpolicy *p) {
  sb_free(m, p->allow.v, p->allow.n * sizeof *p->allow.v);
  sb_free(m, p->deny.v, p->deny.n * sizeof *p->deny.v);
  for (size_t i = 0; i < p->nsecrets; i++) {
    sb_wipe(p->secrets[i].value, p->secrets[i].vlen); /* nothing of it left in freed memory */
    sb_free(m, p->secrets[i].value, p->secrets[i].vlen + 1);
    sb_free(m, p->secrets[i].header, p->secrets[i].hlen + 1);
  }
  sb_free(m, p->secrets, p->nsecrets * sizeof *p->secrets);
  p->allow = p->deny = (sb_hostlist){0};
  p->secrets = NULL;
  p->nsecrets = 0;
}

/* The address of sa in 16 bytes (v4 as itself, v4-mapped v6 unwrapped). */
static int addr_of(const struct sockaddr *sa, uint8_t out[16]) {
  if (sa->sa_family == AF_INET) {
    memcpy(out, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    return AF_INET;
  }
  const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (memcmp(a, mapped, 12) == 0) {
    memcpy(out, a + 12, 4);
    return AF_INET;
  }
  memcpy(out, a, 16);
  return AF_INET6;
}

static bool in_prefix(const uint8_t *a, const uint8_t *net, int bits) {
  int full = bits / 8, rest = bits % 8;
  if (memcmp(a, net, (size_t)full) != 0) return false;
  if (!rest) return true;
  uint8_t mask = (uint8_t)(0xff << (8 - rest));
  return (a[full] & mask) == (net[full] & mask);
}

/* Addresses a sandbox must not reach unless told so by address. */
static bool special(int fam, const uint8_t *a, const char **what) {
  static const struct {
    uint8_t net[4];
    int bits;
    const char *what;
  } v4[] = {{{0, 0, 0, 0}, 8, "a \"this network\" address"},
            {{10, 0, 0, 0}, 8, "a private address"},
            {{100, 64, 0, 0}, 10, "a shared (CGNAT) address"},
            {{127, 0, 0, 0}, 8, "a loopback address"},
            {{169, 254, 0, 0}, 16, "a link-local (cloud metadata) address"},
            {{172, 16, 0, 0}, 12, "a private address"},
            {{192, 0, 0, 0}, 24, "a reserved address"},
            {{192, 168, 0, 0}, 16, "a private address"},
            {{198, 18, 0, 0}, 15, "a benchmarking address"},
            {{224, 0, 0, 0}, 4, "a multicast address"},
            {{240, 0, 0, 0}, 4, "a reserved address"}};
  static const struct {
    uint8_t net[16];
    int bits;
    const char *what;
  } v6[] = {{{0}, 127, "an unspecified or loopback address"},
            {{0xfc}, 7, "a unique-local (private) address"},
            {{0xfe, 0x80}, 10, "a link-local address"},
            {{0xff}, 8, "a multicast address"},
            {{0, 0x64, 0xff, 0x9b}, 96, "a NAT64 address"}};
  if (fam == AF_INET) {
    for (size_t i = 0; i < sizeof v4 / sizeof v4[0]; i++)
      if (in_prefix(a, v4[i].net, v4[i].bits)) return *what = v4[i].what, true;
    return false;
  }
  for (size_t i = 0; i < sizeof v6 / sizeof v6[0]; i++)
    if (in_prefix(a, v6[i].net, v6[i].bits)) return *what = v6[i].what, true;
  return false;
}

/* An address of one of this host's own interfaces (its eth0 address, a
 * bridge's): "*" must not reach the host itself through it, as it must not
 * through loopback. Asked each time (interfaces come and go); when the
 * kernel cannot say, the answer is yes (refused). */
static bool host_own(int fam, const uint8_t *a) {
  struct ifaddrs *ifs;
  if (getifaddrs(&ifs) != 0) return true;
  bool own = false;
  for (struct ifaddrs *i = ifs; i && !own; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
    uint8_t b[16];
    int f = addr_of(i->ifa_addr, b);
    own = f == fam && memcmp(a, b, fam == AF_INET ? 4 : 16) == 0;
  }
  freeifaddrs(ifs);
  return own;
}

static bool port_ok(const sb_hostrule *r, uint16_t port) { return !r->port || r->port == port; }

static bool addr_rule_matches(const sb_hostrule *r, int fam, const uint8_t *a, uint16_t port) {
  return r->is_addr && r->family == fam && in_prefix(a, r->addr, r->prefix) && port_ok(r, port);
}

/* Does a name rule match host (lower-cased)? */
static bool name_rule_matches(const sb_hostrule *r, const char *host, size_t hlen, uint16_t port) {
  if (r->is_addr || !port_ok(r, port)) return false;
  if (r->any) return true;
  size_t nlen = strlen(r->name);
  if (!r->wildcard) return hlen == nlen && memcmp(host, r->name, nlen) == 0;
  return hlen > nlen + 1 && host[hlen - nlen - 1] == '.' && memcmp(host + hlen - nlen, r->name, nlen) == 0;
}

static bool literal(const char *host, uint8_t a[16], int *fam) {
  struct sockaddr_in6 s6;
  memset(&s6, 0, sizeof s6);
  if (inet_pton(AF_INET, host, a) == 1) return *fam = AF_INET, true;
  if (inet_pton(AF_INET6, host, &s6.sin6_addr) == 1) {
    s6.sin6_family = AF_INET6;
    *fam = addr_of((struct sockaddr *)&s6, a);
    return true;
  }
  return false;
}

const sb_secret *sb_net_secret_for(const sb_netpolicy *p, const char *host, uint16_t port) {
  char low[256];
  size_t hlen = strlen(host);
  if (!p->nsecrets || hlen == 0 || hlen >= sizeof low) return NULL;
  for (size_t i = 0; i <= hlen; i++) low[i] = (char)tolower((unsigned char)host[i]);
  while (hlen > 1 && low[hlen - 1] == '.') low[--hlen] = '\0';
  uint8_t a[16];
  int fam;
  bool lit = literal(low, a, &fam);
  for (size_t i = 0; i < p->nsecrets; i++) {
    const sb_hostrule *r = &p->secrets[i].rule;
    if (lit ? addr_rule_matches(r, fam, a, port) : name_rule_matches(r, low, hlen, port)) return &p->secrets[i];
  }
  return NULL;
}

bool sb_net_host_allowed(const sb_netpolicy *p, const char *host, uint16_t port, char *why, size_t n) {
  char low[256];
  size_t hlen = strlen(host);
  if (hlen == 0 || hlen >= sizeof low) {
    snprintf(why, n, "not a valid host name");
    return false;
  }
  for (size_t i = 0; i <= hlen; i++) low[i] = (char)tolower((unsigned char)host[i]);
  while (hlen > 1 && low[hlen - 1] == '.') low[--hlen] = '\0'; /* "x.org." is x.org */
  uint8_t a[16];
  int fam;
  bool lit = literal(low, a, &fam);
  for (size_t i = 0; i < p->deny.n; i++) {
    const sb_hostrule *r = &p->deny.v[i];
    if (lit ? addr_rule_matches(r, fam, a, port) : name_rule_matches(r, low, hlen, port)) {
      snprintf(why, n, "%s:%u is in denied_hosts", host, port);
      return false;
    }
  }
  for (size_t i = 0; i < p->allow.n; i++) {
    const sb_hostrule *r = &p->allow.v[i];
    if (lit ? (addr_rule_matches(r, fam, a, port) || (r->any && port_ok(r, port)))
            : name_rule_matches(r, low, hlen, port))
      return true;
  }
  snprintf(why, n, "%s:%u is not in allowed_hosts", host, port);
  return false;
}

const char *sb_net_addr_str(const struct sockaddr *sa, char *buf, size_t len) {
  uint8_t a[16];
  int fam = addr_of(sa, a);
  if (!inet_ntop(fam, a, buf, (socklen_t)len)) snprintf(buf, len, "?");
  return buf;
}

bool sb_net_addr_allowed(const sb_netpolicy *p, const struct sockaddr *sa, uint16_t port, char *why, size_t n) {
  uint8_t a[16];
  int fam = addr_of(sa, a);
  char txt[64];
  for (size_t i = 0; i < p->deny.n; i++)
    if (addr_rule_matches(&p->deny.v[i], fam, a, port)) {
      snprintf(why, n, "address %s is in denied_hosts", sb_net_addr_str(sa, txt, sizeof txt));
      return false;
    }
  const char *what;
  if (!special(fam, a, &what)) {
    if (!host_own(fam, a)) return true;
    what = "an address of this host";
  }
  for (size_t i = 0; i < p->allow.n; i++)
    if (addr_rule_matches(&p->allow.v[i], fam, a, port)) return true;
  snprintf(why, n, "%s is %s, refused unless allowed_hosts lists that address", sb_net_addr_str(sa, txt, sizeof txt),
           what);
  return false;
}
