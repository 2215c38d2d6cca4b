/* The path front door shared by both backends (SPEC §4).
 *
 * An agent path becomes a normalised root-relative component list: empty
 * and "." components dropped, ".." kept (backends walk it, so a symlinked
 * directory followed by ".." means what the kernel says it means), and any
 * ".." that would lexically climb above the root refused with EESCAPE.
 * Absolute paths are accepted only under the sandbox's cwd, whose prefix is
 * stripped. Nothing after this sees an absolute path. */
#ifndef SB_PATH_H
#define SB_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define SB_PATH_MAX 4095 /* longest agent path, bytes */
/* Every resolver (the container's, the virtual tree's, the userspace
 * overlay's): symlinks per resolution, as the kernel; the work buffer a path
 * with a spliced link target fits in. */
#define SB_HOPS_MAX 40
#define SB_WORK_MAX (2 * SB_PATH_MAX + 2)
#define SB_NAME_MAX 255 /* longest component */
#define SB_MAXCOMP ((SB_PATH_MAX + 1) / 2)

typedef struct sb_path {
  size_t len; /* strlen(buf); 0 = the root */
  unsigned ncomp; /* components in buf */
  bool must_dir; /* written with a trailing "/" or "/.": must be a directory */
  bool dot_final; /* written ending in "." ("x/."): names x only as a directory to look in */
  bool dotdot; /* holds a ".." component */
  uint16_t off[SB_MAXCOMP + 1]; /* start of each component; off[ncomp] = len+1 */
  char buf[SB_PATH_MAX + 2]; /* components joined by '/', NUL-terminated */
} sb_path;

/* cwd is "/" or an absolute path without trailing slash. */
sb_code sb_path_parse(sb_path *out, const char *s, size_t n, const char *cwd, size_t cwdlen, sb_err *e);

static inline const char *sb_path_comp(const sb_path *p, unsigned i, size_t *len) {
  *len = (size_t)(p->off[i + 1] - p->off[i] - 1);
  return p->buf + p->off[i];
}

/* Bytes of buf that name the parent of the last component. */
static inline size_t sb_path_parent_len(const sb_path *p) {
  return p->ncomp > 1 ? (size_t)p->off[p->ncomp - 1] - 1 : 0;
}

static inline bool sb_path_is_dot(const char *c, size_t n) { return n == 1 && c[0] == '.'; }
/* Is there a component other than "." in buf[pos, end)? (A resolver walking
 * a path in place asks whether the one it holds is the final one.) */
bool sb_path_more_after(const char *buf, size_t pos, size_t end);
/* The next component of buf[*pos, end), slashes before it skipped: its
 * start, its length in *len (0: nothing left); *pos ends up after it. */
static inline size_t sb_path_next(const char *buf, size_t *pos, size_t end, size_t *len) {
  while (*pos < end && buf[*pos] == '/') (*pos)++;
  size_t b = *pos;
  while (*pos < end && buf[*pos] != '/') (*pos)++;
  *len = *pos - b;
  return b;
}

static inline bool sb_path_is_dotdot(const char *c, size_t n) { return n == 2 && c[0] == '.' && c[1] == '.'; }

/* True when the path names no entry of its own: the root, or ends in "..".
 * Final-component operations (create, mkdir, remove, rename) refuse these. */
bool sb_path_names_no_entry(const sb_path *p);

/* Lexically collapse ".." into out (size >= p->len + 1); returns the length.
 * Exact for the virtual tree; a lexical view for policy matching. */
size_t sb_path_clean(const sb_path *p, char *out);

/* Where a symlink with `target`, placed in the directory `dir` (a clean
 * root-relative path, "" = the root), leads, lexically: the clean path into
 * out (cap >= dlen + tlen + 2), its length; -1 when it leaves the root (an
 * absolute target always does, even one naming a place inside). */
long sb_link_join(const char *dir, size_t dlen, const char *target, size_t tlen, char *out, size_t cap);

/* Build a path from a root-relative string known to be clean (backend walks). */
sb_code sb_path_from_rel(sb_path *out, const char *s, size_t n, sb_err *e);

#endif
