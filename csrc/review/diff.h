/* Line diffs for review (SPEC §11): the hunks of a unified diff in git's
 * format — minimal edit scripts (Myers' O(ND) algorithm in linear space,
 * bounded in cost for very different inputs), context lines, hunks merged
 * as git merges them, git's default "function" text after @@, and the
 * "\ No newline at end of file" marker. Headers (diff --git, ---, +++) are
 * the caller's: they depend on what is compared (files, renames, modes). */
#ifndef SB_REVIEW_DIFF_H
#define SB_REVIEW_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/mem.h"

typedef struct sb_diff_stat {
  uint64_t added, removed; /* lines */
  unsigned hunks;
} sb_diff_stat;

#define SB_DIFF_MAX_CONTEXT 100000

/* Append the hunks turning a into b to out (nothing when they are equal).
 * ENOSPC when memory runs out (out may hold a partial diff then). */
sb_code sb_diff_text(const sb_mem *m, const char *a, size_t alen, const char *b, size_t blen, unsigned context,
                     sb_buf *out, sb_diff_stat *st, sb_err *e);

/* Does git treat this as binary (a NUL in the first 8000 bytes)? */
int sb_diff_is_binary(const char *s, size_t len);

#endif
