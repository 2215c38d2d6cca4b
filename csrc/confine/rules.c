#include "confine/rules.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/path.h"
#include "fs/backend.h" /* SB_WALK_DEPTH_MAX */

/* One thing the view needs: op (SB_NS_*) on a path of a tree, applied to
 * the object with inode ino. Paths (and a link's text) live in an arena. */
typedef struct ent {
  size_t off, len, toff; /* path; link text at toff (SIZE_MAX: none) */
  uint32_t tree;
  int op;
  uint64_t ino;
} ent;

typedef struct list {
  ent *v;
  size_t n, cap;
  sb_buf arena;
} list;

/* A directory of the walk: where its path ends, and whether it is a mount
 * already (a tree, a skeleton's directory, an allowed directory bound in)
 * or must be pinned when something below it is masked. */
typedef struct frame {
  size_t len;
  bool fixed, pinned;
  uint64_t ino;
} frame;

struct sb_view_rules {
  sb_mem mem;
  const sb_policy *pol;
  int *fds;
  size_t ntrees;
  bool skeleton;
  list want, done;
  size_t masked, shown;
  int tree;
  char *why;
  size_t whylen;
  frame stack[SB_WALK_DEPTH_MAX + 2];
  char path[SB_PATH_MAX + 1];
  char link[SB_PATH_MAX + 1];
};

sb_view_rules *sb_view_rules_new(const sb_mem *m, const sb_policy *p, const int *fds, size_t ntrees, bool skeleton) {
  sb_view_rules *r = sb_malloc(m, sizeof *r);
  if (!r) return NULL;
  memset(r, 0, sizeof *r);
  r->mem = *m;
  r->pol = p;
  r->skeleton = skeleton;
  r->fds = sb_malloc(m, (ntrees ? ntrees : 1) * sizeof *r->fds);
  if (!r->fds) {
    sb_free(m, r, sizeof *r);
    return NULL;
  }
  memcpy(r->fds, fds, ntrees * sizeof *fds);
  r->ntrees = ntrees;
  return r;
}

static void list_free(const sb_mem *m, list *l) {
  sb_free(m, l->v, l->cap * sizeof *l->v);
  sb_buf_free(m, &l->arena);
  memset(l, 0, sizeof *l);
}

void sb_view_rules_free(sb_view_rules *r) {
  if (!r) return;
  sb_mem m = r->mem;
  list_free(&m, &r->want);
  list_free(&m, &r->done);
  sb_free(&m, r->fds, (r->ntrees ? r->ntrees : 1) * sizeof *r->fds);
  sb_free(&m, r, sizeof *r);
}

void sb_view_rules_count(const sb_view_rules *r, size_t *masked, size_t *shown) {
  *masked = r ? r->masked : 0;
  *shown = r ? r->shown : 0;
}

static int fail(sb_view_rules *r, const char *fmt, const char *path, int err) {
  snprintf(r->why, r->whylen, fmt, path[0] ? path : ".", strerror(err));
  return -1;
}

static const char *ent_path(const list *l, const ent *e) { return l->arena.p + e->off; }

static int add(sb_view_rules *r, list *l, uint32_t tree, int op, const char *path, size_t len, uint64_t ino,
               const char *target) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    ent *v = sb_realloc(&r->mem, l->v, l->cap * sizeof *v, cap * sizeof *v);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  ent *e = &l->v[l->n];
  e->off = l->arena.len;
  e->len = len;
  e->toff = SIZE_MAX;
  e->tree = tree;
  e->op = op;
  e->ino = ino;
  if (sb_buf_append(&r->mem, &l->arena, path, len) != 0 || sb_buf_append(&r->mem, &l->arena, "", 1) != 0) return -1;
  if (target) {
    e->toff = l->arena.len;
    if (sb_buf_append(&r->mem, &l->arena, target, strlen(target) + 1) != 0) return -1;
  }
  l->n++;
  return 0;
}

static int want(sb_view_rules *r, int op, size_t len, uint64_t ino, const char *target) {
  if (add(r, &r->want, (uint32_t)r->tree, op, r->path, len, ino, target) != 0) {
    snprintf(r->why, r->whylen, "the sandbox rules in the commands' view: out of memory");
    return -1;
  }
  return 0;
}

/* A masked path: every directory on the way that is not a mount already is
 * pinned, so the path cannot be carried out from under its rule. */
static int mask(sb_view_rules *r, size_t len, uint64_t ino, int top) {
  for (int i = top; i >= 0 && !r->stack[i].fixed && !r->stack[i].pinned; i--) {
    r->stack[i].pinned = true;
    if (want(r, SB_NS_PIN, r->stack[i].len, r->stack[i].ino, NULL) != 0) return -1;
  }
  return want(r, SB_NS_MASK, len, ino, NULL);
}

static bool deny_at(sb_view_rules *r, size_t len) { return sb_policy_rule_at(r->pol, SB_POLICY_DENY, r->path, len); }
static bool deny_below(sb_view_rules *r, size_t len) {
  return sb_policy_rule_below(r->pol, SB_POLICY_DENY, r->path, len);
}
static bool allow_at(sb_view_rules *r, size_t len) { return sb_policy_rule_at(r->pol, SB_POLICY_ALLOW, r->path, len); }
static bool allow_below(sb_view_rules *r, size_t len) {
  return sb_policy_rule_below(r->pol, SB_POLICY_ALLOW, r->path, len);
}

static int walk(sb_view_rules *r, int dirfd, size_t rlen, bool skel, int top);

/* Descend into the directory `name` of dirfd, whose path is r->path[0..len). */
static int descend(sb_view_rules *r, int dirfd, const char *name, size_t len, bool skel, bool fixed, int top) {
  if (top + 1 > SB_WALK_DEPTH_MAX)
    return fail(r, "the sandbox rules cannot be applied for commands: '%s' lies deeper than the walk goes (%s)",
                r->path, ELOOP);
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return 0; /* gone meanwhile */
    return fail(r, "the sandbox rules cannot be applied for commands: cannot list '%s' (%s)", r->path, errno);
  }
  struct stat st;
  frame *f = &r->stack[top + 1];
  f->len = len;
  f->fixed = fixed;
  f->pinned = false;
  f->ino = fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
  int rc = walk(r, fd, len, skel, top + 1);
  close(fd);
  return rc;
}

/* The entries of one directory (owned by the caller, read here). skel: the
 * directory is a skeleton's (only what leads to allowed paths is made). */
static int walk(sb_view_rules *r, int dirfd, size_t rlen, bool skel, int top) {
  int dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
  DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
  if (!d) {
    int err = errno;
    if (dfd >= 0) close(dfd);
    r->path[rlen] = '\0';
    return fail(r, "the sandbox rules cannot be applied for commands: cannot list '%s' (%s)", r->path, err);
  }
  int rc = 0;
  struct dirent *de;
  while (rc == 0 && (errno = 0, de = readdir(d))) {
    const char *name = de->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    size_t nl = strlen(name), len = rlen ? rlen + 1 + nl : nl;
    if (len > SB_PATH_MAX) {
      r->path[rlen] = '\0';
      rc = fail(r,
                "the sandbox rules cannot be applied for commands: a name below '%s' makes a path longer "
                "than an agent path may be (%s)",
                r->path, ENAMETOOLONG);
      break;
    }
    if (rlen) r->path[rlen] = '/';
    memcpy(r->path + (rlen ? rlen + 1 : 0), name, nl + 1);
    int type = de->d_type;
    struct stat st;
    bool have_st = false;
    if (type == DT_UNKNOWN) {
      if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue; /* gone */
      have_st = true;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
    }
    bool dir = type == DT_DIR, lnk = type == DT_LNK;
    /* the inode the view's mount goes onto (overlayfs's d_ino may differ) */
    uint64_t ino = 0;
    if (!lnk && (deny_at(r, len) || (skel && allow_at(r, len)))) {
      if (!have_st && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      ino = (uint64_t)st.st_ino;
    }
    if (deny_at(r, len)) {
      /* a link itself cannot be masked; whatever it leads to is judged on its own */
      if (!lnk) rc = mask(r, len, ino, top);
    } else if (skel) {
      if (allow_at(r, len)) {
        if (lnk) {
          ssize_t n = readlinkat(dirfd, name, r->link, sizeof r->link - 1);
          if (n < 0) continue;
          r->link[n] = '\0';
          rc = want(r, SB_NS_LINK, len, 0, r->link);
        } else {
          rc = want(r, SB_NS_SHOW, len, ino, NULL);
          if (rc == 0 && dir && deny_below(r, len)) rc = descend(r, dirfd, name, len, false, true, top);
        }
      } else if (dir && allow_below(r, len)) {
        rc = want(r, SB_NS_DIR, len, 0, NULL);
        if (rc == 0) rc = descend(r, dirfd, name, len, true, true, top);
      }
    } else if (dir && deny_below(r, len)) {
      rc = descend(r, dirfd, name, len, false, false, top);
    }
    r->path[rlen] = '\0';
  }
  if (rc == 0 && errno != 0) {
    r->path[rlen] = '\0';
    rc = fail(r, "the sandbox rules cannot be applied for commands: cannot list '%s' (%s)", r->path, errno);
  }
  closedir(d);
  return rc;
}

/* One tree, from its root. */
static int walk_tree(sb_view_rules *r, int t) {
  r->tree = t;
  r->path[0] = '\0';
  int fd = openat(r->fds[t], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(r, "the sandbox rules cannot be applied for commands: cannot list '%s' (%s)", "", errno);
  struct stat st;
  uint64_t ino = fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
  frame *f = &r->stack[0];
  f->len = 0;
  f->fixed = true; /* a tree is a mount of its own */
  f->pinned = false;
  f->ino = ino;
  int rc = 0;
  if (deny_at(r, 0)) {
    rc = want(r, SB_NS_MASK, 0, ino, NULL);
  } else if (r->skeleton && allow_at(r, 0)) {
    rc = want(r, SB_NS_SHOW, 0, ino, NULL);
    if (rc == 0 && deny_below(r, 0)) rc = walk(r, fd, 0, false, 0);
  } else if (r->skeleton || deny_below(r, 0)) {
    rc = walk(r, fd, 0, r->skeleton, 0);
  }
  close(fd);
  return rc;
}

static int ent_cmp(const void *a, const void *b, void *arena) {
  const ent *x = a, *y = b;
  if (x->tree != y->tree) return x->tree < y->tree ? -1 : 1;
  const char *base = arena;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(base + x->off, base + y->off, n);
  if (c) return c;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return x->op - y->op;
}

/* The applied entry for w, if any (done is sorted). */
static const ent *find_done(const sb_view_rules *r, const ent *w) {
  size_t lo = 0, hi = r->done.n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const ent *d = &r->done.v[mid];
    int c;
    if (d->tree != w->tree) c = d->tree < w->tree ? -1 : 1;
    else {
      size_t n = d->len < w->len ? d->len : w->len;
      c = memcmp(ent_path(&r->done, d), ent_path(&r->want, w), n);
      if (!c && d->len != w->len) c = d->len < w->len ? -1 : 1;
      if (!c) c = d->op - w->op;
    }
    if (!c) return d;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static bool is_mount(int op) { return op == SB_NS_MASK || op == SB_NS_PIN || op == SB_NS_SHOW; }

int sb_view_rules_sync(sb_view_rules *r, sb_ns *ns, char *why, size_t whylen) {
  r->why = why;
  r->whylen = whylen;
  r->want.n = 0;
  r->want.arena.len = 0;
  for (size_t t = 0; t < r->ntrees; t++)
    if (walk_tree(r, (int)t) != 0) return -1;
  size_t mounts = 0, skel = 0;
  for (size_t i = 0; i < r->want.n; i++) is_mount(r->want.v[i].op) ? mounts++ : skel++;
  if (mounts > SB_VIEW_MAX_MOUNTS || skel > SB_VIEW_MAX_SKELETON) {
    snprintf(why, whylen,
             "the sandbox rules cannot be applied for commands: they match %zu paths here, more "
             "than the %d the commands' view can mask or show; narrow the rules (a directory rule masks "
             "everything below it at once)",
             mounts, SB_VIEW_MAX_MOUNTS);
    return -1;
  }
  qsort_r(r->want.v, r->want.n, sizeof *r->want.v, ent_cmp, r->want.arena.p);
  /* what was applied and still holds is kept; the rest is applied now (in
   * path order: a directory's pin before anything below it) */
  list next = {0};
  int rc = 0;
  size_t masked = 0, shown = 0;
  for (size_t i = 0; i < r->want.n; i++) {
    const ent *w = &r->want.v[i];
    const char *path = ent_path(&r->want, w);
    const ent *d = find_done(r, w);
    bool keep = d && d->ino == w->ino;
    if (!keep && rc == 0) {
      const char *target = w->toff == SIZE_MAX ? NULL : r->want.arena.p + w->toff;
      if (sb_ns_request(ns, w->op, (int)w->tree, path, target, NULL) != 0) {
        static const char *const what[] = {"", "mask", "pin", "show", "make", "link"};
        snprintf(why, whylen,
                 "the sandbox rules cannot be applied for commands: cannot %s '%s' in their "
                 "view (%s)",
                 w->op > 0 && w->op <= SB_NS_LINK ? what[w->op] : "apply", path[0] ? path : ".", strerror(errno));
        rc = -1;
        continue;
      }
      keep = true;
    }
    if (!keep) continue;
    if (add(r, &next, w->tree, w->op, path, w->len, w->ino, w->toff == SIZE_MAX ? NULL : r->want.arena.p + w->toff) !=
        0) {
      snprintf(why, whylen, "the sandbox rules in the commands' view: out of memory");
      rc = -1;
      break;
    }
    masked += w->op == SB_NS_MASK;
    shown += w->op == SB_NS_SHOW;
  }
  list_free(&r->mem, &r->done);
  r->done = next; /* sorted: built in want's order */
  r->masked = masked;
  r->shown = shown;
  return rc;
}
