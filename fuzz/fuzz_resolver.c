/* libFuzzer: the container resolver on a scratch tree full of traps.
 * Input: a root-relative path. Both resolvers (openat2 and the fd-stack
 * fallback) must give the same answer — the same errno, or the same inode —
 * and whatever is opened must lie beneath the root. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/resolver.h"
#include "base/path.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)

static int rootfd = -1;
static char root[512];
static sb_resolver o2, fb;
static int have_o2;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  char tmpl[] = "/tmp/sb-fuzz-resolver-XXXXXX";
  if (!mkdtemp(tmpl)) abort();
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && mkdir -p R/a/b/c R/d outside && echo secret > outside/s && echo in > R/f && "
           "cd R && ln -s /etc abs && ln -s ../outside rel && ln -s a/b in && ln -s .. up && "
           "ln -s ../.. a/up2 && ln -s loop loop && ln -s f/ fslash && ln -s b a/lb && "
           "ln -s /proc/self/root proc && ln -s dangling dang && ln -s a/b/c/../../.. back && "
           "ln -s f flink && ln -s in/c/ cslash && ln -s flink fchain && ln -s a/b/. bdot",
           tmpl);
  if (system(cmd) != 0) abort();
  snprintf(root, sizeof root, "%s/R", tmpl);
  rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) abort();
  have_o2 = sb_resolver_init(&o2, rootfd, "openat2") == 0;
  if (sb_resolver_init(&fb, rootfd, "fallback") != 0) abort();
  return 0;
}

static void same_place(int fd1, int fd2) {
  struct stat a, b;
  CHECK(fstat(fd1, &a) == 0 && fstat(fd2, &b) == 0);
  CHECK(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
  char lnk[64], where[4096];
  snprintf(lnk, sizeof lnk, "/proc/self/fd/%d", fd1);
  ssize_t n = readlink(lnk, where, sizeof where - 1);
  CHECK(n > 0);
  where[n] = '\0';
  size_t rl = strlen(root);
  CHECK(strncmp(where, root, rl) == 0 && (where[rl] == '\0' || where[rl] == '/')); /* beneath */
}

/* A kernel quirk the fuzzer found: when ".." follows more than about 20
 * symlink hops in one lookup, openat2 answers ELOOP where the walk (and the
 * kernel itself, with fewer hops) answers EXDEV. Apparently the lookup drops
 * out of RCU mode at the "..", restarts, and counts the links again. Both
 * are refusals; nothing is opened. */
static bool known_quirk(int o2, int fb) { return o2 == -ELOOP && fb == -EXDEV; }

static void compare(int r1, int r2) {
  if (r1 >= 0 && r2 >= 0) same_place(r1, r2);
  else if (r1 != r2 && !known_quirk(r1, r2)) {
    fprintf(stderr, "openat2 gave %d, fallback gave %d\n", r1, r2);
    CHECK(r1 == r2); /* the same errno */
  }
  if (r1 >= 0) close(r1);
  if (r2 >= 0) close(r2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > SB_PATH_MAX) return 0;
  /* what the front door lets through: no NUL, normalised, never lexically above the root */
  static sb_path p;
  sb_err e;
  if (sb_path_parse(&p, (const char *)data, size, "/", 1, &e) != SB_OK) return 0;
  int fb_fd = sb_resolve(&fb, p.buf, p.len, O_PATH | (p.must_dir ? O_DIRECTORY : 0), 0);
  if (fb_fd >= 0) {
    /* the fallback alone must also stay beneath the root */
    int again = sb_resolve(&fb, p.buf, p.len, O_PATH, 0);
    if (again >= 0) {
      same_place(fb_fd, again);
      close(again);
    }
  }
  if (!have_o2) {
    if (fb_fd >= 0) close(fb_fd);
    return 0;
  }
  int o2_fd = sb_resolve(&o2, p.buf, p.len, O_PATH | (p.must_dir ? O_DIRECTORY : 0), 0);
  compare(o2_fd, fb_fd);
  compare(sb_resolve_dir(&o2, p.buf, p.len), sb_resolve_dir(&fb, p.buf, p.len));
  /* reads: the final link followed too, to a file or a directory */
  compare(sb_resolve_follow(&o2, p.buf, p.len, O_PATH), sb_resolve_follow(&fb, p.buf, p.len, O_PATH));
  compare(sb_resolve_follow(&o2, p.buf, p.len, O_RDONLY | O_NONBLOCK | O_NOCTTY),
          sb_resolve_follow(&fb, p.buf, p.len, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  return 0;
}
