#include "fs/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEPTH_MAX 256

/* Give the directory parent/name back its owner's rwx. AT_SYMLINK_NOFOLLOW:
 * a link swapped in meanwhile is never followed (the C library refuses a
 * link, or changes the link itself). */
static void own_dir(int parent, const char *name) {
  struct stat st;
  if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    (void)!fchmodat(parent, name, (st.st_mode & 07777) | 0700, AT_SYMLINK_NOFOLLOW); /* the removal says what failed */
}

/* force: the tree is the sandbox's own (its temporary state, the commands'
 * private /tmp), so a directory a command made unreadable or unwritable is
 * made its owner's again when that is what stops the removal (never needed
 * with CAP_DAC_OVERRIDE); without it, as `rm -r`, an empty unreadable
 * directory still goes (rmdir needs no look inside). */
static int empty_at(int parent, const char *name, int depth, bool force, uint64_t *freed);

/* unlinkat in dirfd, which is ours to chmod when own. */
static int unlink_in(int dirfd, const char *name, int flags, bool own) {
  if (unlinkat(dirfd, name, flags) == 0) return 0;
  struct stat st;
  if (errno != EACCES || !own) return -1;
  if (fstat(dirfd, &st) != 0 || fchmod(dirfd, (st.st_mode & 07777) | 0700) != 0) {
    errno = EACCES; /* what stopped the removal */
    return -1;
  }
  return unlinkat(dirfd, name, flags);
}

static int remove_dir_at(int parent, const char *name, int depth, bool force, uint64_t *freed) {
  int err = empty_at(parent, name, depth, force, freed);
  if (err && err != EACCES) return err;
  /* after EACCES: it may have been empty */
  if (unlink_in(parent, name, AT_REMOVEDIR, force && depth > 0) == 0 || errno == ENOENT) return 0;
  return err ? err : errno;
}

static int empty_at(int parent, const char *name, int depth, bool force, uint64_t *freed) {
  if (depth > DEPTH_MAX) return ELOOP;
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES && force) {
    own_dir(parent, name);
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) return errno == ENOENT ? 0 : errno;
  int err = 0;
  /* re-scan until empty: deleting while iterating may skip entries */
  for (int pass = 0; pass < 64 && !err; pass++) {
    int lfd = dup(fd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
      err = errno;
      if (lfd >= 0) close(lfd);
      break;
    }
    rewinddir(d);
    bool any = false;
    struct dirent *de;
    while (!err && (de = readdir(d)) != NULL) {
      const char *nm = de->d_name;
      if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0'))) continue;
      any = true;
      struct stat st;
      if (fstatat(fd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        err = remove_dir_at(fd, nm, depth + 1, force, freed);
      } else if (unlink_in(fd, nm, 0, force) == 0) {
        if (S_ISREG(st.st_mode)) *freed += (uint64_t)st.st_size;
      } else if (errno != ENOENT) {
        err = errno;
      }
    }
    closedir(d);
    if (!any) break;
  }
  close(fd);
  return err;
}

int sb_tree_empty(int parent, const char *name, uint64_t *freed) { return empty_at(parent, name, 0, false, freed); }

int sb_tree_remove(int parent, const char *name, uint64_t *freed) {
  return remove_dir_at(parent, name, 0, false, freed);
}

int sb_tree_remove_own(int parent, const char *name, uint64_t *freed) {
  return remove_dir_at(parent, name, 0, true, freed);
}

/* ---- copying ------------------------------------------------------------ */

int sb_tree_copy_file(int sparent, const char *sname, int dparent, const char *dname, mode_t mode) {
  int in = openat(sparent, sname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) return errno;
  int out = openat(dparent, dname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
  if (out < 0) {
    int err = errno;
    close(in);
    return err;
  }
  int err = 0;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0) err = errno;
      break;
    }
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(out, buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        err = errno;
        break;
      }
      off += w;
    }
    if (err) break;
  }
  if (fchmod(out, mode & 07777) != 0 && !err) err = errno; /* the umask took bits */
  close(in);
  close(out);
  return err;
}

static int copy_at(int sparent, const char *sname, int dparent, const char *dname, int depth) {
  if (depth > DEPTH_MAX) return ELOOP;
  struct stat st;
  if (fstatat(sparent, sname, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  int s = openat(sparent, sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (s < 0) return errno;
  int err = mkdirat(dparent, dname, st.st_mode & 07777) == 0 ? 0 : errno;
  int d = err ? -1 : openat(dparent, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (!err && d < 0) err = errno;
  int lfd = err ? -1 : dup(s);
  DIR *dir = lfd >= 0 ? fdopendir(lfd) : NULL;
  if (!err && !dir) err = errno;
  struct dirent *de;
  while (!err && dir && (de = readdir(dir)) != NULL) {
    const char *nm = de->d_name;
    if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0'))) continue;
    struct stat es;
    if (fstatat(s, nm, &es, AT_SYMLINK_NOFOLLOW) != 0) {
      err = errno;
    } else if (S_ISDIR(es.st_mode)) {
      err = copy_at(s, nm, d, nm, depth + 1);
    } else if (S_ISREG(es.st_mode)) {
      err = sb_tree_copy_file(s, nm, d, nm, es.st_mode);
    } else if (S_ISLNK(es.st_mode)) {
      char target[4097];
      ssize_t n = readlinkat(s, nm, target, sizeof target - 1);
      if (n < 0) err = errno;
      else {
        target[n] = '\0';
        if (symlinkat(target, d, nm) != 0) err = errno;
      }
    } /* sockets, fifos, devices: not copied (a tree of the sandbox has none worth keeping) */
  }
  if (dir) closedir(dir);
  else if (lfd >= 0) close(lfd);
  if (d >= 0) close(d);
  close(s);
  return err;
}

int sb_tree_copy(int sparent, const char *sname, int dparent, const char *dname) {
  return copy_at(sparent, sname, dparent, dname, 0);
}
