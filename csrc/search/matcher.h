/* The pattern engine of grep: PCRE2 with the JIT, a literal prefilter and
 * whole-buffer matching (SPEC §12).
 *
 * A matcher is compiled once on the main thread and then only read, so
 * worker threads share it; each thread brings its own sb_mstate (match
 * data and JIT stack). PCRE2 allocates with malloc, not the Lua allocator:
 * its memory is touched off the main thread. */
#ifndef SB_SEARCH_MATCHER_H
#define SB_SEARCH_MATCHER_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "search/find.h"

#define SB_MATCH_PRE_MAX 64 /* bytes of a required literal kept */
#define SB_MATCH_DIGITS_MIN 3 /* a shorter required run of digits is too common to look for */
#define SB_MATCH_DIGITS_MAX SB_FIND_DIGITS_MAX

typedef struct sb_matcher {
  bool literal; /* fixed string, case-sensitive: memmem only */
  bool multiline; /* a match may span lines */
  bool per_line; /* judged one line at a time: lookaround, \K, \A, \z... */
  bool bounds; /* has \b or \B: judged one line at a time in text that is not UTF-8 */
  bool empty; /* it can match an empty string: a whole-buffer scan never looks between a CR
                     and its LF (PCRE2 steps over CRLF), so buffers holding one go a line at a time */
  const char *needle; /* the literal (borrowed from the caller) */
  size_t nlen;
  pcre2_code *code; /* NULL for a case-sensitive literal */
  pcre2_code *ascii; /* the same without Unicode classes, for all-ASCII text; or NULL */
  bool jit;
  char pre[SB_MATCH_PRE_MAX]; /* a literal every match contains, or empty */
  size_t prelen;
  size_t digits; /* ASCII digits in a row that every match holds in ASCII text (\d{5,}), or 0 */
} sb_matcher;

typedef struct sb_mstate {
  pcre2_match_data *md;
  pcre2_match_context *mc;
  pcre2_jit_stack *js;
} sb_mstate;

/* Compile `pat`; EINVAL with PCRE2's message and offset when it is invalid. */
sb_code sb_matcher_compile(sb_matcher *m, const char *pat, size_t n, bool literal, bool icase, bool multiline,
                           sb_err *e);
void sb_matcher_free(sb_matcher *m);

/* Per-thread state for m; false on out of memory. */
bool sb_mstate_init(sb_mstate *st, const sb_matcher *m);
void sb_mstate_free(sb_mstate *st);

/* A match: the whole lines it touches, [start, end) without the final
 * newline. Return false to stop the scan. */
typedef bool (*sb_match_fn)(void *ud, size_t start, size_t end);

/* Every line (or, multiline, every run of lines) of buf that matches, in
 * order. 0, or a PCRE2 error code (< 0: the match limit, no memory).
 * buf[len] must be a readable NUL: PCRE2's JIT (10.42) reads the byte past
 * a subject's end, and with invalid UTF-8 before it, \b and \B there
 * depend on that byte (a NUL, like the newline after each line, gives the
 * interpreter's answer). */
int sb_matcher_scan(const sb_matcher *m, sb_mstate *st, const char *buf, size_t len, sb_match_fn fn, void *ud);

/* The literal that every match of a PCRE2 pattern must contain (longest run
 * of plain characters outside groups, classes and optional repeats), or 0
 * when none can be told (alternation at the top, inline options, \Q).
 * *digits (when not NULL): the longest run of ASCII digits every match holds
 * where \d means [0-9] (a top-level \d{m} or [0-9]{m}), or 0. */
size_t sb_required_literal(const char *pat, size_t n, char *out, size_t cap, size_t *digits);

#endif
