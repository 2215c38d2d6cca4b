/* What a search's walk leaves out (SPEC §12): ignore files level by
 * level, hidden entries, .git; a named start is always searched. */
#include <string.h>

#include "search/search_impl.h"

static const char *const IGNORE_FILES[] = {".gitignore", ".ignore"}; /* lowest precedence first */

/* Add the rules of ignore file `name` in directory dir (ENOENT: none). */
static bool load_ignore(sb_search *s, const char *dir, size_t dlen, const char *name) {
  char buf[SB_PATH_MAX + 1];
  size_t nl = strlen(name);
  if (dlen + 1 + nl > SB_PATH_MAX) return true;
  memcpy(buf, dir, dlen);
  size_t n = dlen;
  if (dlen) buf[n++] = '/';
  memcpy(buf + n, name, nl);
  n += nl;
  sb_path p;
  sb_err ignore;
  sb_bytes v;
  if (sb_path_from_rel(&p, buf, n, &ignore) != SB_OK) return true;
  if (!sb_policy_visible(s->fs->policy, buf, n, SB_KIND_FILE)) return true;
  if (s->fs->be->read(s->fs, &p, &v, &ignore) != SB_OK) return true; /* none, or unreadable */
  if (!sb_ignore_add(&s->ig, dir, dlen, v.p, v.len)) return sb_search_oom(s);
  return true;
}

/* The rules of directory dir, read when its listing holds the files. */
static bool load_listed_rules(sb_search *s, const char *dir, size_t dlen, const sb_dirlist *dl) {
  bool has[2] = {false, false}, git = false;
  for (size_t i = 0; i < dl->n; i++) {
    const sb_dirent *d = &dl->v[i];
    if (d->name[0] != '.') continue;
    for (size_t k = 0; k < 2; k++)
      if (d->type == SB_T_FILE && d->namelen == strlen(IGNORE_FILES[k]) &&
          memcmp(d->name, IGNORE_FILES[k], d->namelen) == 0)
        has[k] = true;
    if (d->type == SB_T_DIR && d->namelen == 4 && memcmp(d->name, ".git", 4) == 0) git = true;
  }
  if (dlen == 0 && git && !load_ignore(s, "", 0, ".git/info/exclude")) return false;
  for (size_t k = 0; k < 2; k++)
    if (has[k] && !load_ignore(s, dir, dlen, IGNORE_FILES[k])) return false;
  return true;
}

/* The rules of a directory the walk does not list (above its start). */
static bool load_dir_rules(sb_search *s, const char *dir, size_t dlen) {
  if (dlen == 0 && !load_ignore(s, "", 0, ".git/info/exclude")) return false;
  for (size_t i = 0; i < sizeof IGNORE_FILES / sizeof *IGNORE_FILES; i++)
    if (!load_ignore(s, dir, dlen, IGNORE_FILES[i])) return false;
  return true;
}

/* Rules of the directories above the start (the start's own come with its
 * listing); a named file is judged by its own directory's too. */
bool sb_search_start_rules(sb_search *s, const sb_path *start) {
  s->start_len = start->len;
  if (s->everything) return true;
  size_t upto = start->ncomp ? start->ncomp - 1 : 0; /* the directories strictly above */
  if (start->ncomp && !load_dir_rules(s, "", 0)) return false;
  for (size_t i = 1; i <= upto; i++) {
    size_t dlen = (size_t)start->off[i] - 1;
    if (!load_dir_rules(s, start->buf, dlen)) return false;
  }
  return true;
}

/* A directory's entries are about to come: leave the levels it is not
 * inside, take its rules. */
int sb_search_on_enter(sb_search *s, const char *rel, size_t rlen, const void *ref) {
  if (s->everything) return SB_WALK_CONTINUE;
  if (rlen) sb_ignore_leave(&s->ig, rel, rlen);
  if (rlen && sb_ignore_match(&s->ig, rel, rlen, true) && rlen != s->start_len) return SB_WALK_SKIP;
  return load_listed_rules(s, rel, rlen, ref) ? SB_WALK_CONTINUE : SB_WALK_STOP;
}

/* Is this entry left out? */
bool sb_search_left_out(sb_search *s, const char *rel, size_t rlen, const sb_dirent *ent) {
  if (s->everything || rlen == s->start_len) return false; /* a named start is searched */
  bool dir = ent->type == SB_T_DIR;
  if (ent->name[0] == '.') {
    if (dir && ent->namelen == 4 && memcmp(ent->name, ".git", 4) == 0) return true;
    if (!s->hidden) return true;
  }
  sb_ignore_leave(&s->ig, rel, rlen);
  return sb_ignore_match(&s->ig, rel, rlen, dir);
}
