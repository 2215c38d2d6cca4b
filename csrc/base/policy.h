/* The one policy and limits check of both backends (SPEC §2 shared options).
 * It runs after the front door (boundary first, never instead of it) and
 * before any backend touches data. */
#ifndef SB_POLICY_H
#define SB_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/mem.h"

#define SB_UNLIMITED UINT64_MAX

typedef struct sb_strv {
  char **v;
  size_t *len;
  size_t n;
} sb_strv;

typedef struct sb_policy {
  uint64_t max_read_bytes, max_write_bytes;
  bool allow_overwrite, read_only;
  sb_strv deny, allow; /* globs on root-relative paths */
  sb_strv ext_read, ext_write; /* lower-case suffixes, "" = no extension */
  bool has_allow, has_ext_read, has_ext_write;
  bool allow_escaping_links; /* symlink() may make links that lead out */
} sb_policy;

typedef enum sb_access {
  SB_ACC_READ, /* file contents */
  SB_ACC_LIST, /* stat, exists, readdir: names and metadata */
  SB_ACC_WRITE, /* create or replace a file's contents */
  SB_ACC_MODIFY, /* mkdir, remove, rename */
} sb_access;

/* Entry kinds as far as the caller knows them. */
enum { SB_KIND_UNKNOWN, SB_KIND_FILE, SB_KIND_DIR };

/* No rules, no limits (the binding fills it from the normalised options). */
void sb_policy_init(sb_policy *p);
enum { SB_POLICY_DENY, SB_POLICY_ALLOW, SB_POLICY_EXT_READ, SB_POLICY_EXT_WRITE };
/* The list was given, even empty (an empty allowlist allows nothing). */
void sb_policy_given(sb_policy *p, int list);
/* Add a glob (deny, allow) or a suffix (ext_*; compared lower-case).
 * False on out of memory; what was added is freed by sb_policy_free. */
bool sb_policy_add(sb_policy *p, const sb_mem *m, int list, const char *s, size_t len);
void sb_policy_free(sb_policy *p, const sb_mem *m);

/* clean = lexically clean root-relative path ("" = root). */
sb_code sb_policy_check(const sb_policy *p, sb_access acc, const char *clean, size_t len, int kind, sb_err *e);
/* For listings (readdir, glob, grep): should this entry be shown at all? */
bool sb_policy_visible(const sb_policy *p, const char *clean, size_t len, int kind);
/* The rules as a view mirrors them (the commands' mount view,
 * confine/rules.c): does a rule of `list` (SB_POLICY_DENY or _ALLOW) match
 * this exact path; could one match it or something below it? */
bool sb_policy_rule_at(const sb_policy *p, int list, const char *path, size_t len);
bool sb_policy_rule_below(const sb_policy *p, int list, const char *dir, size_t len);
/* Does a deny rule cover this path (it or an ancestor)? */
bool sb_policy_denied(const sb_policy *p, const char *path, size_t len);
/* Are there deny or allow rules at all? */
static inline bool sb_policy_has_rules(const sb_policy *p) { return p->deny.n > 0 || p->has_allow; }
/* ... or extension allowlists too: must a walk judge each entry it meets? */
static inline bool sb_policy_judges_entries(const sb_policy *p) {
  return sb_policy_has_rules(p) || p->has_ext_read || p->has_ext_write;
}
/* Does the extension allowlist let contents of this file be read? */
bool sb_policy_ext_ok(const sb_strv *exts, bool has, const char *clean, size_t len);
/* May a link with this target be made in the directory `dir` (its clean
 * real root-relative path)? EESCAPE when it would lead out (lexically: the
 * target need not exist), unless allow_escaping_links. Not a boundary:
 * every use of a link is resolved beneath the root again; this keeps an
 * agent from leaving traps it cannot use. */
sb_code sb_policy_link(const sb_policy *p, const char *dir, size_t dlen, const char *target, size_t tlen, sb_err *e);
sb_code sb_policy_read_size(const sb_policy *p, uint64_t size, sb_err *e);
sb_code sb_policy_write_size(const sb_policy *p, uint64_t size, sb_err *e);

/* Byte and entry budgets (VirtualSandbox max_total_bytes / max_files,
 * ContainerSandbox max_disk_usage). Checked before anything is written. */
typedef struct sb_quota {
  uint64_t max_bytes, used_bytes;
  uint64_t max_nodes, used_nodes;
} sb_quota;

sb_code sb_quota_check(const sb_quota *q, int64_t dbytes, int64_t dnodes, sb_err *e);
void sb_quota_apply(sb_quota *q, int64_t dbytes, int64_t dnodes);

#endif
