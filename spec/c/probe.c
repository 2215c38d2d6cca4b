/* Test helper, run inside sandboxes (copied into the root):
 *   probe tcp-listen <portfile> <seconds>   listen on 127.0.0.1, print accepted count
 *   probe udp-listen <portfile> <seconds>   print datagrams received
 *   probe tcp-connect <port>                exit 0 if connected, else print the error
 *   probe udp-send <port>                   send a datagram, print the result
 *   probe hog <MB>                          allocate and touch memory
 *   probe forks <n>                         try n sleeping children, print how many
 *   probe kill <pid>                        kill(pid, SIGKILL), print the result
 *   probe fds -                             print the open descriptors (no /proc needed) */
#include <fcntl.h>
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int bound(int type, const char *portfile) {
  int s = socket(AF_INET, type, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &len)) {
    perror("bind");
    exit(1);
  }
  FILE *f = fopen(portfile, "w");
  fprintf(f, "%d\n", ntohs(a.sin_port));
  fclose(f);
  return s;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const char *m = argv[1];
  if (!strcmp(m, "tcp-listen") || !strcmp(m, "udp-listen")) {
    int udp = m[0] == 'u';
    int s = bound(udp ? SOCK_DGRAM : SOCK_STREAM, argv[2]);
    if (!udp) listen(s, 16);
    int n = 0;
    time_t end = time(NULL) + atoi(argv[3]);
    while (time(NULL) < end) {
      struct pollfd p = {s, POLLIN, 0};
      if (poll(&p, 1, 100) == 1) {
        char b[64];
        if (udp) recv(s, b, sizeof b, 0);
        else close(accept(s, NULL, NULL));
        n++;
        printf("got %d\n", n);
        fflush(stdout);
      }
    }
    return 0;
  }
  if (!strcmp(m, "tcp-connect") || !strcmp(m, "udp-send")) {
    int udp = m[0] == 'u';
    int s = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
    if (s < 0) { printf("socket: %s\n", strerror(errno)); return 1; }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2])),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int r = udp ? (int)sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a)
                : connect(s, (struct sockaddr *)&a, sizeof a);
    printf("%s: %s\n", m, r < 0 ? strerror(errno) : "ok");
    return r < 0;
  }
  if (!strcmp(m, "hog")) {
    size_t mb = (size_t)atol(argv[2]);
    for (size_t i = 0; i < mb; i++) {
      char *p = malloc(1 << 20);
      if (!p) { printf("malloc failed at %zu MB\n", i); return 3; }
      memset(p, 1, 1 << 20);
    }
    printf("allocated %zu MB\n", mb);
    return 0;
  }
  if (!strcmp(m, "forks")) {
    int n = atoi(argv[2]), ok = 0;
    for (int i = 0; i < n; i++) {
      pid_t p = fork();
      if (p == 0) { sleep(3); _exit(0); }
      if (p < 0) break;
      ok++;
    }
    printf("forked %d of %d\n", ok, n);
    fflush(stdout);
    kill(0, SIGKILL); /* take the children along */
    return 0;
  }
  if (!strcmp(m, "fds")) {
    for (int fd = 0; fd < 4096; fd++)
      if (fcntl(fd, F_GETFD) >= 0) printf("%d\n", fd);
    return 0;
  }
  if (!strcmp(m, "kill")) {
    int r = kill(atoi(argv[2]), SIGKILL);
    printf("kill: %s\n", r < 0 ? strerror(errno) : "ok");
    return r < 0;
  }
  return 2;
}
