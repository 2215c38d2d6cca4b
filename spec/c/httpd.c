/* A tiny HTTP/1.1 server for the network tests: one process per connection,
 * every request line appended to a log (so a test can assert what did NOT
 * arrive). Prints its port on stdout, then serves until killed.
 *
 *   httpd [--port N] [--bind ADDR] LOGFILE     (no --port: $PORT, else any)
 *   httpd --client PORT       raw client: stdin to 127.0.0.1:PORT, the answer to stdout
 *
 * Routes: /hello, /big?n=BYTES, /redirect?to=URL, /slow?s=SECONDS,
 * /echo (the request head as the body); anything else is 404. Each request
 * line goes to LOG, each whole head to LOG.heads. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static void respond(int fd, int status, const char *extra, const char *body, size_t len) {
  char head[4096];
  int n = snprintf(head, sizeof head, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n", status,
                   len, extra ? extra : "");
  send_all(fd, head, (size_t)n);
  send_all(fd, body, len);
}

static const char *query(const char *target, const char *key, char *out, size_t n) {
  const char *q = strchr(target, '?');
  size_t kl = strlen(key);
  for (const char *p = q; p; p = strchr(p + 1, '&')) {
    if (strncmp(p + 1, key, kl) == 0 && p[1 + kl] == '=') {
      snprintf(out, n, "%.*s", (int)strcspn(p + 2 + kl, "& "), p + 2 + kl);
      return out;
    }
  }
  return NULL;
}

static void serve(int fd, const char *log) {
  char buf[16384];
  size_t len = 0;
  while (len < sizeof buf - 1) {
    ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
    if (r <= 0) return;
    len += (size_t)r;
    buf[len] = '\0';
    if (strstr(buf, "\r\n\r\n")) break;
  }
  int lf = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (lf >= 0) {
    size_t line = strcspn(buf, "\r\n");
    dprintf(lf, "%.*s\n", (int)line, buf);
    close(lf);
  }
  char heads[4200]; /* every head whole, beside the log: what arrived upstream, for the host's eyes only */
  snprintf(heads, sizeof heads, "%s.heads", log);
  int hf = open(heads, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (hf >= 0) {
    char *end = strstr(buf, "\r\n\r\n");
    dprintf(hf, "%.*s\n", end ? (int)(end - buf + 4) : (int)len, buf);
    close(hf);
  }
  char method[16], target[8192], v[8192];
  if (sscanf(buf, "%15s %8191s", method, target) != 2) return;
  if (strncmp(target, "/hello", 6) == 0) {
    respond(fd, 200, "Content-Type: text/plain\r\n", "hello from the test server\n", 27);
  } else if (strncmp(target, "/big", 4) == 0 && query(target, "n", v, sizeof v)) {
    size_t n = strtoul(v, NULL, 10);
    char *body = malloc(n ? n : 1);
    memset(body, 'x', n);
    respond(fd, 200, NULL, body, n);
    free(body);
  } else if (strncmp(target, "/redirect", 9) == 0 && query(target, "to", v, sizeof v)) {
    char extra[8300];
    snprintf(extra, sizeof extra, "Location: %s\r\n", v);
    respond(fd, 302, extra, "", 0);
  } else if (strncmp(target, "/slow", 5) == 0 && query(target, "s", v, sizeof v)) {
    usleep((useconds_t)(atof(v) * 1e6));
    respond(fd, 200, NULL, "slow\n", 5);
  } else if (strncmp(target, "/echo", 5) == 0) {
    respond(fd, 200, NULL, buf, strlen(buf));
  } else {
    respond(fd, 404, NULL, "not found\n", 10);
  }
}

static void on_term(int sig) { /* a quiet end: no "Terminated" from the shell */
  (void)sig;
  _exit(0);
}

/* Bytes exactly as given (a test's malformed request), then the answer. */
static int client(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
  if (connect(s, (struct sockaddr *)&sin, sizeof sin) != 0) {
    perror("connect");
    return 1;
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(0, buf, sizeof buf)) > 0) send_all(s, buf, (size_t)n);
  shutdown(s, SHUT_WR);
  while ((n = read(s, buf, sizeof buf)) > 0) send_all(1, buf, (size_t)n);
  return 0;
}

int main(int argc, char **argv) {
  int port = 0;
  if (argc == 3 && !strcmp(argv[1], "--client")) return client(atoi(argv[2]));
  const char *bind_addr = "127.0.0.1", *log = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--port") && i + 1 < argc) port = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bind") && i + 1 < argc) bind_addr = argv[++i];
    else log = argv[i];
  }
  if (port == 0 && getenv("PORT")) port = atoi(getenv("PORT")); /* an exposed port */
  if (!log) {
    fprintf(stderr, "usage: httpd [--port N] [--bind ADDR] LOGFILE\n");
    return 2;
  }
  signal(SIGTERM, on_term);
  struct sigaction sa = {.sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT};
  sigaction(SIGCHLD, &sa, NULL);
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, bind_addr, &sin.sin_addr);
  socklen_t sl = sizeof sin;
  if (bind(s, (struct sockaddr *)&sin, sizeof sin) != 0 || listen(s, 64) != 0 ||
      getsockname(s, (struct sockaddr *)&sin, &sl) != 0) {
    perror("httpd");
    return 1;
  }
  printf("%d %d\n", ntohs(sin.sin_port), (int)getpid());
  fflush(stdout);
  for (;;) {
    int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    if (fork() == 0) {
      close(s);
      alarm(30); /* never outlive a stuck client for long */
      serve(c, log);
      shutdown(c, SHUT_WR);
      char drain[512];
      while (read(c, drain, sizeof drain) > 0) {}
      _exit(0);
    }
    close(c);
  }
}
