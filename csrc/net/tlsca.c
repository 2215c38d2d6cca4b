#include "net/tlsca.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define LEAF_CACHE 64 /* hosts whose leaf is kept; the oldest goes first */
#define CA_DAYS 825
#define LEAF_DAYS 397 /* what clients accept for a server certificate */

typedef struct cached {
  char host[256];
  X509 *cert;
} cached;

struct sb_tlsca {
  EVP_PKEY *key; /* the authority's, and (one key) every leaf's */
  X509 *cert;
  char *pem;
  SSL_CTX *server, *client;
  cached cache[LEAF_CACHE];
  size_t ncache, next; /* next: the slot a new host takes when full */
};

static void ssl_why(char *why, size_t len, const char *what) {
  unsigned long e = ERR_get_error();
  char buf[256] = "unknown error";
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  snprintf(why, len, "%s: %s", what, buf);
}

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
  if (!ext) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

static bool is_ip(const char *host) {
  unsigned char addr[16];
  return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

/* "critical,permitted;DNS:x.org,permitted;IP:10.0.0.0/255.0.0.0,...": the
 * only names the authority may vouch for (a wildcard rule: subdomains). */
static char *constraints(const sb_hostrule *r, size_t n) {
  size_t cap = 16 + n * 300, o = 0;
  char *s = malloc(cap);
  if (!s) return NULL;
  o += (size_t)snprintf(s, cap, "critical");
  for (size_t i = 0; i < n; i++) {
    if (r[i].any) { /* every name: no constraint can say it */
      free(s);
      return NULL;
    }
    if (r[i].is_addr) {
      unsigned char mask[16] = {0};
      int len = r[i].family == AF_INET ? 4 : 16;
      for (int b = 0; b < r[i].prefix && b < len * 8; b++) mask[b / 8] |= (unsigned char)(0x80 >> (b % 8));
      char a[INET6_ADDRSTRLEN], m[INET6_ADDRSTRLEN];
      if (!inet_ntop(r[i].family, r[i].addr, a, sizeof a) || !inet_ntop(r[i].family, mask, m, sizeof m)) continue;
      o += (size_t)snprintf(s + o, cap - o, ",permitted;IP:%s/%s", a, m);
    } else {
      o += (size_t)snprintf(s + o, cap - o, ",permitted;DNS:%s%s", r[i].wildcard ? "." : "", r[i].name);
    }
  }
  return s;
}

/* A certificate for `cn` with key `key`, signed by (issuer, ikey); issuer
 * NULL: self-signed. Random 128-bit serial, valid from an hour ago. */
static X509 *make_cert(const char *cn, EVP_PKEY *key, X509 *issuer, EVP_PKEY *ikey, long days, const char *nc) {
  X509 *x = X509_new();
  BIGNUM *bn = BN_new();
  bool ok = x && bn && X509_set_version(x, 2) == 1 && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
      BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL && X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
      X509_gmtime_adj(X509_getm_notAfter(x), days * 86400L);
  X509_NAME *name = ok ? X509_get_subject_name(x) : NULL;
  ok = ok && X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"sandbox proxy", -1, -1, 0) &&
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 (const unsigned char *)(issuer && is_ip(cn) ? "sandbox proxy leaf" : cn), -1, -1, 0) &&
      X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name) == 1 && X509_set_pubkey(x, key) == 1;
  X509 *iss = issuer ? issuer : x;
  if (ok && !issuer)
    ok = add_ext(x, iss, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
        add_ext(x, iss, NID_key_usage, "critical,keyCertSign,cRLSign") &&
        add_ext(x, iss, NID_subject_key_identifier, "hash") && (!nc || add_ext(x, iss, NID_name_constraints, nc));
  if (ok && issuer) {
    char san[300];
    snprintf(san, sizeof san, "%s:%s", is_ip(cn) ? "IP" : "DNS", cn);
    ok = add_ext(x, iss, NID_basic_constraints, "critical,CA:FALSE") &&
        add_ext(x, iss, NID_key_usage, "critical,digitalSignature") &&
        add_ext(x, iss, NID_ext_key_usage, "serverAuth") && add_ext(x, iss, NID_subject_alt_name, san) &&
        add_ext(x, iss, NID_subject_key_identifier, "hash") &&
        add_ext(x, iss, NID_authority_key_identifier, "keyid:always");
  }
  ok = ok && X509_sign(x, ikey ? ikey : key, EVP_sha256()) > 0;
  BN_free(bn);
  if (!ok) {
    X509_free(x);
    return NULL;
  }
  return x;
}

static int alpn_http11(SSL *s, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned inlen, void *arg) {
  (void)s;
  (void)arg;
  /* only HTTP/1.1 is read and rewritten: h2 is never agreed to */
  for (unsigned i = 0; i < inlen;) {
    unsigned n = in[i];
    if (i + 1 + n > inlen) break;
    if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
      *out = in + i + 1;
      *outlen = (unsigned char)n;
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + n;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

sb_tlsca *sb_tlsca_new(const char *upstream_ca, const sb_hostrule *hosts, size_t nhosts, char *why, size_t whylen) {
  sb_tlsca *ca = calloc(1, sizeof *ca);
  if (!ca) {
    snprintf(why, whylen, "out of memory");
    return NULL;
  }
  unsigned char id[6];
  char cn[64];
  if (RAND_bytes(id, sizeof id) != 1) {
    ssl_why(why, whylen, "no random bytes for the proxy's authority");
    goto fail;
  }
  snprintf(cn, sizeof cn, "sandbox proxy CA %02x%02x%02x%02x%02x%02x", id[0], id[1], id[2], id[3], id[4], id[5]);
  char *nc = constraints(hosts, nhosts);
  if (!(ca->key = EVP_EC_gen("P-256")) || !(ca->cert = make_cert(cn, ca->key, NULL, NULL, CA_DAYS, nc))) {
    free(nc);
    ssl_why(why, whylen, "cannot make the proxy's certificate authority");
    goto fail;
  }
  free(nc);
  BIO *mem = BIO_new(BIO_s_mem());
  char *p = NULL;
  long n = mem && PEM_write_bio_X509(mem, ca->cert) == 1 ? BIO_get_mem_data(mem, &p) : 0;
  if (n > 0 && (ca->pem = malloc((size_t)n + 1))) {
    memcpy(ca->pem, p, (size_t)n);
    ca->pem[n] = '\0';
  }
  BIO_free(mem);
  if (!ca->pem) {
    ssl_why(why, whylen, "cannot encode the proxy's certificate");
    goto fail;
  }
  ca->server = SSL_CTX_new(TLS_server_method());
  ca->client = SSL_CTX_new(TLS_client_method());
  if (!ca->server || !ca->client || SSL_CTX_set_min_proto_version(ca->server, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_min_proto_version(ca->client, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_default_verify_paths(ca->client) != 1 ||
      SSL_CTX_set_alpn_protos(ca->client, (const unsigned char *)"\x08http/1.1", 9) != 0) {
    ssl_why(why, whylen, "cannot set up TLS");
    goto fail;
  }
  if (upstream_ca && SSL_CTX_load_verify_locations(ca->client, upstream_ca, NULL) != 1) {
    ssl_why(why, whylen, "upstream_ca: cannot load it");
    goto fail;
  }
  SSL_CTX_set_verify(ca->client, SSL_VERIFY_PEER, NULL);
  SSL_CTX_set_alpn_select_cb(ca->server, alpn_http11, NULL);
  SSL_CTX_set_session_cache_mode(ca->server, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ca->server, 0);
  return ca;
fail:
  sb_tlsca_free(ca);
  return NULL;
}

void sb_tlsca_free(sb_tlsca *ca) {
  if (!ca) return;
  for (size_t i = 0; i < ca->ncache; i++) X509_free(ca->cache[i].cert);
  SSL_CTX_free(ca->server);
  SSL_CTX_free(ca->client);
  X509_free(ca->cert);
  EVP_PKEY_free(ca->key);
  free(ca->pem);
  free(ca);
}

static bool write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

int sb_tlsca_write_bundle(const sb_tlsca *ca, const char *path) {
  int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (out < 0) return errno;
  int err = 0;
  /* the host's own bundle first (as OpenSSL finds it), so commands keep
   * trusting every other host exactly as before */
  const char *host = getenv(X509_get_default_cert_file_env());
  int in = open(host && *host ? host : X509_get_default_cert_file(), O_RDONLY | O_CLOEXEC);
  if (in >= 0) {
    char buf[16384];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0 && !write_all(out, buf, (size_t)n)) {
        err = errno ? errno : EIO;
        break;
      }
    close(in);
  }
  if (!err && (!write_all(out, "\n", 1) || !write_all(out, ca->pem, strlen(ca->pem)))) err = errno ? errno : EIO;
  if (close(out) != 0 && !err) err = errno;
  if (err) unlink(path);
  return err;
}

static X509 *leaf_for(sb_tlsca *ca, const char *host) {
  for (size_t i = 0; i < ca->ncache; i++)
    if (strcmp(ca->cache[i].host, host) == 0) return ca->cache[i].cert;
  X509 *x = make_cert(host, ca->key, ca->cert, ca->key, LEAF_DAYS, NULL);
  if (!x) return NULL;
  size_t slot;
  if (ca->ncache < LEAF_CACHE) {
    slot = ca->ncache++;
  } else { /* a connection using the old leaf holds its own reference */
    slot = ca->next;
    ca->next = (ca->next + 1) % LEAF_CACHE;
    X509_free(ca->cache[slot].cert);
  }
  snprintf(ca->cache[slot].host, sizeof ca->cache[slot].host, "%s", host);
  ca->cache[slot].cert = x;
  return x;
}

SSL *sb_tlsca_accept(sb_tlsca *ca, const char *host, char *why, size_t whylen) {
  X509 *cert = leaf_for(ca, host);
  SSL *s = cert ? SSL_new(ca->server) : NULL;
  if (!s || SSL_use_certificate(s, cert) != 1 || SSL_use_PrivateKey(s, ca->key) != 1) {
    ssl_why(why, whylen, "cannot present a certificate");
    SSL_free(s);
    return NULL;
  }
  SSL_set_accept_state(s);
  return s;
}

SSL *sb_tlsca_connect(sb_tlsca *ca, const char *host, char *why, size_t whylen) {
  SSL *s = SSL_new(ca->client);
  bool ok = s &&
      (is_ip(host) ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), host) == 1
                   : SSL_set_tlsext_host_name(s, host) == 1 && SSL_set1_host(s, host) == 1);
  if (!ok) {
    ssl_why(why, whylen, "cannot set up TLS upstream");
    SSL_free(s);
    return NULL;
  }
  SSL_set_connect_state(s);
  return s;
}

void sb_tlsca_error(SSL *s, int ret, char *why, size_t whylen) {
  long v = SSL_get_verify_result(s);
  if (v != X509_V_OK) {
    snprintf(why, whylen, "certificate verification failed: %s", X509_verify_cert_error_string(v));
    ERR_clear_error();
    return;
  }
  int e = SSL_get_error(s, ret);
  if (e == SSL_ERROR_SSL) ssl_why(why, whylen, "TLS handshake failed");
  else snprintf(why, whylen, "TLS handshake failed (%s)", e == SSL_ERROR_SYSCALL ? "connection lost" : "error");
  ERR_clear_error();
}
