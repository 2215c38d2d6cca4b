/* Searches over a backend walk: glob, grep and the snapshot's file list.
 *
 * A search runs in C only (no Lua call while a backend holds directory fds
 * or buffers) and collects records into its own buffers; the binding
 * (lua/search.c) pushes them afterwards and frees the search, so a memory
 * error raised while pushing leaks nothing. Backends walk in name order, so
 * a truncated result is the same on every backend. */
#ifndef SB_SEARCH_SEARCH_H
#define SB_SEARCH_SEARCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fs/backend.h"
#include "search/ignore.h"
#include "search/matcher.h"

#define SB_SEARCH_MAX_RESULTS 1000000
#define SB_SEARCH_CONTEXT_MAX 100 /* lines of context before or after a match */

/* One record: a path, a line number and the line's text (grep). kind
 * tells a match from a context line; a count record's line is the count;
 * a multiline match ends at end_line; mtime for glob's sort = "mtime". */
enum { SB_HIT_MATCH, SB_HIT_CONTEXT, SB_HIT_COUNT, SB_HIT_DIR };
typedef struct sb_hit {
  const char *path;
  size_t plen;
  uint32_t line, end_line;
  int kind;
  double mtime;
  const char *text;
  size_t tlen;
} sb_hit;

enum { SB_GREP_CONTENT, SB_GREP_FILES, SB_GREP_COUNT };

typedef struct sb_search {
  sb_fs *fs;
  sb_err *e;
  const char *pat; /* glob (glob) or file filter (grep) */
  size_t plen;
  bool filter_base; /* grep filter without '/': match the base name */
  const char *tpat; /* the type filter: a glob on base names */
  size_t tplen;
  size_t count, max, visits;
  const atomic_bool *cancel; /* set by another thread: stop at the next entry (NULL: never) */
  size_t matches; /* grep: matches kept (count also has context lines) */
  bool truncated, failed;
  /* what the walk leaves out (SPEC §12): ignore files, hidden entries */
  bool everything, hidden;
  sb_ignore ig;
  size_t start_len; /* the walk's start: named explicitly, never left out */
  /* grep */
  int mode;
  bool lines; /* content mode's records as one rg-style string (the binding's form) */
  bool literal, icase, multiline;
  unsigned before, after;
  size_t threads; /* 0: as many as the machine has */
  bool bad_pattern; /* the failure is about the pattern, not a path */
  bool compiled;
  sb_matcher m;
  /* glob */
  bool sort_mtime;
  /* snapshot */
  uint64_t bytes, max_bytes;
  bool empty_dirs;
  /* the records, and their sorted index; in "lines" mode (grep) results
   * holds the lines themselves, a segment per file (index: their table) */
  sb_buf results, index;
  char last_path[SB_PATH_MAX + 1]; /* lines mode: the previous file's path, for the order */
  size_t last_plen;
  bool out_of_order;
} sb_search;

/* grep's "lines" mode: the results as rg -n --no-heading prints them, one
 * string (in walk order, or sorted by path when the walk was not). NULL
 * on OOM. Valid until sb_search_free. */
const char *sb_search_lines(sb_search *s, size_t *len);

/* A search over fs (nothing allocated yet); end with sb_search_free. */
void sb_search_init(sb_search *s, sb_fs *fs, sb_err *e, size_t max);
void sb_search_free(sb_search *s);

/* Normalise a glob pattern: strip the cwd prefix of an absolute pattern,
 * drop "." and empty components, refuse "..". out holds SB_PATH_MAX + 1. */
sb_code sb_search_pattern(const char *cwd, size_t cwdlen, const char *raw, size_t n, char *out, size_t *olen,
                          sb_err *e);

/* glob: every entry whose path matches s->pat (set by the caller), below
 * `start` (the pattern's static prefix). */
sb_code sb_search_glob(sb_search *s, const sb_path *start);
/* grep: lines matching `pattern` in files below (or at) `where`, filtered
 * by s->pat; literal/icase set by the caller. */
sb_code sb_search_grep(sb_search *s, const char *pattern, size_t n, const sb_path *where);
/* The snapshot's listing: every visible file (and with empty_dirs every
 * directory), failing with ENOTSUP above max_bytes. */
sb_code sb_search_snapshot(sb_search *s);

/* The records in order (by path, then line; glob with sort_mtime: newest
 * first); false on out of memory. */
bool sb_search_sorted(sb_search *s);
/* Record i in collection order, or in sorted order after sb_search_sorted. */
void sb_search_hit(const sb_search *s, size_t i, sb_hit *out);

#endif
