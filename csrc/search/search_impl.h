/* What the search's files share (search.c: results, glob and snapshot;
 * grep.c: the grep walk; rules.c: what a walk leaves out; grep_job.c: the
 * work on one file). Private. */
#ifndef SB_SEARCH_IMPL_H
#define SB_SEARCH_IMPL_H

#include "search/pool.h"
#include "search/search.h"

#define MAX_VISITS 2000000 /* entries a single search may look at */
#define GREP_TEXT_MAX 2000 /* bytes of a matching line kept */
#define GREP_BINARY_PROBE 8192 /* a NUL in the first block: a binary file */

/* Records (in results, and in a job's out without the path): the header,
 * the path, the text. */
typedef struct rec {
  uint32_t plen, line, tlen, end;
  int32_t kind;
  double mtime;
} rec;

/* A failed allocation: the search fails with ENOSPC; false, to return. */
static inline bool sb_search_oom(sb_search *s) {
  sb_fail_oom(s->e);
  s->failed = true;
  return false;
}

/* search.c: a record joins the results (false: out of memory, failed) */
bool sb_search_add_rec(sb_search *s, const char *path, size_t plen, const rec *h, const char *text);

/* One more entry looked at: false once a search has looked at MAX_VISITS
 * (it stops, truncated). */
static inline bool sb_search_visit(sb_search *s) {
  if (s->cancel && atomic_load_explicit(s->cancel, memory_order_relaxed)) return false; /* nobody wants it now */
  if (++s->visits <= MAX_VISITS) return true;
  s->truncated = true;
  return false;
}

/* Does the policy let the search see this entry? */
static inline bool sb_search_visible(const sb_search *s, const char *rel, size_t rlen, int type) {
  const sb_policy *pol = s->fs->policy;
  if (!pol->deny.n && !pol->has_allow) return true;
  return sb_policy_visible(pol, rel, rlen, type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE);
}

/* rules.c: the rules of the directories above the start; a directory's
 * entries are about to come (an SB_WALK_* answer); is an entry left out? */
bool sb_search_start_rules(sb_search *s, const sb_path *start);
int sb_search_on_enter(sb_search *s, const char *rel, size_t rlen, const void *ref);
bool sb_search_left_out(sb_search *s, const char *rel, size_t rlen, const sb_dirent *ent);

/* grep_job.c: a worker's state, and the work on one file (any thread) */
void *sb_grep_tls_new(void *ctx);
void sb_grep_tls_free(void *p);
void sb_grep_work(void *ctx, void *tp, sb_job *j);

#endif
