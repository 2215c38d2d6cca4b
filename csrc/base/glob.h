/* Path glob matching for `glob`, `grep{glob=}` and policy rules.
 *
 * Patterns are root-relative and '/'-separated. Within a component: `*` any
 * run of characters, `?` one UTF-8 character, `[abc]`, `[a-z]`, `[!x]`/`[^x]`
 * classes, `\` escapes. A whole component `**` matches zero or more
 * components, so src followed by a `**` component matches src and everything
 * below it. `{a,b}` matches either alternative (nested groups too; a
 * group without ',' is literal). Dotfiles are not special. Matching is linear-time backtracking, never exponential. */
#ifndef SB_GLOB_H
#define SB_GLOB_H

#include <stdbool.h>
#include <stddef.h>

bool sb_glob_match(const char *pat, size_t plen, const char *path, size_t len);

/* Could `dir` itself or some path below it match? Used to prune walks and to
 * keep directories that lead to allowed files navigable. */
bool sb_glob_could_match_below(const char *pat, size_t plen, const char *dir, size_t dlen);

/* Bytes of the leading components that hold no wildcard: where a walk for
 * this pattern can start. Never ends with '/'. */
size_t sb_glob_static_prefix(const char *pat, size_t plen);

bool sb_glob_has_magic(const char *s, size_t n);

#endif
