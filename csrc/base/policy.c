#include "base/policy.h"

#include <ctype.h>
#include <string.h>

#include "base/glob.h"
#include "base/path.h"

static void strv_free(sb_strv *s, const sb_mem *m) {
  for (size_t i = 0; i < s->n; i++) sb_free(m, s->v[i], s->len[i] + 1);
  sb_free(m, s->v, s->n * sizeof *s->v);
  sb_free(m, s->len, s->n * sizeof *s->len);
  s->v = NULL;
  s->len = NULL;
  s->n = 0;
}

/* Append one string (lower-cased for suffixes). */
static bool strv_add(sb_strv *s, const sb_mem *m, const char *str, size_t len, bool lower) {
  char **v = sb_realloc(m, s->v, s->n * sizeof *v, (s->n + 1) * sizeof *v);
  if (!v) return false;
  s->v = v;
  size_t *l = sb_realloc(m, s->len, s->n * sizeof *l, (s->n + 1) * sizeof *l);
  if (!l) return false;
  s->len = l;
  char *d = sb_memdup(m, str, len);
  if (!d) return false;
  if (lower)
    for (size_t k = 0; k < len; k++) d[k] = (char)tolower((unsigned char)d[k]);
  s->v[s->n] = d;
  s->len[s->n] = len;
  s->n++;
  return true;
}

void sb_policy_init(sb_policy *p) {
  memset(p, 0, sizeof *p);
  p->max_read_bytes = p->max_write_bytes = SB_UNLIMITED;
  p->allow_overwrite = true;
}

void sb_policy_given(sb_policy *p, int list) {
  if (list == SB_POLICY_ALLOW) p->has_allow = true;
  else if (list == SB_POLICY_EXT_READ) p->has_ext_read = true;
  else if (list == SB_POLICY_EXT_WRITE) p->has_ext_write = true;
}

bool sb_policy_add(sb_policy *p, const sb_mem *m, int list, const char *s, size_t len) {
  sb_policy_given(p, list);
  switch (list) {
  case SB_POLICY_DENY: return strv_add(&p->deny, m, s, len, false);
  case SB_POLICY_ALLOW: return strv_add(&p->allow, m, s, len, false);
  case SB_POLICY_EXT_READ: return strv_add(&p->ext_read, m, s, len, true);
  case SB_POLICY_EXT_WRITE: return strv_add(&p->ext_write, m, s, len, true);
  default: return false;
  }
}

void sb_policy_free(sb_policy *p, const sb_mem *m) {
  strv_free(&p->deny, m);
  strv_free(&p->allow, m);
  strv_free(&p->ext_read, m);
  strv_free(&p->ext_write, m);
}

/* A rule covers a path when it matches the path or one of its ancestors:
 * denying "secret" denies everything below it too. Returns the rule index
 * or -1. */
static long rule_covers(const sb_strv *rules, const char *path, size_t len) {
  for (size_t r = 0; r < rules->n; r++) {
    const char *pat = rules->v[r];
    size_t plen = rules->len[r];
    for (size_t end = 0; end <= len; end++) {
      if (end < len && path[end] != '/') continue;
      if (end == 0 && len != 0) continue; /* the root is not an ancestor */
      if (sb_glob_match(pat, plen, path, end)) return (long)r;
    }
  }
  return -1;
}

static bool leads_to_allowed(const sb_strv *allow, const char *path, size_t len) {
  for (size_t r = 0; r < allow->n; r++)
    if (sb_glob_could_match_below(allow->v[r], allow->len[r], path, len)) return true;
  return false;
}

bool sb_policy_denied(const sb_policy *p, const char *path, size_t len) {
  return rule_covers(&p->deny, path, len) >= 0;
}

bool sb_policy_rule_at(const sb_policy *p, int list, const char *path, size_t len) {
  const sb_strv *r = list == SB_POLICY_DENY ? &p->deny : &p->allow;
  for (size_t i = 0; i < r->n; i++)
    if (sb_glob_match(r->v[i], r->len[i], path, len)) return true;
  return false;
}

bool sb_policy_rule_below(const sb_policy *p, int list, const char *dir, size_t len) {
  const sb_strv *r = list == SB_POLICY_DENY ? &p->deny : &p->allow;
  for (size_t i = 0; i < r->n; i++)
    if (sb_glob_could_match_below(r->v[i], r->len[i], dir, len)) return true;
  return false;
}

bool sb_policy_ext_ok(const sb_strv *exts, bool has, const char *clean, size_t len) {
  if (!has) return true;
  const char *base = clean;
  for (size_t i = 0; i < len; i++)
    if (clean[i] == '/') base = clean + i + 1;
  size_t blen = len - (size_t)(base - clean);
  const char *dot = NULL;
  for (size_t i = 1; i < blen; i++)
    if (base[i] == '.') dot = base + i;
  for (size_t k = 0; k < exts->n; k++) {
    size_t elen = exts->len[k];
    if (elen == 0) {
      if (!dot) return true;
      continue;
    }
    if (elen > blen) continue;
    const char *tail = base + blen - elen;
    size_t i = 0;
    while (i < elen && tolower((unsigned char)tail[i]) == exts->v[k][i]) i++;
    if (i == elen) return true;
  }
  return false;
}

sb_code sb_policy_check(const sb_policy *p, sb_access acc, const char *clean, size_t len, int kind, sb_err *e) {
  bool mutating = acc == SB_ACC_WRITE || acc == SB_ACC_MODIFY;
  if (mutating && p->read_only) return sb_fail(e, SB_EACCES, "the sandbox is read-only");
  long r = rule_covers(&p->deny, clean, len);
  if (r >= 0)
    return sb_failf(e, SB_EACCES, "denied by the sandbox rule '%.*s'",
                    (int)(p->deny.len[r] > 100 ? 100 : p->deny.len[r]), p->deny.v[r]);
  if (p->has_allow && rule_covers(&p->allow, clean, len) < 0) {
    bool nav = acc == SB_ACC_LIST && kind != SB_KIND_FILE && leads_to_allowed(&p->allow, clean, len);
    if (!nav) return sb_fail(e, SB_EACCES, "outside the paths the sandbox rules allow");
  }
  if (kind == SB_KIND_FILE || acc == SB_ACC_READ || acc == SB_ACC_WRITE) {
    const sb_strv *x = NULL;
    bool has = false;
    if (acc == SB_ACC_READ) {
      x = &p->ext_read;
      has = p->has_ext_read;
    } else if (mutating) {
      x = &p->ext_write;
      has = p->has_ext_write;
    }
    if (x && !sb_policy_ext_ok(x, has, clean, len))
      return sb_fail(e, SB_EACCES,
                     acc == SB_ACC_READ ? "this file extension may not be read"
                                        : "this file extension may not be written");
  }
  return SB_OK;
}

bool sb_policy_visible(const sb_policy *p, const char *clean, size_t len, int kind) {
  if (rule_covers(&p->deny, clean, len) >= 0) return false;
  if (!p->has_allow || rule_covers(&p->allow, clean, len) >= 0) return true;
  return kind == SB_KIND_DIR && leads_to_allowed(&p->allow, clean, len);
}

sb_code sb_policy_read_size(const sb_policy *p, uint64_t size, sb_err *e) {
  if (size <= p->max_read_bytes) return SB_OK;
  return sb_failf(e, SB_EFBIG, "file is %llu bytes, max_read_bytes is %llu", (unsigned long long)size,
                  (unsigned long long)p->max_read_bytes);
}

sb_code sb_policy_write_size(const sb_policy *p, uint64_t size, sb_err *e) {
  if (size <= p->max_write_bytes) return SB_OK;
  return sb_failf(e, SB_EFBIG, "content is %llu bytes, max_write_bytes is %llu", (unsigned long long)size,
                  (unsigned long long)p->max_write_bytes);
}

sb_code sb_quota_check(const sb_quota *q, int64_t dbytes, int64_t dnodes, sb_err *e) {
  if (dbytes > 0 && (uint64_t)dbytes > q->max_bytes - (q->used_bytes < q->max_bytes ? q->used_bytes : q->max_bytes))
    return sb_failf(e, SB_ENOSPC, "the sandbox byte limit (%llu) would be exceeded", (unsigned long long)q->max_bytes);
  if (dnodes > 0 && (uint64_t)dnodes > q->max_nodes - (q->used_nodes < q->max_nodes ? q->used_nodes : q->max_nodes))
    return sb_failf(e, SB_ENOSPC, "the sandbox entry limit (%llu) would be exceeded", (unsigned long long)q->max_nodes);
  return SB_OK;
}

void sb_quota_apply(sb_quota *q, int64_t dbytes, int64_t dnodes) {
  q->used_bytes = (uint64_t)((int64_t)q->used_bytes + dbytes);
  q->used_nodes = (uint64_t)((int64_t)q->used_nodes + dnodes);
}

sb_code sb_policy_link(const sb_policy *p, const char *dir, size_t dlen, const char *target, size_t tlen, sb_err *e) {
  if (tlen == 0) return sb_fail(e, SB_EINVAL, "a symbolic link needs a target");
  if (memchr(target, '\0', tlen)) return sb_fail(e, SB_EINVAL, "the link target contains a NUL byte");
  if (tlen > SB_PATH_MAX) return sb_failf(e, SB_ENAMETOOLONG, "link target longer than %d bytes", SB_PATH_MAX);
  if (p->allow_escaping_links) return SB_OK;
  /* A ".." after a name steps back out of whatever that name is when the
   * link is followed (a link to anywhere, made later): its meaning is not
   * the text's. Only leading ".." are judged as written. */
  bool named = false;
  for (size_t i = 0; i < tlen;) {
    size_t j = i;
    while (j < tlen && target[j] != '/') j++;
    size_t n = j - i;
    if (sb_path_is_dotdot(target + i, n) && named)
      return sb_fail(e, SB_EESCAPE,
                     "a '..' after a name in a link target leads wherever that name leads when "
                     "the link is followed, not where the text says: write the target without it (\"b\" for "
                     "\"a/../b\")");
    if (n && !sb_path_is_dot(target + i, n) && !sb_path_is_dotdot(target + i, n)) named = true;
    i = j + 1;
  }
  char out[2 * SB_PATH_MAX + 2];
  if (sb_link_join(dir, dlen, target, tlen, out, sizeof out) < 0)
    return sb_fail(e, SB_EESCAPE,
                   target[0] == '/'
                       ? "the link target is absolute: links lead only within the sandbox, relative to where they are "
                         "(allow_escaping_links = true makes it anyway; reading through it stays EESCAPE)"
                       : "the link target leads outside the sandbox (allow_escaping_links = true makes it anyway; "
                         "reading through it stays EESCAPE)");
  return SB_OK;
}
