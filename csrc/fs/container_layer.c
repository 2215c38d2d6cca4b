/* The container backend's layers, below both its operations (container.c)
 * and its walks (container_walk.c): opening a path or its parent in one
 * layer, the rules rechecked on what was opened, merging the layers. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/container_impl.h"
#include "fs/resolver.h"
#include "fs/rooted.h"

/* Bytes of buf naming the first k components. */
static size_t prefix_len(const sb_path *p, unsigned k) { return k ? (size_t)p->off[k] - 1 : 0; }

/* The last component as a NUL-terminated name. */
const char *sb_ct_last_name(const sb_path *p, char out[SB_NAME_MAX + 1]) {
  size_t n;
  const char *c = sb_path_comp(p, p->ncomp - 1, &n);
  memcpy(out, c, n);
  out[n] = '\0';
  return out;
}

/* Rules and extensions apply to where a path really leads: a symlink made
 * by a command must not route around them. Check the object's real
 * root-relative path (dirfd + optional name). */
sb_code sb_ct_recheck(sb_fs *fs, const layer *v, int fd, const char *name, sb_access acc, int kind, sb_err *e) {
  if (!sb_policy_judges_entries(fs->policy)) return SB_OK;
  char rel[2 * SB_PATH_MAX + 2];
  long n = sb_resolve_relpath(&v->res, fd, rel, sizeof rel - SB_NAME_MAX - 2);
  if (n < 0)
    return n == -EXDEV ? sb_rt_fail(e, (int)n)
                       : sb_fail(e, SB_EACCES, "cannot verify the path against the sandbox rules");
  size_t len = (size_t)n;
  if (name) {
    if (len) rel[len++] = '/';
    size_t nl = strlen(name);
    memcpy(rel + len, name, nl);
    len += nl;
    rel[len] = '\0';
  }
  return sb_policy_check(fs->policy, acc, rel, len, kind, e);
}

/* Open the directory of components [0, upto), creating missing ones when
 * `create` (libpathrs mkdir_all: tolerate races, never create after a
 * missing component followed by ".."). Returns an O_PATH fd or -1. */
static int open_dir_chain(const layer *v, const sb_path *p, unsigned upto, bool create, sb_err *e) {
  int fd = sb_resolve_dir(&v->res, p->buf, prefix_len(p, upto));
  if (fd >= 0) return fd;
  if (fd != -ENOENT || !create) {
    sb_rt_fail(e, fd);
    return -1;
  }
  unsigned k = upto; /* find the deepest existing ancestor */
  while (k > 0) {
    fd = sb_resolve_dir(&v->res, p->buf, prefix_len(p, --k));
    if (fd >= 0) break;
    if (fd != -ENOENT) {
      sb_rt_fail(e, fd);
      return -1;
    }
  }
  if (fd < 0) {
    sb_rt_fail(e, fd);
    return -1;
  }
  for (unsigned i = k; i < upto; i++) { /* check before creating anything */
    size_t n;
    const char *c = sb_path_comp(p, i, &n);
    if (sb_path_is_dotdot(c, n)) {
      close(fd);
      sb_fail(e, SB_ENOENT, NULL);
      return -1;
    }
  }
  for (unsigned i = k; i < upto; i++) {
    size_t n;
    const char *c = sb_path_comp(p, i, &n);
    char name[SB_NAME_MAX + 1];
    memcpy(name, c, n);
    name[n] = '\0';
    if (mkdirat(fd, name, 0755) != 0 && errno != EEXIST) {
      sb_rt_fail_errno(e);
      close(fd);
      return -1;
    }
    close(fd);
    /* re-resolve from the root: whatever raced in is judged by the resolver */
    fd = sb_resolve_dir(&v->res, p->buf, prefix_len(p, i + 1));
    if (fd < 0) {
      sb_rt_fail(e, fd);
      return -1;
    }
  }
  return fd;
}

int sb_ct_open_parent(const layer *v, const sb_path *p, bool create, sb_err *e) {
  return open_dir_chain(v, p, p->ncomp - 1, create, e);
}

/* Open p in layer v: links followed while inside (a final one when
 * `follow`, or when p must be a directory: "link/"), else the final
 * component itself (O_PATH opens a link as itself). */
int sb_ct_open_in(const layer *v, const sb_path *p, int flags, bool follow) {
  flags |= p->must_dir ? O_DIRECTORY : 0;
  if (follow || p->must_dir) return sb_resolve_follow(&v->res, p->buf, p->len, flags);
  return sb_resolve(&v->res, p->buf, p->len, flags, 0);
}

/* Listings and walks merge every layer where the path exists; an error
 * stops them, except ENOTDIR in a later layer (or any error there, with
 * `skip_later`) once an earlier one answered. ENOENT when none did. */
sb_code sb_ct_merge_layers(sb_fs *fs, sb_ct_layer_each each, void *ud, bool skip_later, size_t *found, sb_err *e) {
  container *ct = CT(fs);
  *found = 0;
  for (size_t i = 0; i < ct->nlayers; i++) {
    sb_code c = each(fs, i, ud, e);
    if (c == SB_ENOENT) continue;
    if (c != SB_OK) {
      if (*found && (skip_later || c == SB_ENOTDIR)) continue;
      return c;
    }
    (*found)++;
  }
  e->code = SB_OK;
  return *found ? SB_OK : sb_fail(e, SB_ENOENT, NULL);
}
