/* Baselines for exec (SPEC §10, perf.md W3).
 *   w3_c spawn <n> [heap-MB]   posix_spawn("/bin/true") + waitpid, n times,
 *                              optionally with a touched heap of heap-MB
 *   w3_c bwrap <n> <dir>       bubblewrap --unshare-all running /bin/true
 *                              with a minimal view (system directories
 *                              read-only, <dir> read-write, own /proc, /dev,
 *                              /tmp), n times: the per-command isolation the
 *                              confined sandbox pays once per sandbox
 *   w3_c pipe <bytes>          read <bytes> from `head -c <bytes> /dev/zero`
 *                              with 64 KiB reads
 * Prints "RESULT <impl> <phase> <ops> <seconds> 1". */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  if (strcmp(argv[1], "spawn") == 0) {
    int n = atoi(argv[2]);
    size_t heap = argc > 3 ? (size_t)atoi(argv[3]) << 20 : 0;
    char *h = heap ? malloc(heap) : NULL;
    if (h) memset(h, 1, heap);
    char *args[] = {"/bin/true", NULL};
    double t = now();
    for (int i = 0; i < n; i++) {
      pid_t pid;
      if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) != 0) return 1;
      int st;
      waitpid(pid, &st, 0);
    }
    printf("RESULT c-posix-spawn%s spawn %d %.6f 1\n", heap ? "-heap" : "", n, now() - t);
    free(h);
  } else if (strcmp(argv[1], "bwrap") == 0 && argc > 3) {
    int n = atoi(argv[2]);
    char *args[] = {"bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                    "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
                    "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
                    "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache", "--proc", "/proc", "--dev", "/dev",
                    "--tmpfs", "/tmp", "--bind", argv[3], argv[3], "--chdir", argv[3], "/bin/true", NULL};
    mkdir(argv[3], 0755);
    double t = now();
    for (int i = 0; i < n; i++) {
      pid_t pid;
      int st;
      if (posix_spawnp(&pid, "bwrap", NULL, NULL, args, environ) != 0) return 1;
      if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bwrap failed (status %d)\n", st);
        return 1;
      }
    }
    printf("RESULT bwrap-unshare-all spawn %d %.6f 1\n", n, now() - t);
  } else {
    long total = atol(argv[2]);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "head -c %ld /dev/zero", total);
    double t = now();
    FILE *p = popen(cmd, "r");
    int fd = fileno(p);
    static char buf[65536];
    long got = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) got += r;
    pclose(p);
    printf("RESULT c-read-loop pipe %ld %.6f 1\n", got, now() - t);
  }
  return 0;
}
