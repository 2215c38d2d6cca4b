#include "fs/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEPTH_MAX 256

static int empty_at(int parent, const char *name, int depth, uint64_t *freed) {
  if (depth > DEPTH_MAX) return ELOOP;
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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
        err = empty_at(fd, nm, depth + 1, freed);
        if (!err && unlinkat(fd, nm, AT_REMOVEDIR) != 0 && errno != ENOENT) err = errno;
      } else if (unlinkat(fd, nm, 0) == 0) {
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

int sb_tree_empty(int parent, const char *name, uint64_t *freed) {
  return empty_at(parent, name, 0, freed);
}

int sb_tree_remove(int parent, const char *name, uint64_t *freed) {
  int err = empty_at(parent, name, 0, freed);
  if (!err && unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT) err = errno;
  return err;
}
