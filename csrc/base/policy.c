#include "base/policy.h"

#include <ctype.h>
#include <string.h>
#include <lauxlib.h>

#include "base/glob.h"

static void strv_free(sb_strv *s, const sb_mem *m) {
  for (size_t i = 0; i < s->n; i++) sb_free(m, s->v[i], s->len[i] + 1);
  sb_free(m, s->v, s->n * sizeof *s->v);
  sb_free(m, s->len, s->n * sizeof *s->len);
  s->v = NULL;
  s->len = NULL;
  s->n = 0;
}

/* Load t[field] (an array of strings) into s; returns whether it was set. */
static bool strv_load(lua_State *L, int t, const char *field, sb_strv *s,
                      const sb_mem *m, bool lower) {
  if (lua_getfield(L, t, field) != LUA_TTABLE) {
    lua_pop(L, 1);
    return false;
  }
  size_t n = (size_t)luaL_len(L, -1);
  if (n) {
    s->v = sb_malloc(m, n * sizeof *s->v);
    s->len = sb_malloc(m, n * sizeof *s->len);
    if (!s->v || !s->len) {
      sb_free(m, s->v, n * sizeof *s->v);
      sb_free(m, s->len, n * sizeof *s->len);
      s->v = NULL;
      s->len = NULL;
      luaL_error(L, "not enough memory");
    }
  }
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i + 1);
    size_t len;
    const char *str = lua_tolstring(L, -1, &len);
    char *d = str ? sb_memdup(m, str, len) : NULL;
    lua_pop(L, 1);
    if (!d) luaL_error(L, "not enough memory");
    if (lower)
      for (size_t k = 0; k < len; k++) d[k] = (char)tolower((unsigned char)d[k]);
    s->v[i] = d;
    s->len[i] = len;
    s->n = i + 1;
  }
  lua_pop(L, 1);
  return true;
}

static uint64_t size_field(lua_State *L, int t, const char *f, uint64_t def) {
  uint64_t v = def;
  if (lua_getfield(L, t, f) == LUA_TNUMBER) {
    lua_Integer i = lua_tointeger(L, -1);
    v = i < 0 ? 0 : (uint64_t)i;
  }
  lua_pop(L, 1);
  return v;
}

static bool bool_field(lua_State *L, int t, const char *f, bool def) {
  bool v = def;
  if (lua_getfield(L, t, f) == LUA_TBOOLEAN) v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

void sb_policy_load(lua_State *L, int idx, sb_policy *p, const sb_mem *m) {
  idx = lua_absindex(L, idx);
  p->max_read_bytes = size_field(L, idx, "max_read_bytes", 10u << 20);
  p->max_write_bytes = size_field(L, idx, "max_write_bytes", 5u << 20);
  p->allow_overwrite = bool_field(L, idx, "allow_overwrite", true);
  p->read_only = bool_field(L, idx, "read_only", false);
  if (lua_getfield(L, idx, "rules") == LUA_TTABLE) {
    int r = lua_gettop(L);
    strv_load(L, r, "deny", &p->deny, m, false);
    p->has_allow = strv_load(L, r, "allow", &p->allow, m, false);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, idx, "extensions") == LUA_TTABLE) {
    int x = lua_gettop(L);
    p->has_ext_read = strv_load(L, x, "read", &p->ext_read, m, true);
    p->has_ext_write = strv_load(L, x, "write", &p->ext_write, m, true);
  }
  lua_pop(L, 1);
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

sb_code sb_policy_check(const sb_policy *p, sb_access acc, const char *clean,
                        size_t len, int kind, sb_err *e) {
  bool mutating = acc == SB_ACC_WRITE || acc == SB_ACC_MODIFY;
  if (mutating && p->read_only) return sb_fail(e, SB_EACCES, "the sandbox is read-only");
  long r = rule_covers(&p->deny, clean, len);
  if (r >= 0)
    return sb_failf(e, SB_EACCES, "denied by the sandbox rule '%.*s'",
                    (int)(p->deny.len[r] > 100 ? 100 : p->deny.len[r]), p->deny.v[r]);
  if (p->has_allow && rule_covers(&p->allow, clean, len) < 0) {
    bool nav = acc == SB_ACC_LIST && kind != SB_KIND_FILE &&
               leads_to_allowed(&p->allow, clean, len);
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
  return sb_failf(e, SB_EFBIG, "file is %llu bytes, max_read_bytes is %llu",
                  (unsigned long long)size, (unsigned long long)p->max_read_bytes);
}

sb_code sb_policy_write_size(const sb_policy *p, uint64_t size, sb_err *e) {
  if (size <= p->max_write_bytes) return SB_OK;
  return sb_failf(e, SB_EFBIG, "content is %llu bytes, max_write_bytes is %llu",
                  (unsigned long long)size, (unsigned long long)p->max_write_bytes);
}

sb_code sb_quota_check(const sb_quota *q, int64_t dbytes, int64_t dnodes, sb_err *e) {
  if (dbytes > 0 && (uint64_t)dbytes > q->max_bytes - (q->used_bytes < q->max_bytes ? q->used_bytes : q->max_bytes))
    return sb_failf(e, SB_ENOSPC, "the sandbox byte limit (%llu) would be exceeded",
                    (unsigned long long)q->max_bytes);
  if (dnodes > 0 && (uint64_t)dnodes > q->max_nodes - (q->used_nodes < q->max_nodes ? q->used_nodes : q->max_nodes))
    return sb_failf(e, SB_ENOSPC, "the sandbox entry limit (%llu) would be exceeded",
                    (unsigned long long)q->max_nodes);
  return SB_OK;
}

void sb_quota_apply(sb_quota *q, int64_t dbytes, int64_t dnodes) {
  q->used_bytes = (uint64_t)((int64_t)q->used_bytes + dbytes);
  q->used_nodes = (uint64_t)((int64_t)q->used_nodes + dnodes);
}
