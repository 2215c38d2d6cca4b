#include "review/scan.h"
#include "plat/stat.h"
#include "plat/fd.h"
#include "plat/xattr.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCAN_DEPTH_MAX 256
#define SCAN_PATH_MAX 4096

static int type_of(const struct stat *st) {
  if (S_ISREG(st->st_mode)) return SB_SCAN_FILE;
  if (S_ISDIR(st->st_mode)) return SB_SCAN_DIR;
  if (S_ISLNK(st->st_mode)) return SB_SCAN_LINK;
  if (S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0) return SB_SCAN_WHITEOUT;
  return SB_SCAN_OTHER;
}

static bool is_opaque(int dirfd) {
  static const char *const names[] = {"trusted.overlay.opaque", "user.overlay.opaque"};
  for (size_t i = 0; i < 2; i++) {
    char v[4];
    ssize_t n = sb_fgetxattr(dirfd, names[i], v, sizeof v);
    if (n == 1 && v[0] == 'y') return true;
  }
  return false;
}

static void fill(sb_scan_entry *e, const struct stat *st) {
  e->type = type_of(st);
  e->size = (uint64_t)st->st_size;
  e->mtime_sec = (int64_t)SB_ST_MTIM(st).tv_sec;
  e->mtime_nsec = SB_ST_MTIM(st).tv_nsec;
  e->opaque = false;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct scan {
  sb_scan_fn fn;
  void *ud;
  char path[SCAN_PATH_MAX + 1];
} scan;

/* The names of a directory, sorted (malloc'd array of malloc'd strings). */
static int names_of(int dirfd, char ***out, size_t *n) {
  int fd = dup(dirfd);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (!d) {
    int err = errno;
    if (fd >= 0) close(fd);
    return err;
  }
  size_t cap = 16, len = 0;
  char **v = malloc(cap * sizeof *v);
  struct dirent *de;
  int err = v ? 0 : ENOMEM;
  while (!err && (de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (len == cap) {
      char **nv = realloc(v, 2 * cap * sizeof *v);
      if (!nv) {
        err = ENOMEM;
        break;
      }
      v = nv;
      cap *= 2;
    }
    if (!(v[len] = strdup(de->d_name))) err = ENOMEM;
    else len++;
  }
  closedir(d);
  if (err) {
    for (size_t i = 0; i < len; i++) free(v[i]);
    free(v);
    return err;
  }
  qsort(v, len, sizeof *v, cmp_names);
  *out = v;
  *n = len;
  return 0;
}

static int level(scan *s, int dirfd, size_t plen, int depth) {
  if (depth > SCAN_DEPTH_MAX) return 0;
  char **names = NULL;
  size_t n = 0;
  int err = names_of(dirfd, &names, &n);
  if (err) return err;
  int stop = 0;
  for (size_t i = 0; i < n && !stop && !err; i++) {
    size_t nl = strlen(names[i]), len = plen + (plen ? 1 : 0) + nl;
    if (len > SCAN_PATH_MAX) continue;
    if (plen) s->path[plen] = '/';
    memcpy(s->path + len - nl, names[i], nl + 1);
    struct stat st;
    if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) continue; /* gone meanwhile */
    sb_scan_entry e = {.path = s->path, .plen = len};
    fill(&e, &st);
    int sub = -1;
    if (e.type == SB_SCAN_DIR) {
      sub = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) e.opaque = is_opaque(sub);
    }
    stop = s->fn(s->ud, &e);
    if (!stop && sub >= 0) err = level(s, sub, len, depth + 1);
    if (err < 0) stop = 1, err = 0; /* a callback's stop, from below */
    if (sub >= 0) close(sub);
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return stop ? -1 : err;
}

int sb_scan_tree(int dirfd, sb_scan_fn fn, void *ud) {
  scan *s = malloc(sizeof *s);
  if (!s) return ENOMEM;
  s->fn = fn;
  s->ud = ud;
  s->path[0] = '\0';
  int r = level(s, dirfd, 0, 0);
  free(s);
  return r < 0 ? 0 : r;
}

int sb_scan_one(int rootfd, const char *rel, sb_scan_entry *out) {
  int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return errno;
  const char *p = rel;
  char name[256];
  for (;;) {
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n == 0 || n >= sizeof name || (n == 2 && p[0] == '.' && p[1] == '.')) {
      close(fd);
      return EINVAL;
    }
    memcpy(name, p, n);
    name[n] = '\0';
    struct stat st;
    if (!slash) {
      int r = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
      if (r == 0) {
        fill(out, &st);
        out->path = rel;
        out->plen = strlen(rel);
      }
      close(fd);
      return r;
    }
    int sub = openat(fd, name, SB_O_DIR | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    close(fd);
    if (sub < 0) return err == ELOOP || err == ENOTDIR ? ENOENT : err; /* a link or a file on the way: not there */
    fd = sub;
    p = slash + 1;
  }
}
