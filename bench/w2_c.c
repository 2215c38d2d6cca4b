/* Baseline for the real-file workload (SPEC §10, perf.md W2): 10 000 files of
 * 100 bytes in 100 directories, done by a C loop, either with every path
 * through openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS) from a root fd
 * ("openat2") or with plain absolute paths ("plain"); "openat2-atomic"
 * creates files with the sandbox's atomic protocol instead of O_TRUNC.
 *   w2_c <openat2|openat2-atomic|plain> <root-dir> <iterations>
 * Prints "RESULT <impl> <phase> <ops> <seconds> <iteration>". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int rootfd;
static int use_o2, atomic;
static char root[4096];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int o2(const char *p, int flags, mode_t mode) {
  if (!use_o2) {
    char full[8192];
    snprintf(full, sizeof full, "%s/%s", root, p);
    return open(full, flags | O_CLOEXEC, mode);
  }
  struct open_how h;
  memset(&h, 0, sizeof h);
  h.flags = flags | O_CLOEXEC;
  if (flags & O_CREAT) h.mode = mode;
  h.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  return (int)syscall(SYS_openat2, rootfd, p, &h, sizeof h);
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  use_o2 = strncmp(argv[1], "openat2", 7) == 0;
  atomic = strcmp(argv[1], "openat2-atomic") == 0;
  snprintf(root, sizeof root, "%s", argv[2]);
  int iters = atoi(argv[3]);
  const char *impl = atomic ? "c-openat2-atomic" : use_o2 ? "c-openat2" : "c-plain";
  char mk[4200];
  snprintf(mk, sizeof mk, "mkdir -p %s", root);
  if (system(mk) != 0) die("mkdir root");
  rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) die("root");
  char payload[100], buf[4096], p[256];
  memset(payload, 'x', sizeof payload);
  for (int it = 1; it <= iters; it++) {
    double t = now();
    for (int a = 0; a < 10; a++) {
      snprintf(p, sizeof p, "a%d", a);
      if (mkdirat(rootfd, p, 0755) && errno != EEXIST) die("mkdir");
      for (int b = 0; b < 10; b++) {
        snprintf(p, sizeof p, "a%d/b%d", a, b);
        int pfd = o2(p, O_PATH | O_DIRECTORY, 0); /* resolve the parent, as a safe mkdir must */
        if (pfd >= 0) close(pfd);
        snprintf(p, sizeof p, "a%d", a);
        int afd = o2(p, O_PATH | O_DIRECTORY, 0);
        char name[16];
        snprintf(name, sizeof name, "b%d", b);
        if (mkdirat(afd, name, 0755) && errno != EEXIST) die("mkdir2");
        close(afd);
        for (int f = 0; f < 100; f++) {
          snprintf(p, sizeof p, "a%d/b%d/f%02d.txt", a, b, f);
          if (atomic) { /* the same protocol as the sandbox: temporary file, fsync, rename */
            snprintf(p, sizeof p, "a%d/b%d", a, b);
            int dfd = o2(p, O_PATH | O_DIRECTORY, 0);
            char tmp[32], fname[16];
            snprintf(tmp, sizeof tmp, ".tmp-%d", f);
            snprintf(fname, sizeof fname, "f%02d.txt", f);
            int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd < 0 || write(fd, payload, sizeof payload) != sizeof payload) die("create");
            if (fsync(fd) || fchmod(fd, 0644) || renameat2(dfd, tmp, dfd, fname, RENAME_NOREPLACE)) die("rename");
            close(fd);
            close(dfd);
            continue;
          }
          int fd = o2(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
          if (fd < 0 || write(fd, payload, sizeof payload) != sizeof payload) die("create");
          close(fd);
        }
      }
    }
    printf("RESULT %s create 10000 %.6f %d\n", impl, now() - t, it);
    t = now();
    for (int a = 0; a < 10; a++)
      for (int b = 0; b < 10; b++)
        for (int f = 0; f < 100; f++) {
          snprintf(p, sizeof p, "a%d/b%d/f%02d.txt", a, b, f);
          int fd = o2(p, O_RDONLY, 0);
          if (fd < 0) die("read");
          while (read(fd, buf, sizeof buf) > 0) {}
          close(fd);
        }
    printf("RESULT %s read 10000 %.6f %d\n", impl, now() - t, it);
    t = now();
    for (int a = 0; a < 10; a++)
      for (int b = 0; b < 10; b++)
        for (int f = 0; f < 100; f++) {
          struct stat st;
          snprintf(p, sizeof p, "a%d/b%d/f%02d.txt", a, b, f);
          int fd = o2(p, O_PATH | O_NOFOLLOW, 0);
          if (fd < 0 || fstat(fd, &st) != 0) die("stat");
          close(fd);
        }
    printf("RESULT %s stat 10000 %.6f %d\n", impl, now() - t, it);
    t = now();
    int lists = 0;
    for (int a = -1; a < 10; a++)
      for (int b = -1; b < (a < 0 ? 0 : 10); b++) {
        if (a < 0) snprintf(p, sizeof p, ".");
        else if (b < 0) snprintf(p, sizeof p, "a%d", a);
        else snprintf(p, sizeof p, "a%d/b%d", a, b);
        int fd = o2(p, O_RDONLY | O_DIRECTORY, 0);
        DIR *d = fdopendir(fd);
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
          struct stat st;
          fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW);
        }
        closedir(d);
        lists++;
      }
    printf("RESULT %s list %d %.6f %d\n", impl, lists, now() - t, it);
    t = now();
    for (int a = 0; a < 10; a++) {
      for (int b = 0; b < 10; b++) {
        for (int f = 0; f < 100; f++) { /* per call, as an API must: resolve the parent */
          snprintf(p, sizeof p, "a%d/b%d", a, b);
          int dfd = o2(p, O_PATH | O_DIRECTORY, 0);
          char name[16];
          snprintf(name, sizeof name, "f%02d.txt", f);
          if (unlinkat(dfd, name, 0)) die("unlink");
          close(dfd);
        }
        snprintf(p, sizeof p, "a%d", a);
        int afd = o2(p, O_PATH | O_DIRECTORY, 0);
        char name[16];
        snprintf(name, sizeof name, "b%d", b);
        unlinkat(afd, name, AT_REMOVEDIR);
        close(afd);
      }
      snprintf(p, sizeof p, "a%d", a);
      unlinkat(rootfd, p, AT_REMOVEDIR);
    }
    printf("RESULT %s delete 10000 %.6f %d\n", impl, now() - t, it);
  }
  return 0;
}
