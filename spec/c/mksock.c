/* Test helper: create a bound AF_UNIX socket file at argv[1] and exit. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(argv[1]) >= sizeof a.sun_path) return 2;
  strcpy(a.sun_path, argv[1]);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    perror("mksock");
    return 1;
  }
  close(fd);
  return 0;
}
