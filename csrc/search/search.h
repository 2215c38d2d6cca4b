/* Searches over a backend walk: glob, grep and the snapshot's file list.
 *
 * A search runs in C only (no Lua call while a backend holds directory fds
 * or buffers) and collects records into its own buffers; the binding
 * (lua/search.c) pushes them afterwards and frees the search, so a memory
 * error raised while pushing leaks nothing. Backends walk in name order, so
 * a truncated result is the same on every backend. */
#ifndef SB_SEARCH_SEARCH_H
#define SB_SEARCH_SEARCH_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

#include "fs/backend.h"

#define SB_SEARCH_MAX_RESULTS 1000000

/* One record: a path, a line number (grep; 1 marks a directory in a
 * snapshot listing) and the line's text (grep). */
typedef struct sb_hit {
  const char *path;
  size_t plen;
  uint32_t line;
  const char *text;
  size_t tlen;
} sb_hit;

typedef struct sb_search {
  sb_fs *fs;
  sb_err *e;
  const char *pat; /* glob (glob) or file filter (grep) */
  size_t plen;
  bool filter_base; /* grep filter without '/': match the base name */
  size_t count, max, visits;
  bool truncated, failed;
  /* grep */
  bool literal, icase, compiled;
  bool bad_pattern; /* the failure is about the pattern, not a path */
  const char *needle;
  size_t nlen;
  regex_t re;
  /* snapshot */
  uint64_t bytes, max_bytes;
  bool empty_dirs;
  /* the records, and their sorted index */
  sb_buf results, index;
} sb_search;

/* A search over fs (nothing allocated yet); end with sb_search_free. */
void sb_search_init(sb_search *s, sb_fs *fs, sb_err *e, size_t max);
void sb_search_free(sb_search *s);

/* Normalise a glob pattern: strip the cwd prefix of an absolute pattern,
 * drop "." and empty components, refuse "..". out holds SB_PATH_MAX + 1. */
sb_code sb_search_pattern(const char *cwd, size_t cwdlen, const char *raw, size_t n,
                          char *out, size_t *olen, sb_err *e);

/* glob: every entry whose path matches s->pat (set by the caller), below
 * `start` (the pattern's static prefix). */
sb_code sb_search_glob(sb_search *s, const sb_path *start);
/* grep: lines matching `pattern` in files below (or at) `where`, filtered
 * by s->pat; literal/icase set by the caller. */
sb_code sb_search_grep(sb_search *s, const char *pattern, size_t n, const sb_path *where);
/* The snapshot's listing: every visible file (and with empty_dirs every
 * directory), failing with ENOTSUP above max_bytes. */
sb_code sb_search_snapshot(sb_search *s);

/* The records in order (by path, then line); false on out of memory. */
bool sb_search_sorted(sb_search *s);
/* Record i in collection order, or in sorted order after sb_search_sorted. */
void sb_search_hit(const sb_search *s, size_t i, sb_hit *out);

#endif
