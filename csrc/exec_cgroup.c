#include "exec_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The v2 mount point and this process's path in it. */
static bool v2_dir(char *out, size_t cap) {
  char mnt[256] = "", line[1024], rel[1024] = "";
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f) return false;
  while (fgets(line, sizeof line, f)) {
    /* "... <mount point> <opts> - cgroup2 ..." */
    char *dash = strstr(line, " - cgroup2 ");
    if (!dash) continue;
    char mp[256];
    if (sscanf(line, "%*s %*s %*s %*s %255s", mp) == 1) snprintf(mnt, sizeof mnt, "%s", mp);
    break;
  }
  fclose(f);
  if (!mnt[0]) return false;
  f = fopen("/proc/self/cgroup", "re");
  if (!f) return false;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "0::", 3) == 0) {
      memcpy(rel, line + 3, strlen(line + 3) + 1);
      rel[strcspn(rel, "\n")] = '\0';
    }
  fclose(f);
  if (strcmp(rel, "/") == 0) rel[0] = '\0';
  return snprintf(out, cap, "%s%s", mnt, rel) < (int)cap;
}

bool sb_cgroup_base_open(sb_cgroup_base *b, const void *tag) {
  b->dirfd = b->parentfd = -1;
  char dir[1400];
  if (getenv("SANDBOX_NO_CGROUP") || !v2_dir(dir, sizeof dir)) return false;
  b->parentfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (b->parentfd < 0) return false;
  /* without cgroup.kill (Linux < 5.14) leaves still list every pid */
  snprintf(b->name, sizeof b->name, "sandbox-%d-%lx", (int)getpid(), (unsigned long)(uintptr_t)tag);
  if (mkdirat(b->parentfd, b->name, 0755) != 0 && errno != EEXIST) goto fail;
  b->dirfd = openat(b->parentfd, b->name, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (b->dirfd < 0) goto fail;
  /* a probe leaf: creating one and joining needs write access we may lack */
  if (faccessat(b->dirfd, "cgroup.procs", W_OK, 0) != 0) {
    close(b->dirfd);
    b->dirfd = -1;
    unlinkat(b->parentfd, b->name, AT_REMOVEDIR);
    goto fail;
  }
  snprintf(b->path, sizeof b->path, "%s/%s", dir, b->name);
  return true;
fail:
  close(b->parentfd);
  b->parentfd = -1;
  return false;
}

static void leaf_destroy(sb_cgroup_base *b, sb_cgroup *c) {
  if (c->procs_fd >= 0) close(c->procs_fd);
  if (c->events_fd >= 0) close(c->events_fd);
  c->events_fd = -1;
  if (c->dirfd >= 0) close(c->dirfd);
  c->dirfd = c->procs_fd = -1;
  /* a killed process leaves the cgroup a moment after it dies */
  for (int i = 0; i < 200; i++) {
    if (unlinkat(b->dirfd, c->name, AT_REMOVEDIR) == 0 || errno != EBUSY) return;
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

void sb_cgroup_base_close(sb_cgroup_base *b) {
  while (b->npool > 0) leaf_destroy(b, &b->pool[--b->npool]);
  if (b->dirfd >= 0) {
    close(b->dirfd);
    unlinkat(b->parentfd, b->name, AT_REMOVEDIR);
  }
  if (b->parentfd >= 0) close(b->parentfd);
  b->dirfd = b->parentfd = -1;
}

bool sb_cgroup_leaf_create(sb_cgroup_base *b, sb_cgroup *c) {
  c->dirfd = c->procs_fd = c->events_fd = -1;
  if (b->dirfd < 0) return false;
  if (b->npool > 0) {
    *c = b->pool[--b->npool];
    return true;
  }
  snprintf(c->name, sizeof c->name, "cmd-%u", ++b->next_leaf);
  if (mkdirat(b->dirfd, c->name, 0755) != 0 && errno != EEXIST) return false;
  c->dirfd = openat(b->dirfd, c->name, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (c->dirfd >= 0) c->procs_fd = openat(c->dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
  if (c->dirfd >= 0) c->events_fd = openat(c->dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
  if (c->procs_fd < 0 || c->events_fd < 0) {
    if (c->procs_fd >= 0) close(c->procs_fd);
    if (c->events_fd >= 0) close(c->events_fd);
    c->procs_fd = c->events_fd = -1;
    if (c->dirfd >= 0) close(c->dirfd);
    unlinkat(b->dirfd, c->name, AT_REMOVEDIR);
    c->dirfd = -1;
    return false;
  }
  return true;
}

static int open_in(sb_cgroup *c, const char *file, int flags) {
  return c->dirfd < 0 ? -1 : openat(c->dirfd, file, flags | O_CLOEXEC);
}

void sb_cgroup_signal(sb_cgroup *c, int sig) {
  if (c->dirfd < 0) return;
  if (sig == SIGKILL) {
    int fd = open_in(c, "cgroup.kill", O_WRONLY);
    if (fd >= 0) {
      ssize_t w = write(fd, "1", 1);
      close(fd);
      if (w == 1) return;
    }
  }
  /* other signals (or no cgroup.kill): every listed pid */
  int fd = open_in(c, "cgroup.procs", O_RDONLY);
  if (fd < 0) return;
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  for (char *p = buf, *end; *p; p = end) {
    long pid = strtol(p, &end, 10);
    if (end == p) break;
    if (pid > 0) kill((pid_t)pid, sig);
    while (*end == '\n') end++;
  }
}

bool sb_cgroup_empty(sb_cgroup *c) {
  if (c->events_fd < 0) return true;
  char buf[256];
  ssize_t n = pread(c->events_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return true;
  buf[n] = '\0';
  return strstr(buf, "populated 0") != NULL;
}

void sb_cgroup_leaf_remove(sb_cgroup_base *b, sb_cgroup *c) {
  if (c->dirfd < 0) return;
  bool empty = sb_cgroup_empty(c);
  for (int i = 0; i < 200 && !empty; i++) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    empty = sb_cgroup_empty(c);
  }
  if (b->npool < SB_CGROUP_POOL && empty) b->pool[b->npool++] = *c;
  else leaf_destroy(b, c);
  c->dirfd = c->procs_fd = c->events_fd = -1;
}
