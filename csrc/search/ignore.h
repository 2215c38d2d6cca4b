/* Ignore files as ripgrep and git read them (gitignore(5)): the rules of
 * `.gitignore`, `.ignore` and `.git/info/exclude`, on the glob engine.
 *
 * A walk keeps one level per directory that has rules, outermost first; a
 * path is judged by the innermost level's last matching rule ("!" re-includes),
 * `.ignore` over `.gitignore` over `exclude` within a level. A directory that
 * is ignored is not descended into, so nothing below it comes back (as git:
 * a file cannot be re-included under an excluded directory). */
#ifndef SB_SEARCH_IGNORE_H
#define SB_SEARCH_IGNORE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/mem.h"

typedef struct sb_ignore {
  const sb_mem *mem;
  sb_buf rules; /* packed rules of every level */
  sb_buf levels; /* struct level, outermost first */
} sb_ignore;

void sb_ignore_init(sb_ignore *ig, const sb_mem *m);
void sb_ignore_free(sb_ignore *ig);

/* Add the text of one ignore file found in directory `dir` (root-relative,
 * "" for the root) to that directory's level (made when missing; a level
 * must be added after its ancestors'). Files of one level are added lowest
 * precedence first. false on out of memory. */
bool sb_ignore_add(sb_ignore *ig, const char *dir, size_t dlen, const char *text, size_t tlen);

/* Drop the levels of directories that do not contain `rel` (depth-first
 * walks call this before judging an entry). */
void sb_ignore_leave(sb_ignore *ig, const char *rel, size_t rlen);

/* Is rel (a directory when is_dir) ignored? */
bool sb_ignore_match(const sb_ignore *ig, const char *rel, size_t rlen, bool is_dir);

#endif
