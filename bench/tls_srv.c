/* The HTTPS server of bench/secrets_ops.lua: OpenSSL, a thread per
 * connection, HTTP/1.1 keep-alive. GET /s answers "ok"; GET /big answers
 * 64 MiB. Prints its port. Usage: tls_srv CERT KEY */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ssl.h>

#define BIG (64u << 20)

static SSL_CTX *ctx;
static char *big;

static int write_all(SSL *s, const char *p, size_t n) {
  while (n) {
    int w = SSL_write(s, p, n > (1u << 20) ? 1 << 20 : (int)n);
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void *serve(void *arg) {
  int fd = (int)(intptr_t)arg;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  SSL *s = SSL_new(ctx);
  SSL_set_fd(s, fd);
  char buf[16384];
  size_t have = 0;
  if (SSL_accept(s) == 1) {
    for (;;) {
      char *end = have >= 4 ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
      if (!end) {
        if (have == sizeof buf) break;
        int n = SSL_read(s, buf + have, (int)(sizeof buf - have));
        if (n <= 0) break;
        have += (size_t)n;
        continue;
      }
      size_t used = (size_t)(end - buf) + 4;
      int is_big = strncmp(buf, "GET /big ", 9) == 0;
      char head[128];
      int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n", is_big ? BIG : 2u);
      if (write_all(s, head, (size_t)hl) != 0 || write_all(s, is_big ? big : "ok", is_big ? BIG : 2) != 0) break;
      memmove(buf, buf + used, have - used);
      have -= used;
    }
  }
  SSL_free(s);
  close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, argv[1]) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, argv[2], SSL_FILETYPE_PEM) != 1)
    return 1;
  big = calloc(1, BIG);
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (!big || l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 64) != 0 ||
      getsockname(l, (struct sockaddr *)&a, &al) != 0)
    return 1;
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  for (;;) {
    int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    pthread_t t;
    if (pthread_create(&t, NULL, serve, (void *)(intptr_t)c) == 0) pthread_detach(t);
    else close(c);
  }
}
