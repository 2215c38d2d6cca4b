/* glob, grep and snapshot: searches over a backend walk.
 *
 * A walk runs in C only (no Lua call while a backend holds directory fds or
 * buffers) and collects records into sb->results; results are pushed after
 * it ends. Both buffers belong to the sandbox, so a memory error raised
 * while pushing leaks nothing. Both backends walk in name order, so a truncated result is the
 * same on both. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "base/glob.h"
#include "lua/object.h"

#define DEFAULT_MAX_RESULTS 1000
#define MAX_RESULTS_LIMIT 1000000
#define MAX_VISITS 2000000 /* entries a single search may look at */
#define GREP_TEXT_MAX 2000 /* bytes of a matching line kept */
#define GREP_BINARY_PROBE 8000

/* Records in sb->results: u32 pathlen, u32 line, u32 textlen, path, text. */
typedef struct rec {
  uint32_t plen, line, tlen;
} rec;

typedef struct search {
  sb_sandbox *sb;
  sb_err *e;
  const char *pat; /* glob (glob) or file filter (grep) */
  size_t plen;
  bool filter_base; /* grep filter without '/': match the base name */
  size_t count, max, visits;
  bool truncated, failed;
  /* grep */
  bool literal, icase;
  const char *needle;
  size_t nlen;
  regex_t re;
  /* snapshot */
  uint64_t bytes, max_bytes;
  bool empty_dirs;
} search;

static bool add_rec(search *s, const char *path, size_t plen, uint32_t line,
                    const char *text, size_t tlen) {
  rec r = {(uint32_t)plen, line, (uint32_t)tlen};
  const sb_mem *m = &s->sb->mem;
  sb_buf *out = &s->sb->results;
  if (sb_buf_append(m, out, &r, sizeof r) != 0 || sb_buf_append(m, out, path, plen) != 0 ||
      sb_buf_append(m, out, text, tlen) != 0) {
    sb_fail(s->e, SB_ENOSPC, "out of memory");
    s->failed = true;
    return false;
  }
  s->count++;
  return true;
}

/* Index of the records (in sb->index), to be sorted. */
static const char **index_recs(search *s) {
  sb_buf *ix = &s->sb->index;
  ix->len = 0;
  if (sb_buf_reserve(&s->sb->mem, ix, (s->count + 1) * sizeof(char *)) != 0) return NULL;
  const char **idx = (const char **)(void *)ix->p;
  const char *p = s->sb->results.p;
  for (size_t i = 0; i < s->count; i++) {
    rec r;
    memcpy(&r, p, sizeof r);
    idx[i] = p;
    p += sizeof r + r.plen + r.tlen;
  }
  return idx;
}

static int cmp_rec(const void *a, const void *b) {
  const char *x = *(const char *const *)a, *y = *(const char *const *)b;
  rec rx, ry;
  memcpy(&rx, x, sizeof rx);
  memcpy(&ry, y, sizeof ry);
  size_t n = rx.plen < ry.plen ? rx.plen : ry.plen;
  int c = memcmp(x + sizeof rx, y + sizeof ry, n);
  if (c) return c;
  if (rx.plen != ry.plen) return rx.plen < ry.plen ? -1 : 1;
  return (rx.line > ry.line) - (rx.line < ry.line);
}

static bool visit_budget(search *s) {
  if (++s->visits <= MAX_VISITS) return true;
  s->truncated = true;
  return false;
}

static bool visible(search *s, const char *rel, size_t rlen, int type) {
  const sb_policy *pol = &s->sb->policy;
  if (!pol->deny.n && !pol->has_allow) return true;
  return sb_policy_visible(pol, rel, rlen, type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE);
}

/* Normalise a glob pattern: strip the cwd prefix of an absolute pattern,
 * drop "." and empty components, refuse "..". */
static sb_code prepare_pattern(sb_sandbox *sb, const char *raw, size_t n, char *out,
                               size_t *olen, sb_err *e) {
  if (n == 0) return sb_fail(e, SB_EINVAL, "empty pattern");
  if (memchr(raw, '\0', n)) return sb_fail(e, SB_EINVAL, "pattern contains a NUL byte");
  if (n > SB_PATH_MAX) return sb_fail(e, SB_EINVAL, "pattern too long");
  size_t i = 0, len = 0;
  if (raw[0] == '/') {
    size_t ci = 0;
    while (ci < sb->cwdlen) {
      while (ci < sb->cwdlen && sb->cwd[ci] == '/') ci++;
      if (ci >= sb->cwdlen) break;
      size_t cb = ci;
      while (ci < sb->cwdlen && sb->cwd[ci] != '/') ci++;
      while (i < n && raw[i] == '/') i++;
      size_t pb = i;
      while (i < n && raw[i] != '/') i++;
      if (i - pb != ci - cb || memcmp(raw + pb, sb->cwd + cb, ci - cb) != 0)
        return sb_fail(e, SB_EESCAPE, "absolute patterns must lie under the sandbox root");
    }
  }
  while (i < n) {
    while (i < n && raw[i] == '/') i++;
    size_t b = i;
    while (i < n && raw[i] != '/') i++;
    size_t cl = i - b;
    if (cl == 0 || (cl == 1 && raw[b] == '.')) continue;
    if (cl == 2 && raw[b] == '.' && raw[b + 1] == '.')
      return sb_fail(e, SB_EINVAL, "patterns may not contain '..'");
    if (len) out[len++] = '/';
    memcpy(out + len, raw + b, cl);
    len += cl;
  }
  out[len] = '\0';
  *olen = len;
  return SB_OK;
}

/* Drop what a search collected, keeping small buffers for reuse. */
static void search_done(sb_sandbox *sb) {
  sb_buf_trim(&sb->mem, &sb->results, 1 << 20);
  sb_buf_trim(&sb->mem, &sb->index, 1 << 20);
  sb_buf_trim(&sb->mem, &sb->scratch, 1 << 20);
}

static lua_Integer max_results(lua_State *L, int idx) {
  lua_Integer m = sb_lua_opt_int(L, idx, "max_results", DEFAULT_MAX_RESULTS);
  if (m < 1 || m > MAX_RESULTS_LIMIT)
    luaL_error(L, "max_results must be between 1 and %d", MAX_RESULTS_LIMIT);
  return m;
}

/* Push the collected records; with_text = grep records. */
static int push_results(lua_State *L, search *s, bool grep) {
  const char **idx = index_recs(s);
  if (!idx) {
    sb_fail(s->e, SB_ENOSPC, "out of memory");
    return -1;
  }
  qsort(idx, s->count, sizeof *idx, cmp_rec);
  lua_createtable(L, (int)s->count, 1);
  int t = lua_gettop(L);
  for (size_t i = 0; i < s->count; i++) {
    rec r;
    memcpy(&r, idx[i], sizeof r);
    const char *path = idx[i] + sizeof r;
    if (grep) {
      lua_createtable(L, 0, 3);
      lua_pushlstring(L, path, r.plen);
      lua_setfield(L, -2, "path");
      lua_pushinteger(L, r.line);
      lua_setfield(L, -2, "line");
      lua_pushlstring(L, path + r.plen, r.tlen);
      lua_setfield(L, -2, "text");
    } else {
      lua_pushlstring(L, path, r.plen);
    }
    lua_rawseti(L, t, (lua_Integer)i + 1);
  }
  if (s->truncated) {
    lua_pushboolean(L, 1);
    lua_setfield(L, t, "truncated");
  }
  return 0;
}

/* ---- glob --------------------------------------------------------------- */

static int glob_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent,
                   const void *ref) {
  (void)ref;
  search *s = ud;
  if (!visit_budget(s)) return SB_WALK_STOP;
  if (!visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
  if (sb_glob_match(s->pat, s->plen, rel, rlen)) {
    if (s->count >= s->max) {
      s->truncated = true;
      return SB_WALK_STOP;
    }
    if (!add_rec(s, rel, rlen, 0, NULL, 0)) return SB_WALK_STOP;
  }
  if (ent->type == SB_T_DIR && sb_glob_could_match_below(s->pat, s->plen, rel, rlen))
    return SB_WALK_CONTINUE;
  return SB_WALK_SKIP;
}

static const sb_optspec glob_opts[] = {{"max_results", LUA_TNUMBER}, {NULL, 0}};

static int m_glob(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING) luaL_typeerror(L, 2, "string");
  sb_lua_check_opts(L, 3, "glob", glob_opts);
  sb_op opst, *op = &opst;
  op->name = "glob";
  op->parsed = op->no_path = false;
  op->show_raw = true;
  op->raw = lua_tolstring(L, 2, &op->rawlen);
  char pat[SB_PATH_MAX + 1];
  search s = {.sb = sb, .e = &op->e, .pat = pat, .max = (size_t)max_results(L, 3)};
  if (prepare_pattern(sb, op->raw, op->rawlen, pat, &s.plen, &op->e) != SB_OK)
    return sb_lua_fail(L, sb, op);
  size_t pre = sb_glob_static_prefix(pat, s.plen);
  sb_path *start = &op->p;
  if (sb_path_from_rel(start, pat, pre, &op->e) != SB_OK) return sb_lua_fail(L, sb, op);
  op->parsed = true;
  sb->results.len = 0;
  sb_code c = sb_lua_guard(sb, op, start, SB_ACC_LIST, SB_KIND_DIR);
  sb_stat st;
  if (c == SB_OK) c = sb->be->stat(sb, start, &st, &op->e);
  if (c == SB_OK && st.type != SB_T_DIR) c = SB_ENOTDIR; /* a prefix names directories */
  if (c == SB_OK) {
    /* the walk visits what is below the start; the start itself may match */
    if (pre && sb_glob_match(pat, s.plen, start->buf, start->len))
      add_rec(&s, start->buf, start->len, 0, NULL, 0);
    c = sb->be->walk(sb, start, glob_cb, &s, &op->e);
  }
  if (c == SB_ENOENT || c == SB_ENOTDIR || c == SB_EACCES) c = SB_OK; /* nothing matches */
  if (c != SB_OK || s.failed || push_results(L, &s, false) != 0) {
    search_done(sb);
    return sb_lua_fail(L, sb, op);
  }
  search_done(sb);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)s.count);
  return 1;
}

/* ---- grep --------------------------------------------------------------- */

static bool line_matches(search *s, const char *b, size_t n) {
  if (s->literal && !s->icase) return s->nlen == 0 || memmem(b, n, s->needle, s->nlen);
  regmatch_t m = {.rm_so = 0, .rm_eo = (regoff_t)n};
  return regexec(&s->re, b, 1, &m, REG_STARTEND) == 0;
}

static int grep_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent,
                   const void *ref) {
  search *s = ud;
  if (!visit_budget(s)) return SB_WALK_STOP;
  if (!visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
  if (ent->type != SB_T_FILE) return ent->type == SB_T_DIR ? SB_WALK_CONTINUE : SB_WALK_SKIP;
  if (s->pat) {
    const char *subj = rel;
    if (s->filter_base) subj = rel + rlen - ent->namelen;
    if (!sb_glob_match(s->pat, s->plen, subj, rlen - (size_t)(subj - rel))) return SB_WALK_CONTINUE;
  }
  const sb_policy *pol = &s->sb->policy;
  if (!sb_policy_ext_ok(&pol->ext_read, pol->has_ext_read, rel, rlen)) return SB_WALK_CONTINUE;
  sb_view v;
  sb_err ignore;
  if (s->sb->be->read_ref(s->sb, ref, &v, &ignore) != SB_OK) return SB_WALK_CONTINUE;
  if (memchr(v.p, '\0', v.len < GREP_BINARY_PROBE ? v.len : GREP_BINARY_PROBE))
    return SB_WALK_CONTINUE; /* binary */
  const char *p = v.p, *end = v.p + v.len;
  uint32_t line = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    line++;
    size_t n = (size_t)(le - p);
    if (n && p[n - 1] == '\r') n--;
    if (line_matches(s, p, n)) {
      if (s->count >= s->max) {
        s->truncated = true;
        return SB_WALK_STOP;
      }
      if (!add_rec(s, rel, rlen, line, p, n > GREP_TEXT_MAX ? GREP_TEXT_MAX : n))
        return SB_WALK_STOP;
    }
    p = nl ? nl + 1 : end;
  }
  return SB_WALK_CONTINUE;
}

static const sb_optspec grep_opts[] = {
    {"path", LUA_TSTRING},        {"glob", LUA_TSTRING},         {"literal", LUA_TBOOLEAN},
    {"ignore_case", LUA_TBOOLEAN}, {"max_results", LUA_TNUMBER}, {NULL, 0}};

/* ERE with glibc's back-references can take exponential time; refuse them. */
static bool has_backref(const char *p, size_t n) {
  for (size_t i = 0; i + 1 < n; i++) {
    if (p[i] != '\\') continue;
    if (p[i + 1] >= '1' && p[i + 1] <= '9') return true;
    i++;
  }
  return false;
}

static sb_code compile(search *s, const char *pat, size_t n, sb_err *e) {
  if (memchr(pat, '\0', n)) return sb_fail(e, SB_EINVAL, "pattern contains a NUL byte");
  if (s->literal && !s->icase) return SB_OK;
  int flags = REG_EXTENDED | REG_NOSUB | (s->icase ? REG_ICASE : 0);
  int rc;
  if (s->literal) {
    /* case-insensitive literal: escape every byte's meaning */
    char *esc = sb_malloc(&s->sb->mem, 2 * n + 1);
    if (!esc) return sb_fail(e, SB_ENOSPC, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      if (strchr(".[]()*+?{}|^$\\", pat[i])) esc[k++] = '\\';
      esc[k++] = pat[i];
    }
    esc[k] = '\0';
    rc = regcomp(&s->re, esc, flags);
    sb_free(&s->sb->mem, esc, 2 * n + 1);
  } else {
    if (has_backref(pat, n))
      return sb_fail(e, SB_EINVAL, "back-references are not supported in search patterns");
    rc = regcomp(&s->re, pat, flags);
  }
  if (rc != 0) {
    char buf[128];
    /* glibc answers REG_BADPAT for an unclosed '[' in ERE */
    if (rc == REG_BADPAT && memchr(pat, '[', n) && !memchr(pat, ']', n)) rc = REG_EBRACK;
    const char *why = rc == REG_EBRACK ? "a '[' is not closed"
                    : rc == REG_EPAREN ? "a '(' or ')' has no partner"
                    : rc == REG_EBRACE ? "a '{' is not closed"
                    : rc == REG_BADBR ? "a {n,m} repetition is malformed"
                    : rc == REG_BADRPT ? "a repetition (*, +, ?, {n}) has nothing to repeat"
                    : rc == REG_EESCAPE ? "the pattern ends with a lone backslash"
                    : rc == REG_ERANGE ? "a range in [...] is reversed or invalid"
                    : rc == REG_ECTYPE ? "an unknown [:class:] name"
                    : (regerror(rc, &s->re, buf, sizeof buf), buf);
    return sb_failf(e, SB_EINVAL, "invalid regular expression '%.60s': %s (pass literal = true to search for the text as it is)",
                    pat, why);
  }
  return SB_OK;
}

static int m_grep(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  if (lua_type(L, 2) != LUA_TSTRING) luaL_typeerror(L, 2, "string");
  sb_lua_check_opts(L, 3, "grep", grep_opts);
  size_t plen, flen = 0, dlen = 0;
  const char *pattern = lua_tolstring(L, 2, &plen);
  const char *filter = sb_lua_opt_str(L, 3, "glob", &flen);
  const char *dir = sb_lua_opt_str(L, 3, "path", &dlen);
  sb_op opst, *op = &opst;
  op->name = "grep";
  op->parsed = op->show_raw = op->no_path = false;
  op->raw = dir ? dir : ".";
  op->rawlen = dir ? dlen : 1;
  char fpat[SB_PATH_MAX + 1];
  search s = {.sb = sb, .e = &op->e, .max = (size_t)max_results(L, 3),
              .literal = sb_lua_opt_bool(L, 3, "literal", false),
              .icase = sb_lua_opt_bool(L, 3, "ignore_case", false),
              .needle = pattern, .nlen = plen};
  if (filter) {
    if (prepare_pattern(sb, filter, flen, fpat, &s.plen, &op->e) != SB_OK)
      return sb_lua_fail(L, sb, op);
    s.pat = fpat;
    s.filter_base = memchr(fpat, '/', s.plen) == NULL;
  }
  sb_code c = dir ? sb_path_parse(&op->p, dir, dlen, sb->cwd, sb->cwdlen, &op->e)
                  : sb_path_from_rel(&op->p, "", 0, &op->e);
  if (c != SB_OK) return sb_lua_fail(L, sb, op);
  op->parsed = true;
  if (sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_UNKNOWN) != SB_OK)
    return sb_lua_fail(L, sb, op);
  if (compile(&s, pattern, plen, &op->e) != SB_OK) {
    op->no_path = true; /* about the pattern, not a path */
    return sb_lua_fail(L, sb, op);
  }
  sb->results.len = 0;
  c = sb->be->walk(sb, &op->p, grep_cb, &s, &op->e);
  if (!(s.literal && !s.icase)) regfree(&s.re);
  if (c != SB_OK || s.failed || push_results(L, &s, true) != 0) {
    search_done(sb);
    return sb_lua_fail(L, sb, op);
  }
  search_done(sb);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)s.count);
  return 1;
}

/* ---- snapshot ----------------------------------------------------------- */

static int snap_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent,
                   const void *ref) {
  (void)ref;
  search *s = ud;
  if (!visit_budget(s)) return SB_WALK_STOP;
  if (!visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
  if (ent->type == SB_T_DIR) {
    /* line = 1 marks a directory record */
    if (s->empty_dirs && !add_rec(s, rel, rlen, 1, NULL, 0)) return SB_WALK_STOP;
    return SB_WALK_CONTINUE;
  }
  if (ent->type != SB_T_FILE) return SB_WALK_CONTINUE;
  s->bytes += ent->size;
  if (s->bytes > s->max_bytes) {
    sb_failf(s->e, SB_ENOTSUP, "snapshot would exceed %llu bytes (option max_bytes)",
             (unsigned long long)s->max_bytes);
    s->failed = true;
    return SB_WALK_STOP;
  }
  return add_rec(s, rel, rlen, 0, NULL, 0) ? SB_WALK_CONTINUE : SB_WALK_STOP;
}

static const sb_optspec snap_opts[] = {
    {"max_bytes", LUA_TNUMBER}, {"directories", LUA_TBOOLEAN}, {NULL, 0}};

static int m_snapshot(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_check_opts(L, 2, "snapshot", snap_opts);
  uint64_t def = sb->quota.max_bytes != SB_UNLIMITED ? sb->quota.max_bytes : 64u << 20;
  lua_Integer mb = sb_lua_opt_int(L, 2, "max_bytes", (lua_Integer)(def > INT64_MAX ? INT64_MAX : def));
  sb_op opst, *op = &opst;
  op->name = "snapshot";
  op->parsed = true;
  op->show_raw = op->no_path = false;
  search s = {.sb = sb, .e = &op->e, .max = SIZE_MAX,
              .max_bytes = mb < 0 ? 0 : (uint64_t)mb,
              .empty_dirs = sb_lua_opt_bool(L, 2, "directories", false)};
  sb_path_from_rel(&op->p, "", 0, &op->e);
  sb->results.len = 0;
  sb_code c = sb->be->walk(sb, &op->p, snap_cb, &s, &op->e);
  if (c != SB_OK || s.failed) {
    search_done(sb);
    return sb_lua_fail(L, sb, op);
  }
  /* The path list goes into a Lua table first: reading may raise. */
  lua_createtable(L, 0, (int)s.count);
  int t = lua_gettop(L);
  lua_createtable(L, (int)s.count, 0);
  int paths = lua_gettop(L);
  const char *p = sb->results.p;
  for (size_t i = 0; i < s.count; i++) {
    rec r;
    memcpy(&r, p, sizeof r);
    lua_pushlstring(L, p + sizeof r, r.plen);
    if (r.line) { /* a directory: "path/" */
      lua_pushliteral(L, "/");
      lua_concat(L, 2);
    }
    lua_rawseti(L, paths, (lua_Integer)i + 1);
    p += sizeof r + r.plen + r.tlen;
  }
  search_done(sb);
  uint64_t total = 0;
  for (size_t i = 1; i <= s.count; i++) {
    lua_rawgeti(L, paths, (lua_Integer)i);
    size_t n;
    const char *rel = lua_tolstring(L, -1, &n);
    if (n && rel[n - 1] == '/') {
      lua_pushboolean(L, 1);
      lua_rawset(L, t);
      continue;
    }
    sb_path *fp = &op->p;
    sb_view v;
    if (sb_path_from_rel(fp, rel, n, &op->e) != SB_OK) return sb_lua_fail(L, sb, op);
    c = sb->be->read(sb, fp, &v, &op->e);
    if (c == SB_ENOENT) { /* vanished meanwhile (a command deleted it) */
      lua_pop(L, 1);
      continue;
    }
    if (c != SB_OK) return sb_lua_fail(L, sb, op);
    total += v.len;
    lua_pushlstring(L, v.p, v.len);
    lua_rawset(L, t);
  }
  lua_pop(L, 1); /* paths */
  search_done(sb);
  sb_path_from_rel(&op->p, "", 0, &op->e);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)total);
  return 1;
}

void sb_lua_open_search(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"glob", m_glob}, {"grep", m_grep}, {"snapshot", m_snapshot}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
