#include "confine/cgroup.h"

#include "base/file.h"

#include <dirent.h>
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

static bool has_word(const char *list, const char *word, char sep) {
  size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
    if ((p == list || p[-1] == sep) && (p[n] == sep || p[n] == '\0' || p[n] == '\n' || p[n] == ' ')) return true;
  return false;
}

/* The mount point of the v2 hierarchy (ctrl NULL) or of the v1 hierarchy
 * holding ctrl, and this process's path in it. */
static bool hierarchy_dir(const char *ctrl, char *out, size_t cap) {
  char mnt[512] = "", line[2048], rel[1024] = "";
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f) return false;
  while (fgets(line, sizeof line, f)) {
    /* "... <mount point> <opts> - <fstype> <source> <super options>" */
    char *dash = strstr(line, " - ");
    if (!dash) continue;
    char fstype[32], super[512] = "";
    if (sscanf(dash + 3, "%31s %*s %511s", fstype, super) < 1) continue;
    bool match = ctrl ? strcmp(fstype, "cgroup") == 0 && has_word(super, ctrl, ',') : strcmp(fstype, "cgroup2") == 0;
    if (!match) continue;
    if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) break;
  }
  fclose(f);
  if (!mnt[0]) return false;
  f = fopen("/proc/self/cgroup", "re");
  if (!f) return false;
  while (fgets(line, sizeof line, f)) {
    /* "<id>:<controllers>:<path>"; v2 is "0::<path>" */
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = '\0';
    bool match = ctrl ? has_word(c1 + 1, ctrl, ',') : c1[1] == '\0';
    if (match) {
      memcpy(rel, c2 + 1, strlen(c2 + 1) + 1);
      rel[strcspn(rel, "\n")] = '\0';
      break;
    }
  }
  fclose(f);
  if (strcmp(rel, "/") == 0) rel[0] = '\0';
  return snprintf(out, cap, "%s%s", mnt, rel) < (int)cap;
}

/* This process's PID namespace, as a number for the sandbox's directory
 * name: a pid in a name means something only in the namespace it came from. */
static unsigned long pidns_ino(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/* Remove what hosts killed before their dispose left in parent: directories
 * named by a pid of our PID namespace that no longer runs, with whatever
 * idle leaves they hold. rmdir refuses a cgroup that still has processes or
 * children, so a leaf whose command outlived its host stays (and its
 * directory with it): nothing live is ever removed. */
static void sweep_stale(int parentfd, unsigned long ns) {
  int fd = openat(parentfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    unsigned long ino, addr;
    int pid, end = 0;
    if (sscanf(de->d_name, "sandbox-%lu-%d-%lx%n", &ino, &pid, &addr, &end) != 3 || de->d_name[end] != '\0' ||
        ino != ns || pid <= 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
      continue;
    int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
    if (sd) {
      struct dirent *le;
      while ((le = readdir(sd)) != NULL)
        if (le->d_type == DT_DIR && le->d_name[0] != '.') unlinkat(dirfd(sd), le->d_name, AT_REMOVEDIR);
      closedir(sd);
    } else if (sub >= 0) {
      close(sub);
    }
    unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
  }
  closedir(d);
}

static bool base_open(sb_cgroup_base *b, const char *ctrl, const void *tag) {
  memset(b, 0, sizeof *b);
  b->dirfd = b->parentfd = -1;
  b->v1 = ctrl != NULL;
  char dir[1400];
  if (getenv("SANDBOX_NO_CGROUP") || !hierarchy_dir(ctrl, dir, sizeof dir)) return false;
  b->parentfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (b->parentfd < 0) return false;
  unsigned long ns = pidns_ino();
  sweep_stale(b->parentfd, ns);
  snprintf(b->name, sizeof b->name, "sandbox-%lu-%d-%lx", ns, (int)getpid(), (unsigned long)(uintptr_t)tag);
  if (mkdirat(b->parentfd, b->name, 0755) != 0 && errno != EEXIST) goto fail;
  b->dirfd = openat(b->parentfd, b->name, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (b->dirfd < 0) goto fail;
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

bool sb_cgroup_base_open(sb_cgroup_base *b, const void *tag) { return base_open(b, NULL, tag); }

bool sb_cgroup_base_open_v1(sb_cgroup_base *b, const char *ctrl, const void *tag) { return base_open(b, ctrl, tag); }

bool sb_cgroup_enable(sb_cgroup_base *b, const char *ctrl) {
  if (b->dirfd < 0 || b->v1) return false;
  char buf[512], cmd[40];
  if (sb_read_small(b->dirfd, "cgroup.controllers", buf, sizeof buf) <= 0 || !has_word(buf, ctrl, ' ')) return false;
  snprintf(cmd, sizeof cmd, "+%s", ctrl);
  return sb_write_small(b->dirfd, "cgroup.subtree_control", cmd) == 0;
}

bool sb_cgroup_setting_add(sb_cgroup_base *b, const char *file, const char *value) {
  if (b->nset == SB_CGROUP_SETTINGS) return false;
  snprintf(b->set[b->nset].file, sizeof b->set[0].file, "%s", file);
  snprintf(b->set[b->nset].value, sizeof b->set[0].value, "%s", value);
  b->nset++;
  return true;
}

static void leaf_close_fds(sb_cgroup *c) {
  if (c->procs_fd >= 0) close(c->procs_fd);
  if (c->events_fd >= 0) close(c->events_fd);
  if (c->dirfd >= 0) close(c->dirfd);
  c->dirfd = c->procs_fd = c->events_fd = -1;
}

static void leaf_destroy(sb_cgroup_base *b, sb_cgroup *c) {
  leaf_close_fds(c);
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
  c->killed = false;
  if (b->dirfd < 0) return false;
  if (b->npool > 0) {
    *c = b->pool[--b->npool];
    return true;
  }
  snprintf(c->name, sizeof c->name, "cmd-%u", ++b->next_leaf);
  if (mkdirat(b->dirfd, c->name, 0755) != 0 && errno != EEXIST) return false;
  c->dirfd = openat(b->dirfd, c->name, O_PATH | O_DIRECTORY | O_CLOEXEC);
  bool ok = c->dirfd >= 0;
  for (int i = 0; ok && i < b->nset; i++) ok = sb_write_small(c->dirfd, b->set[i].file, b->set[i].value) == 0;
  if (ok) c->procs_fd = openat(c->dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
  if (ok && !b->v1) c->events_fd = openat(c->dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
  if (!ok || c->procs_fd < 0 || (!b->v1 && c->events_fd < 0)) {
    leaf_close_fds(c);
    unlinkat(b->dirfd, c->name, AT_REMOVEDIR);
    return false;
  }
  return true;
}

bool sb_cgroup_signal(sb_cgroup *c, int sig) {
  if (c->dirfd < 0) return false;
  /* A cgroup once killed so kills every child later born in it by clone3's
   * CLONE_INTO_CGROUP (Linux 6.18 at least: the kill count it was born
   * with is its parent's, compared with the leaf's): such a leaf is not
   * reused. */
  if (sig == SIGKILL && c->events_fd >= 0 && sb_write_small(c->dirfd, "cgroup.kill", "1") == 0) {
    c->killed = true;
    return true;
  }
  /* other signals, v1, or no cgroup.kill (Linux < 5.14): every listed pid */
  char buf[8192];
  ssize_t n = sb_read_small(c->dirfd, "cgroup.procs", buf, sizeof buf);
  if (n <= 0) return n == 0;
  for (char *p = buf, *end; *p; p = end) {
    long pid = strtol(p, &end, 10);
    if (end == p) break;
    if (pid > 0) kill((pid_t)pid, sig);
    while (*end == '\n') end++;
  }
  return (size_t)n < sizeof buf - 1; /* a full buffer may have cut the list */
}

bool sb_cgroup_empty(sb_cgroup *c) {
  char buf[256];
  if (c->events_fd >= 0) {
    ssize_t n = pread(c->events_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return true;
    buf[n] = '\0';
    return strstr(buf, "populated 0") != NULL;
  }
  if (c->dirfd < 0) return true;
  return sb_read_small(c->dirfd, "cgroup.procs", buf, sizeof buf) <= 0;
}

uint64_t sb_cgroup_counter(sb_cgroup *c, const char *file, const char *key) {
  char buf[2048];
  if (c->dirfd < 0 || sb_read_small(c->dirfd, file, buf, sizeof buf) <= 0) return 0;
  size_t n = strlen(key);
  for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
    if (strncmp(line, key, n) == 0 && line[n] == ' ') return strtoull(line + n + 1, NULL, 10);
  return 0;
}

void sb_cgroup_leaf_remove(sb_cgroup_base *b, sb_cgroup *c) {
  if (c->dirfd < 0) return;
  bool empty = sb_cgroup_empty(c);
  for (int i = 0; i < 200 && !empty; i++) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    empty = sb_cgroup_empty(c);
  }
  if (b->npool < SB_CGROUP_POOL && empty && !c->killed) b->pool[b->npool++] = *c;
  else leaf_destroy(b, c);
  c->dirfd = c->procs_fd = c->events_fd = -1;
}
