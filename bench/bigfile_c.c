/* Baseline for the big-file row (SPEC §10): read a file into a fresh
 * buffer, or write one from memory, N times.
 *   bigfile_c <read|write> <path> <iterations>
 * Prints the median milliseconds of one operation. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 4) return fprintf(stderr, "usage: bigfile_c <read|write> <path> <iterations>\n"), 2;
  int iters = atoi(argv[3]), wr = strcmp(argv[1], "write") == 0;
  if (iters < 1 || iters > 1000) return 2;
  double t[1000];
  struct stat st;
  if (stat(argv[2], &st) != 0) return perror("stat"), 1;
  size_t n = (size_t)st.st_size;
  char *src = wr ? malloc(n) : NULL;
  if (wr && !src) return 1;
  if (wr) memset(src, 'x', n);
  for (int i = 0; i < iters; i++) {
    double t0 = now();
    if (wr) {
      int fd = open(argv[2], O_WRONLY | O_TRUNC | O_CLOEXEC);
      size_t done = 0;
      while (fd >= 0 && done < n) {
        ssize_t w = write(fd, src + done, n - done);
        if (w <= 0) break;
        done += (size_t)w;
      }
      if (fd >= 0) close(fd);
    } else {
      int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
      char *b = malloc(n + 1);
      size_t got = 0;
      while (fd >= 0 && b && got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r <= 0) break;
        got += (size_t)r;
      }
      if (fd >= 0) close(fd);
      free(b);
    }
    t[i] = now() - t0;
  }
  qsort(t, (size_t)iters, sizeof *t, cmp);
  printf("%.3f\n", t[iters / 2] * 1e3);
  free(src);
  return 0;
}
