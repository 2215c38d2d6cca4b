#include "fs/resolver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/path.h"
#include "plat/fd.h"
#include "plat/resolve.h"

#define DEPTH_MAX 1024 /* directory fds the fallback may hold */

static int sys_openat2(int dirfd, const char *path, int flags, mode_t mode, bool follow) {
  return sb_openat2(dirfd, path, flags, mode, follow, false);
}

bool sb_openat2_available(void) {
  /* A real call, not a version check: seccomp filters answer EPERM/ENOSYS. */
  int fd = sys_openat2(AT_FDCWD, ".", SB_O_PATH, 0, false);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  return false;
}

int sb_resolver_init(sb_resolver *r, int rootfd, const char *want) {
  r->rootfd = rootfd;
  const char *env = getenv("SANDBOX_RESOLVER");
  if (!want || strcmp(want, "auto") == 0) want = env && *env ? env : "auto";
  bool avail = sb_openat2_available();
  if (strcmp(want, "fallback") == 0) r->kind = SB_RESOLVE_FALLBACK;
  else if (strcmp(want, "openat2") == 0) {
    if (!avail) return -ENOSYS;
    r->kind = SB_RESOLVE_OPENAT2;
  } else if (strcmp(want, "auto") == 0) r->kind = avail ? SB_RESOLVE_OPENAT2 : SB_RESOLVE_FALLBACK;
  else return -EINVAL;
  return 0;
}

const char *sb_resolver_name(const sb_resolver *r) { return r->kind == SB_RESOLVE_OPENAT2 ? "openat2" : "fallback"; }

/* Splice the link `name` in cur (the component ending at buf[pos]) into
 * the rest of the path: buf becomes target + rest. 0, or -errno (-ENOTDIR:
 * not a link after all; -EXDEV: absolute, so it leaves the root even when
 * it points back in; -ELOOP: past the hop budget, or a procfs magic link). */
static int splice_link(int cur, const char *name, char saved, char *buf, size_t *pos, size_t *end, int *hops) {
  char target[SB_PATH_MAX + 1];
  ssize_t n = readlinkat(cur, name, target, sizeof target);
  buf[*pos] = saved; /* name ended there */
  if (n < 0) return errno == EINVAL ? -ENOTDIR : -errno;
  if (++*hops > SB_HOPS_MAX || sb_on_procfs(cur)) return -ELOOP;
  if (n == 0) return -ENOENT;
  if ((size_t)n >= sizeof target) return -ENAMETOOLONG;
  if (target[0] == '/') return -EXDEV;
  size_t restlen = *end - *pos; /* starts with '/' when anything follows */
  if ((size_t)n + restlen > SB_WORK_MAX) return -ENAMETOOLONG;
  memmove(buf + n, buf + *pos, restlen);
  memcpy(buf, target, (size_t)n);
  *end = (size_t)n + restlen;
  buf[*end] = '\0';
  *pos = 0;
  return 0;
}

/* The userspace resolver: a walk over held SB_O_PATH directory fds. With
 * follow_final a final symlink is followed too (while it stays inside);
 * a component a link's target ends with "/" must be a directory, and is
 * followed, as the kernel does. */
static int walk(const sb_resolver *r, const char *rel, size_t len, int flags, mode_t mode, bool follow_final) {
  char buf[SB_WORK_MAX + 1];
  int stack[DEPTH_MAX];
  int sp = 0, cur = r->rootfd, hops = 0, ret;
  size_t pos = 0, end = len;
  memcpy(buf, rel, len);
  buf[end] = '\0';

  for (;;) {
    size_t clen, b = sb_path_next(buf, &pos, end, &clen);
    if (clen == 0) { /* nothing left: the object is cur itself */
      ret = openat(cur, ".", flags | O_CLOEXEC, mode);
      if (ret < 0) ret = -errno;
      break;
    }
    if (sb_path_is_dot(buf + b, clen)) continue;
    if (sb_path_is_dotdot(buf + b, clen)) {
      if (sp == 0) { /* would climb above the root */
        ret = -EXDEV;
        break;
      }
      if (cur != r->rootfd) close(cur);
      cur = stack[--sp];
      continue;
    }
    char saved = buf[pos];
    buf[pos] = '\0';
    const char *name = buf + b;
    if (!sb_path_more_after(buf, pos + (saved ? 1 : 0), end)) { /* the final component */
      bool slash = saved == '/'; /* "name/": a directory, followed */
      int fl = flags | (slash ? O_DIRECTORY : 0);
      ret = openat(cur, name, fl | O_NOFOLLOW | O_CLOEXEC, mode);
      if (!follow_final && !slash) {
        if (ret < 0) ret = -errno;
        break;
      }
      /* O_NOFOLLOW: a link answers ELOOP, or with SB_O_PATH is opened itself
       * (ENOTDIR with O_DIRECTORY); only a link is spliced */
      bool link = false;
      if (ret >= 0 && SB_OPENS_LINK(fl)) {
        struct stat st;
        link = fstat(ret, &st) == 0 && S_ISLNK(st.st_mode);
        if (link) close(ret);
      } else if (ret < 0 && (errno == ELOOP || errno == ENOTDIR)) {
        int err = errno;
        char t;
        link = readlinkat(cur, name, &t, 1) >= 0;
        if (!link) errno = err;
      }
      if (!link) {
        if (ret < 0) ret = -errno;
        break;
      }
      if ((ret = splice_link(cur, name, saved, buf, &pos, &end, &hops)) != 0) break;
      continue;
    }
    int fd = openat(cur, name, SB_O_DIR | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      buf[pos] = saved;
      if (sp == DEPTH_MAX) {
        close(fd);
        ret = -ENAMETOOLONG;
        break;
      }
      stack[sp++] = cur;
      cur = fd;
      continue;
    }
    if (errno != ENOTDIR) { /* ENOENT, EACCES, ... */
      ret = -errno;
      break;
    }
    /* Not a directory: a symlink to splice, or a real ENOTDIR. */
    if ((ret = splice_link(cur, name, saved, buf, &pos, &end, &hops)) != 0) break;
  }
  if (cur != r->rootfd) close(cur);
  while (sp > 0)
    if (stack[--sp] != r->rootfd) close(stack[sp]);
  return ret;
}

static int resolve(const sb_resolver *r, const char *rel, size_t len, int flags, mode_t mode, bool follow_final) {
  if (len > SB_PATH_MAX) return -ENAMETOOLONG;
  if (r->kind == SB_RESOLVE_FALLBACK) return walk(r, rel, len, flags, mode, follow_final);
  char tmp[SB_PATH_MAX + 1];
  const char *path = rel;
  if (len == 0) {
    path = ".";
  } else if (rel[len] != '\0') {
    memcpy(tmp, rel, len);
    tmp[len] = '\0';
    path = tmp;
  }
  int fd = sys_openat2(r->rootfd, path, flags, mode, follow_final);
  /* openat2 refuses ".." with EAGAIN while any rename runs anywhere on the
   * system; under a storm the retries can run out. The walk gives the same
   * answer without that limit (the fuzzer and the race specs check both).
   * An ELOOP goes to the walk too: a chain of exactly 40 links, which
   * resolves, once came back ELOOP from openat2 on a loaded machine (CI);
   * the walk's budget of 40 hops is exact, and a real loop or a final link
   * not followed is ELOOP there as well. */
  if (fd == -EAGAIN || fd == -ELOOP) fd = walk(r, rel, len, flags, mode, follow_final);
  return fd;
}

int sb_resolve_nolinks(const sb_resolver *r, int rootfd, const char *rel, size_t len, int flags) {
  if (r->kind != SB_RESOLVE_OPENAT2) return -ENOSYS;
  char tmp[SB_PATH_MAX + 1];
  if (len > SB_PATH_MAX) return -ENAMETOOLONG;
  memcpy(tmp, rel, len);
  tmp[len] = '\0';
  return sb_openat2(rootfd, len ? tmp : ".", flags, 0, false, true);
}

int sb_resolve(const sb_resolver *r, const char *rel, size_t len, int flags, mode_t mode) {
  return resolve(r, rel, len, flags, mode, false);
}

int sb_resolve_follow(const sb_resolver *r, const char *rel, size_t len, int flags) {
  return resolve(r, rel, len, flags, 0, true);
}

int sb_resolve_dir(const sb_resolver *r, const char *rel, size_t len) {
  return resolve(r, rel, len, SB_O_DIR, 0, true);
}

long sb_resolve_relpath(const sb_resolver *r, int fd, char *out, size_t cap) {
  char full[SB_PATH_MAX * 2 + 2], root[SB_PATH_MAX * 2 + 2];
  long n = sb_fd_path_of(fd, full, sizeof full), m = sb_fd_path_of(r->rootfd, root, sizeof root);
  if (n < 0) return n;
  if (m < 0) return m;
  const char *rel;
  if (m == 1 && root[0] == '/') rel = full + 1;
  else if (n == m && memcmp(full, root, (size_t)m) == 0) rel = full + n;
  else if (n > m && full[m] == '/' && memcmp(full, root, (size_t)m) == 0) rel = full + m + 1;
  else return -EXDEV;
  size_t len = strlen(rel);
  if (len + 1 > cap) return -ENAMETOOLONG;
  memcpy(out, rel, len + 1);
  return (long)len;
}
