/* The mount view kept (confine/view.c builds it): in the init, for the
 * sandbox's life. The host asks (confine/ns.c's control socket, from confine/rules.c)
 * to mask a path a deny rule matches (a directory: an empty read-only
 * tmpfs, mode 0; anything else: /dev/null read-only and nodev, so opening
 * it is EACCES), to pin a directory (a mount of itself: it cannot be moved,
 * renamed or removed, so a masked path below cannot be carried out from
 * under its rule), and, with allow rules, to show a path through the
 * tree's skeleton (a read-only tmpfs holding only the directories leading
 * to allowed paths, with the allowed ones bound from the real tree). Paths
 * are opened beneath the tree one component at a time, no link followed,
 * and mounts go onto /proc/self/fd/N: a path swapped meanwhile is refused,
 * never followed. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine/view_impl.h"

CHILD static const char *proc_path(char out[64], int fd) {
  static const char pre[] = "/proc/self/fd/";
  size_t n = 0;
  for (; pre[n]; n++) out[n] = pre[n];
  char digits[16];
  int k = 0;
  unsigned v = (unsigned)fd;
  do digits[k++] = (char)('0' + v % 10);
  while ((v /= 10) && k < 15);
  while (k) out[n++] = digits[--k];
  out[n] = '\0';
  return out;
}

/* path beneath dirfd, one component at a time, no link followed anywhere
 * (the host names real paths): an O_PATH fd, or -1 with errno. With
 * `parent`, the fd of its parent directory and *name its last component. */
CHILD static int open_beneath(init_arg *a, int dirfd, const char *path, bool parent, const char **name) {
  char *buf = a->d;
  size_t n = sb_view_slen(path);
  if (n >= sizeof a->d) return errno = ENAMETOOLONG, -1;
  for (size_t i = 0; i <= n; i++) buf[i] = path[i];
  int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  char *p = buf;
  while (cur >= 0 && *p) {
    char *end = p;
    while (*end && *end != '/') end++;
    bool last = *end == '\0';
    if (last && parent) {
      *name = path + (p - buf);
      return cur;
    }
    *end = '\0';
    if ((p[0] == '.' && (p[1] == '\0' || (p[1] == '.' && p[2] == '\0'))) || p[0] == '\0') {
      close(cur);
      return errno = EINVAL, -1;
    }
    int next = openat(cur, p, O_PATH | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY));
    int err = errno;
    close(cur);
    errno = err;
    cur = next;
    p = last ? end : end + 1;
  }
  if (parent && cur >= 0) { /* the tree itself has no parent here */
    close(cur);
    return errno = EINVAL, -1;
  }
  return cur;
}

/* Make the mount at fd (a mount's root, just made) read-only or not, never
 * set-id or devices. */
CHILD static int restrict_fd(init_arg *a, int fd, bool ro, bool nodev, bool noexec) {
  struct sb_mount_attr at = {.attr_set = sb_view_attrs(ro, nodev, noexec)};
  if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &at, sizeof at) == 0) return 0;
  if (errno != ENOSYS) return -1;
  return mount(NULL, proc_path(a->proc_fd, fd), NULL, sb_view_ms_flags(ro, nodev, noexec), NULL);
}

/* What goes over a path: an empty tmpfs no one may list, /dev/null, the
 * directory itself, or a bind of another tree's path. */
enum { OVER_EMPTY, OVER_NULL, OVER_SELF, OVER_SRC };

/* Mount over path in tree t as `how` says, then restrict the new mount. */
CHILD static int mount_over(init_arg *a, int t, const char *path, int how, int src_fd, bool ro, bool noexec) {
  int fd = open_beneath(a, a->tree_fd[t], path, false, NULL);
  if (fd < 0) return errno;
  struct stat st;
  int r = fstat(fd, &st);
  if (r == 0 && S_ISLNK(st.st_mode)) r = -1, errno = ELOOP; /* never onto a link */
  else if (r == 0 && (how == OVER_EMPTY || how == OVER_SELF) && !S_ISDIR(st.st_mode)) r = -1, errno = ENOTDIR;
  else if (r == 0 && how == OVER_NULL && S_ISDIR(st.st_mode)) r = -1, errno = EISDIR;
  if (r == 0) {
    const char *target = proc_path(a->proc_fd, fd);
    if (how == OVER_EMPTY)
      r = mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,nr_inodes=1,mode=000");
    else
      r = mount(how == OVER_NULL       ? "/dev/null"
                    : how == OVER_SELF ? target
                                       : proc_path(a->proc_src, src_fd),
                target, NULL, MS_BIND | MS_REC, NULL);
  }
  int err = r == 0 ? 0 : errno;
  close(fd);
  if (err) return err;
  /* the new mount is on top now: open it by its path again to restrict it */
  fd = open_beneath(a, a->tree_fd[t], path, false, NULL);
  if (fd < 0) return errno;
  r = restrict_fd(a, fd, ro, true, noexec);
  err = r == 0 ? 0 : errno;
  close(fd);
  return err;
}

/* A place in tree t's skeleton: a directory, an empty file to bind a file
 * over, or a link with the real one's text. */
CHILD static int skel_make(init_arg *a, int t, const char *path, int kind, const char *target) {
  if (a->skel_fd[t] < 0) return EINVAL;
  const char *name = NULL;
  int dir = open_beneath(a, a->skel_fd[t], path, true, &name);
  if (dir < 0) return errno;
  int r;
  if (kind == S_IFDIR) {
    r = mkdirat(dir, name, 0755);
  } else if (kind == S_IFLNK) { /* a link changed on the host: the copy follows */
    r = symlinkat(target, dir, name);
    if (r != 0 && errno == EEXIST && unlinkat(dir, name, 0) == 0) r = symlinkat(target, dir, name);
  } else {
    r = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (r >= 0) r = close(r);
  }
  int err = r == 0 || errno == EEXIST ? 0 : errno;
  close(dir);
  return err;
}

CHILD static bool tree_ro(const init_arg *a, int t) { return t > 0 || a->root_ro; }

CHILD int sb_view_request(init_arg *a, const sb_ns_msg *m, int *fd_out) {
  int t = m->tree;
  *fd_out = -1;
  if (m->op == SB_NS_CLONE || m->op == SB_NS_UPPER) { /* handed over once */
    int *fd = m->op == SB_NS_CLONE ? &a->clone_fd : &a->upper_fd;
    if (*fd < 0) return m->op == SB_NS_CLONE ? ENOSYS : ENOENT;
    *fd_out = *fd;
    *fd = -1;
    return 0;
  }
  if (t < 0 || t > a->nread_roots || a->tree_fd[t] < 0) return EINVAL;
  switch (m->op) {
  case SB_NS_MASK: { /* a directory: an empty tmpfs no one may list; else /dev/null, no device */
    int err = mount_over(a, t, m->path, OVER_EMPTY, -1, true, true);
    return err == ENOTDIR ? mount_over(a, t, m->path, OVER_NULL, -1, true, true) : err;
  }
  case SB_NS_PIN: /* a directory as a mount of itself: it cannot be moved or removed */
    return mount_over(a, t, m->path, OVER_SELF, -1, tree_ro(a, t), false);
  case SB_NS_DIR: return skel_make(a, t, m->path, S_IFDIR, NULL);
  case SB_NS_LINK: return skel_make(a, t, m->path, S_IFLNK, m->target);
  case SB_NS_SHOW: {
    if (a->real_fd[t] < 0) return EINVAL;
    int src = open_beneath(a, a->real_fd[t], m->path, false, NULL);
    if (src < 0) return errno;
    struct stat st;
    int err = fstat(src, &st) == 0 ? 0 : errno;
    if (!err && S_ISLNK(st.st_mode)) err = ELOOP;
    if (!err && m->path[0]) err = skel_make(a, t, m->path, S_ISDIR(st.st_mode) ? S_IFDIR : S_IFREG, NULL);
    if (!err) err = mount_over(a, t, m->path, OVER_SRC, src, tree_ro(a, t), false);
    close(src);
    return err;
  }
  default: return EINVAL;
  }
}
