/* The userspace overlay's merged view (see fs/overlay_view.h and fs/overlay.c
 * for the format and why). */
#include "fs/overlay_view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fs/dirlist.h"
#include "plat/stat.h"
#include "plat/fd.h"
#include "plat/xattr.h"

void sb_ovl_mdir_close(mdir *d) {
  for (int i = 0; i < 2; i++)
    if (d->fd[i] >= 0) close(d->fd[i]);
  d->fd[UP] = d->fd[LO] = -1;
}

void sb_ovl_node_init(onode *n) {
  memset(n, 0, sizeof *n);
  n->parent.fd[UP] = n->parent.fd[LO] = -1;
  n->where = -1;
}

void sb_ovl_node_free(onode *n) { sb_ovl_mdir_close(&n->parent); }

bool sb_ovl_is_dir(const onode *n) { return n->where >= 0 && S_ISDIR(n->st.st_mode); }

/* ---- the kernel's format ------------------------------------------------ */

static bool is_whiteout(const struct stat *st) {
  return S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0;
}

bool sb_ovl_opaque(int fd) {
  static const char *const names[] = {"trusted.overlay.opaque", "user.overlay.opaque"};
  char v[4];
  for (size_t i = 0; i < 2; i++)
    if (sb_fgetxattr(fd, names[i], v, sizeof v) == 1 && v[0] == 'y') return true;
  return false;
}

int sb_ovl_set_opaque(const ovl *ov, int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  int r = sb_fsetxattr(fd, ov->opaque_x, "y", 1) == 0 ? 0 : -errno;
  close(fd);
  return r;
}

/* Is n's directory in the upper layer opaque? */
bool sb_ovl_upper_opaque(const onode *n) {
  int fd = n->where == UP ? openat(n->parent.fd[UP], n->name, SB_O_DIR | O_NOFOLLOW | O_CLOEXEC) : -1;
  bool o = fd >= 0 && sb_ovl_opaque(fd);
  if (fd >= 0) close(fd);
  return o;
}

int sb_ovl_make_whiteout(int dirfd, const char *name) {
  return sb_mknodat(dirfd, name, S_IFCHR | 0000, makedev(0, 0)) == 0 ? 0 : -errno;
}

int sb_ovl_open_dir(int dirfd, const char *name) {
  int fd = openat(dirfd, name, SB_O_DIR | O_NOFOLLOW | O_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

/* What the merged directory d holds at name (into n: where, st, whiteout,
 * lower_has, lower_dir). 0 or -errno. */
int sb_ovl_child(const mdir *d, const char *name, onode *n) {
  struct stat st;
  n->where = -1;
  n->whiteout = n->lower_has = n->lower_dir = false;
  if (d->fd[UP] >= 0) {
    if (fstatat(d->fd[UP], name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (is_whiteout(&st)) n->whiteout = true;
      else {
        n->where = UP;
        n->st = st;
      }
    } else if (errno != ENOENT) {
      return -errno;
    }
  }
  if (d->fd[LO] >= 0 && !n->whiteout) {
    if (fstatat(d->fd[LO], name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      n->lower_has = true;
      n->lower_dir = S_ISDIR(st.st_mode);
      if (n->where < 0) {
        n->where = LO;
        n->st = st;
      }
    } else if (errno != ENOENT) {
      return -errno;
    }
  }
  return 0;
}

/* Enter the directory `name` of d, which sb_ovl_child() found (in n). */
int sb_ovl_descend(const mdir *d, const char *name, const onode *n, mdir *out) {
  out->fd[UP] = out->fd[LO] = -1;
  if (n->where == UP && (out->fd[UP] = sb_ovl_open_dir(d->fd[UP], name)) < 0) return out->fd[UP];
  if (n->lower_dir && !(out->fd[UP] >= 0 && sb_ovl_opaque(out->fd[UP]))) {
    out->fd[LO] = sb_ovl_open_dir(d->fd[LO], name);
    if (out->fd[LO] < 0 && n->where == LO) return out->fd[LO];
    if (out->fd[LO] < 0) out->fd[LO] = -1; /* the base changed meanwhile: the upper part alone */
  }
  return 0;
}

int sb_ovl_dup_fd(int fd) {
  if (fd < 0) return -1;
  int r = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  return r >= 0 ? r : -errno;
}

/* ---- lookup ------------------------------------------------------------- */

/* Splice the link n->name of d into the rest of the path (see the resolver). */
static int splice_link(const mdir *d, const onode *n, char *buf, size_t *pos, size_t *end, int *hops, size_t *orig) {
  char target[SB_PATH_MAX + 1];
  ssize_t len = readlinkat(d->fd[n->where], n->name, target, sizeof target);
  if (len < 0) return -errno;
  if (++*hops > SB_HOPS_MAX) return -ELOOP;
  if (len == 0) return -ENOENT;
  if ((size_t)len >= sizeof target) return -ENAMETOOLONG;
  if (target[0] == '/') return -EXDEV;
  size_t restlen = *end - *pos;
  if ((size_t)len + restlen > SB_WORK_MAX) return -ENAMETOOLONG;
  memmove(buf + len, buf + *pos, restlen);
  memcpy(buf, target, (size_t)len);
  /* the path's own components start after the link texts still ahead */
  *orig = (size_t)len + (*orig > *pos ? *orig - *pos : 0);
  *end = (size_t)len + restlen;
  buf[*end] = '\0';
  *pos = 0;
  return 0;
}

/* Where the rest of buf (from pos) was going, appended to n->rel after a
 * missing component (its name in n->name): for creating parents. Refused
 * (-ENOENT) when a ".." follows, as mkdir -p never climbs out of what it made. */
static int rel_push(onode *n, const char *name, size_t len) {
  size_t r = n->rlen;
  if (r + 1 + len > SB_WORK_MAX) return -ENAMETOOLONG;
  if (r) n->rel[r++] = '/';
  memcpy(n->rel + r, name, len);
  n->rlen = r + len;
  n->rel[n->rlen] = '\0';
  return 0;
}

static int note_partial(onode *n, const char *buf, size_t pos, size_t end) {
  if (rel_push(n, n->name, strlen(n->name)) != 0) return -ENAMETOOLONG;
  while (pos < end) {
    size_t cl, b = sb_path_next(buf, &pos, end, &cl);
    if (cl == 0 || sb_path_is_dot(buf + b, cl)) continue;
    if (sb_path_is_dotdot(buf + b, cl) || rel_push(n, buf + b, cl) != 0) return -ENOENT;
  }
  n->partial = true;
  return -ENOENT;
}

/* Resolve the root-relative path (len bytes) in the merged view: links
 * followed while inside (a final one too with `follow`, or when the final
 * component ends in "/"). 0 with n filled (the final name may be missing:
 * where = -1), or -errno (-EXDEV: it escapes; -ENOENT with n->partial: a
 * directory on the way is missing). */
int sb_ovl_lookup(const ovl *ov, const char *path, size_t len, bool follow, onode *n) {
  char buf[SB_WORK_MAX + 1];
  mdir stack[DEPTH_MAX];
  size_t rlens[DEPTH_MAX];
  int sp = 0, hops = 0, ret = 0;
  size_t orig = 0; /* where buf's own components start (before: link text) */
  size_t pos = 0, end = len;
  sb_ovl_node_init(n);
  if (len > SB_PATH_MAX) return -ENAMETOOLONG;
  mdir cur = {{sb_ovl_dup_fd(ov->root[UP]), sb_ovl_dup_fd(ov->root[LO])}};
  if (cur.fd[UP] < 0 || cur.fd[LO] < 0) ret = cur.fd[UP] < 0 ? cur.fd[UP] : cur.fd[LO];
  memcpy(buf, path, len);
  buf[end] = '\0';
  while (ret == 0) {
    size_t clen, b = sb_path_next(buf, &pos, end, &clen);
    if (clen == 0) { /* the object is cur itself: found through its parent unless it is the root */
      if (sp == 0) {
        n->name[0] = '\0';
        n->where = UP;
        ret = fstat(cur.fd[UP], &n->st) == 0 ? 0 : -errno;
        n->parent = cur;
        cur.fd[UP] = cur.fd[LO] = -1;
        n->rlen = n->plen = 0;
        break;
      }
      /* "dir/" or a link to a directory as the last hop: look it up again from its parent */
      sb_ovl_mdir_close(&cur);
      cur = stack[--sp];
      n->rlen = rlens[sp];
      size_t cut = n->rlen;
      while (cut > 0 && n->rel[cut - 1] != '/') cut--;
      /* rel of the parent is rel up to cut; the name follows */
      size_t nl = n->rlen - cut;
      memcpy(n->name, n->rel + cut, nl);
      n->name[nl] = '\0';
      if ((ret = sb_ovl_child(&cur, n->name, n)) != 0) break;
      n->plen = cut ? cut - 1 : 0;
      n->parent = cur;
      cur.fd[UP] = cur.fd[LO] = -1;
      break;
    }
    if (sb_path_is_dot(buf + b, clen)) continue;
    if (sb_path_is_dotdot(buf + b, clen)) {
      if (sp == 0) {
        ret = -EXDEV;
        break;
      }
      sb_ovl_mdir_close(&cur);
      cur = stack[--sp];
      while (n->rlen > 0 && n->rel[n->rlen - 1] != '/') n->rlen--;
      if (n->rlen > 0) n->rlen--;
      n->rel[n->rlen] = '\0';
      continue;
    }
    if (clen > SB_NAME_MAX) {
      ret = -ENAMETOOLONG;
      break;
    }
    memcpy(n->name, buf + b, clen);
    n->name[clen] = '\0';
    bool slash = pos < end && buf[pos] == '/';
    bool final = !sb_path_more_after(buf, pos + (slash ? 1 : 0), end);
    if ((ret = sb_ovl_child(&cur, n->name, n)) != 0) break;
    bool link = n->where >= 0 && S_ISLNK(n->st.st_mode);
    if (final && !(link && (follow || slash))) {
      if (slash && n->where >= 0 && !S_ISDIR(n->st.st_mode)) {
        ret = -ENOTDIR;
        break;
      }
      n->plen = n->rlen;
      if ((ret = rel_push(n, n->name, clen)) != 0) break;
      n->parent = cur;
      cur.fd[UP] = cur.fd[LO] = -1;
      break;
    }
    if (n->where < 0) { /* parents are made for the path's own names, never a link's (dangling) target */
      ret = b < orig ? -ENOENT : note_partial(n, buf, pos, end);
      break;
    }
    if (link) {
      ret = splice_link(&cur, n, buf, &pos, &end, &hops, &orig);
      continue;
    }
    if (!S_ISDIR(n->st.st_mode)) {
      ret = -ENOTDIR;
      break;
    }
    if (sp == DEPTH_MAX) {
      ret = -ENAMETOOLONG;
      break;
    }
    mdir sub;
    if ((ret = sb_ovl_descend(&cur, n->name, n, &sub)) != 0) break;
    if ((ret = rel_push(n, n->name, clen)) != 0) {
      sb_ovl_mdir_close(&sub);
      break;
    }
    rlens[sp] = n->rlen;
    stack[sp++] = cur;
    cur = sub;
  }
  sb_ovl_mdir_close(&cur);
  while (sp > 0) sb_ovl_mdir_close(&stack[--sp]);
  return ret;
}

int sb_ovl_lookup_path(const ovl *ov, const sb_path *p, bool follow, onode *n) {
  int r = sb_ovl_lookup(ov, p->buf, p->len, follow || p->must_dir, n);
  if (r == 0 && p->must_dir && n->where >= 0 && !S_ISDIR(n->st.st_mode)) r = -ENOTDIR; /* "file/" */
  return r;
}

/* ---- copy-up ------------------------------------------------------------ */

/* The upper layer's directory at the merged path rel (len bytes, no link,
 * no ".."), every directory on the way made there: a base directory with
 * its mode (copied up), a new one 0755, one over a whiteout opaque (what
 * the base had there stays hidden). An SB_O_PATH fd or -errno. */
int sb_ovl_ensure_upper(const ovl *ov, const char *rel, size_t len) {
  int u = sb_ovl_dup_fd(ov->root[UP]), l = sb_ovl_dup_fd(ov->root[LO]);
  int ret = u < 0 ? u : l < 0 ? l : 0;
  for (size_t pos = 0; ret == 0 && pos < len;) {
    char name[SB_NAME_MAX + 1];
    size_t cl, b = sb_path_next(rel, &pos, len, &cl);
    if (cl == 0) continue;
    if (cl > SB_NAME_MAX) {
      ret = -ENAMETOOLONG;
      break;
    }
    memcpy(name, rel + b, cl);
    name[cl] = '\0';
    mdir d = {{u, l}};
    onode n;
    sb_ovl_node_init(&n);
    if ((ret = sb_ovl_child(&d, name, &n)) != 0) break;
    if (n.where >= 0 && !S_ISDIR(n.st.st_mode)) {
      ret = -ENOTDIR;
      break;
    }
    if (n.where != UP) { /* copy up, or make */
      mode_t mode = n.where == LO ? n.st.st_mode & 07777 : 0755;
      if (n.whiteout && unlinkat(u, name, 0) != 0) ret = -errno;
      else if (mkdirat(u, name, mode) != 0) ret = -errno;
      else if (fchmodat(u, name, mode, 0) != 0) ret = -errno; /* as the base has it, whatever the umask */
      else if (n.whiteout) ret = sb_ovl_set_opaque(ov, u, name);
      if (ret != 0) break;
      n.where = UP;
    }
    mdir sub;
    if ((ret = sb_ovl_descend(&d, name, &n, &sub)) != 0) break;
    close(u);
    if (l >= 0) close(l);
    u = sub.fd[UP];
    l = sub.fd[LO];
  }
  if (l >= 0) close(l);
  if (ret != 0) {
    if (u >= 0) close(u);
    return ret;
  }
  return u;
}

/* The upper layer's directory holding n's final name (copied up). */
int sb_ovl_upper_parent(const ovl *ov, const onode *n) {
  if (n->parent.fd[UP] >= 0) return sb_ovl_dup_fd(n->parent.fd[UP]);
  return sb_ovl_ensure_upper(ov, n->rel, n->plen);
}

/* The entries of the merged directory d: the upper layer's, then the
 * base's it does not shadow; whiteouts hide and are dropped. */
sb_code sb_ovl_list_merged(sb_fs *fs, const mdir *d, sb_dirlist *dl, unsigned flags, sb_err *e) {
  size_t start = dl->n;
  sb_code c = SB_OK;
  for (int i = 0; i < 2 && c == SB_OK; i++) {
    if (d->fd[i] < 0) continue;
    size_t from = dl->n;
    c = sb_rt_list(fs, d->fd[i], dl, flags | (i == UP ? SB_RT_WHITEOUTS : 0), e);
    for (size_t k = from; k < dl->n; k++) dl->v[k].layer = i;
  }
  if (c != SB_OK) return c;
  sb_dirlist_fix_names(dl, start);
  if (d->fd[UP] >= 0 && d->fd[LO] >= 0 && sb_dirlist_unique(&fs->mem, dl) != 0) return sb_fail_oom(e);
  size_t w = start;
  for (size_t k = start; k < dl->n; k++)
    if (dl->v[k].type != SB_T_WHITEOUT) dl->v[w++] = dl->v[k];
  dl->n = w;
  return SB_OK;
}

/* The merged directory n names (a directory: checked by the caller). */
int sb_ovl_open_node_dir(const onode *n, mdir *out) {
  if (n->name[0] == '\0') { /* the root */
    out->fd[UP] = sb_ovl_dup_fd(n->parent.fd[UP]);
    out->fd[LO] = sb_ovl_dup_fd(n->parent.fd[LO]);
    return out->fd[UP] < 0 ? out->fd[UP] : out->fd[LO] < 0 ? out->fd[LO] : 0;
  }
  return sb_ovl_descend(&n->parent, n->name, n, out);
}

/* The bytes of the regular files of the merged tree below d (a copy's cost). */
void sb_ovl_merged_bytes(sb_fs *fs, const mdir *d, uint64_t *bytes, int depth) {
  sb_dirlist dl = {0};
  sb_err e;
  if (depth <= SB_WALK_DEPTH_MAX && sb_ovl_list_merged(fs, d, &dl, SB_RT_SIZES, &e) == SB_OK) {
    for (size_t i = 0; i < dl.n; i++) {
      if (dl.v[i].type == SB_T_FILE) *bytes += dl.v[i].size;
      onode n;
      mdir sub;
      sb_ovl_node_init(&n);
      if (dl.v[i].type == SB_T_DIR && sb_ovl_child(d, dl.v[i].name, &n) == 0 &&
          sb_ovl_descend(d, dl.v[i].name, &n, &sub) == 0) {
        sb_ovl_merged_bytes(fs, &sub, bytes, depth + 1);
        sb_ovl_mdir_close(&sub);
      }
    }
  }
  sb_dirlist_free(&fs->mem, &dl);
}

sb_code sb_ovl_recheck(sb_fs *fs, const onode *n, sb_access acc, int kind, sb_err *e) {
  if (!sb_policy_judges_entries(fs->policy)) return SB_OK;
  return sb_policy_check(fs->policy, acc, n->rel, n->rlen, kind, e);
}
