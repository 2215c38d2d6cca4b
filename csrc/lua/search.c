/* glob, grep and snapshot for Lua: options, the search (search/search.c)
 * in a userdata that frees it even when pushing raises, results, audit. */
#include "lua/search.h"

#include <string.h>

#include "base/glob.h"
#include "lua/object.h"
#include "lua/options.h"
#include "search/search.h"

#define DEFAULT_MAX_RESULTS 1000

static int search_gc(lua_State *L) {
  sb_search_free(lua_touserdata(L, 1));
  return 0;
}

/* A search owned by a userdata on the stack (collected with the call). */
static sb_search *new_search(lua_State *L, sb_sandbox *sb, sb_err *e, size_t max) {
  sb_search *s = lua_newuserdatauv(L, sizeof *s, 0);
  sb_search_init(s, &sb->fs, e, max);
  if (luaL_newmetatable(L, "sandbox.Search")) {
    lua_pushcfunction(L, search_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return s;
}

static size_t max_results(lua_State *L, int idx) {
  lua_Integer m = sb_lua_opt_int(L, idx, "max_results", DEFAULT_MAX_RESULTS);
  if (m < 1 || m > SB_SEARCH_MAX_RESULTS) luaL_error(L, "max_results must be between 1 and %d", SB_SEARCH_MAX_RESULTS);
  return (size_t)m;
}

/* Result keys, interned once as upvalues of the search methods (a
 * lua_setfield per field looks its C string up each time). */
enum { K_PATH = 1, K_LINE, K_TEXT, K_COUNT, K_CONTEXT, K_END_LINE, K_N = K_END_LINE };
static const char *const KEYS[] = {"path", "line", "text", "count", "context", "end_line"};

static void set_key(lua_State *L, int t, int key) {
  lua_pushvalue(L, lua_upvalueindex(key));
  lua_insert(L, -2);
  lua_rawset(L, t);
}

/* Push the records in order: glob's and files mode's as paths, grep's as
 * {path, line, text} (context = true for a context line, end_line for a
 * match over several lines), count mode's as {path, count}. A file's path
 * is made into a Lua string once for all its records. */
static void push_records(lua_State *L, sb_search *s, bool grep) {
  lua_createtable(L, (int)s->count, 1);
  int t = lua_gettop(L);
  lua_pushnil(L); /* the last path as a Lua string */
  int last = t + 1;
  const char *lp = NULL;
  size_t ll = 0;
  for (size_t i = 0; i < s->count; i++) {
    sb_hit h;
    sb_search_hit(s, i, &h);
    if (!lp || h.plen != ll || memcmp(h.path, lp, ll) != 0) {
      lua_pushlstring(L, h.path, h.plen);
      lua_replace(L, last);
      lp = h.path;
      ll = h.plen;
    }
    if (!grep || s->mode == SB_GREP_FILES) {
      lua_pushvalue(L, last);
    } else {
      lua_createtable(L, 0, 3);
      int r = lua_gettop(L);
      lua_pushvalue(L, last);
      set_key(L, r, K_PATH);
      lua_pushinteger(L, h.line);
      if (h.kind == SB_HIT_COUNT) {
        set_key(L, r, K_COUNT);
      } else {
        set_key(L, r, K_LINE);
        lua_pushlstring(L, h.text, h.tlen);
        set_key(L, r, K_TEXT);
        if (h.kind == SB_HIT_CONTEXT) {
          lua_pushboolean(L, 1);
          set_key(L, r, K_CONTEXT);
        } else if (h.end_line > h.line) {
          lua_pushinteger(L, h.end_line);
          set_key(L, r, K_END_LINE);
        }
      }
    }
    lua_rawseti(L, t, (lua_Integer)i + 1);
  }
  lua_pop(L, 1); /* the last path */
  if (s->truncated) {
    lua_pushboolean(L, 1);
    lua_setfield(L, t, "truncated");
  }
}

/* Content mode's records as rg -n --no-heading prints them, in one string
 * (no table a hit: SPEC §12's "lines" mode; made by the search as it
 * went, search/search.h), the number of records, and true when truncated. */
static int push_lines(lua_State *L, sb_search *s) {
  size_t len;
  const char *text = sb_search_lines(s, &len);
  if (!text) return -1;
  lua_pushlstring(L, text, len);
  lua_pushinteger(L, (lua_Integer)s->count);
  lua_pushboolean(L, s->truncated);
  return 3;
}

/* The results on the stack: how many values (1, or 3 in "lines" mode), or -1 (out of memory). */
static int push_results(lua_State *L, sb_search *s, bool grep) {
  if (grep && s->lines && s->mode == SB_GREP_CONTENT) return push_lines(L, s);
  if (!sb_search_sorted(s)) return -1;
  push_records(L, s, grep);
  return 1;
}

/* What the walk leaves out: options ignored (nothing) and hidden. */
static void walk_opts(lua_State *L, int idx, sb_search *s) {
  s->everything = sb_lua_opt_bool(L, idx, "ignored", false);
  s->hidden = sb_lua_opt_bool(L, idx, "hidden", false);
}

static const sb_optspec glob_opts[] = {{"max_results", LUA_TNUMBER},
                                       {"sort", LUA_TSTRING},
                                       {"ignored", LUA_TBOOLEAN},
                                       {"hidden", LUA_TBOOLEAN},
                                       {NULL, 0}};

sb_code sb_lua_glob_prepare(lua_State *L, sb_sandbox *sb, sb_op *op, sb_search *s, char *pat, bool *nothing) {
  op->show_raw = true;
  op->raw = lua_tolstring(L, 2, &op->rawlen);
  *nothing = false;
  if (sb_search_pattern(sb->cwd, sb->cwdlen, op->raw, op->rawlen, pat, &s->plen, &op->e) != SB_OK) return op->e.code;
  s->pat = pat;
  walk_opts(L, 3, s);
  /* a pattern naming a dot entry asks for hidden ones */
  if (pat[0] == '.' || strstr(pat, "/.")) s->hidden = true;
  size_t sl;
  const char *sort = sb_lua_opt_str(L, 3, "sort", &sl);
  if (sort && strcmp(sort, "mtime") == 0) s->sort_mtime = true;
  else if (sort && strcmp(sort, "path") != 0) luaL_error(L, "glob: option 'sort' must be \"path\" or \"mtime\"");
  size_t pre = sb_glob_static_prefix(pat, s->plen);
  if (sb_path_from_rel(&op->p, pat, pre, &op->e) != SB_OK) return op->e.code;
  op->parsed = true;
  sb_code c = sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_DIR);
  if (c == SB_EACCES) *nothing = true, c = SB_OK; /* nothing matches */
  return c;
}

void sb_lua_glob_check(lua_State *L) {
  if (lua_type(L, 2) != LUA_TSTRING) luaL_typeerror(L, 2, "string");
  sb_lua_check_opts(L, 3, "glob", glob_opts);
}

static int m_glob(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_glob_check(L);
  SB_OP(op, "glob");
  char pat[SB_PATH_MAX + 1];
  sb_search *s = new_search(L, sb, &op->e, max_results(L, 3));
  bool nothing;
  sb_code c = sb_lua_glob_prepare(L, sb, op, s, pat, &nothing);
  if (c == SB_OK && !nothing) c = sb_search_glob(s, &op->p);
  if (c != SB_OK || push_results(L, s, false) < 0) return sb_lua_fail(L, sb, op);
  sb_search_free(s);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)lua_rawlen(L, -1));
  return 1;
}

static const sb_optspec grep_opts[] = {{"path", LUA_TSTRING},        {"glob", LUA_TSTRING},
                                       {"literal", LUA_TBOOLEAN},    {"ignore_case", LUA_TBOOLEAN},
                                       {"max_results", LUA_TNUMBER}, {"mode", LUA_TSTRING},
                                       {"before", LUA_TNUMBER},      {"after", LUA_TNUMBER},
                                       {"multiline", LUA_TBOOLEAN},  {"ignored", LUA_TBOOLEAN},
                                       {"hidden", LUA_TBOOLEAN},     {"type_glob", LUA_TSTRING},
                                       {"threads", LUA_TNUMBER},     {NULL, 0}};

static unsigned context_opt(lua_State *L, int idx, const char *key) {
  lua_Integer n = sb_lua_opt_int(L, idx, key, 0);
  if (n < 0 || n > SB_SEARCH_CONTEXT_MAX)
    luaL_error(L, "grep: option '%s' must be between 0 and %d", key, SB_SEARCH_CONTEXT_MAX);
  return (unsigned)n;
}

static void grep_mode(lua_State *L, int idx, sb_search *s) {
  size_t n;
  const char *m = sb_lua_opt_str(L, idx, "mode", &n);
  s->lines = false;
  if (!m || strcmp(m, "content") == 0) s->mode = SB_GREP_CONTENT;
  else if (strcmp(m, "lines") == 0) s->mode = SB_GREP_CONTENT, s->lines = true;
  else if (strcmp(m, "files") == 0) s->mode = SB_GREP_FILES;
  else if (strcmp(m, "count") == 0) s->mode = SB_GREP_COUNT;
  else luaL_error(L, "grep: option 'mode' must be \"content\", \"lines\", \"files\" or \"count\"");
  s->before = context_opt(L, idx, "before");
  s->after = context_opt(L, idx, "after");
  s->multiline = sb_lua_opt_bool(L, idx, "multiline", false);
  lua_Integer th = sb_lua_opt_int(L, idx, "threads", 0);
  if (th < 0 || th > 64) luaL_error(L, "grep: option 'threads' must be between 0 (all CPUs) and 64");
  s->threads = (size_t)th;
}

sb_code sb_lua_grep_prepare(lua_State *L, sb_sandbox *sb, sb_op *op, sb_search *s, char *fpat) {
  size_t flen = 0, dlen = 0;
  const char *filter = sb_lua_opt_str(L, 3, "glob", &flen);
  const char *dir = sb_lua_opt_str(L, 3, "path", &dlen);
  op->raw = dir ? dir : ".";
  op->rawlen = dir ? dlen : 1;
  s->literal = sb_lua_opt_bool(L, 3, "literal", false);
  s->icase = sb_lua_opt_bool(L, 3, "ignore_case", false);
  walk_opts(L, 3, s);
  grep_mode(L, 3, s);
  s->tpat = sb_lua_opt_str(L, 3, "type_glob", &s->tplen);
  if (filter) {
    if (sb_search_pattern(sb->cwd, sb->cwdlen, filter, flen, fpat, &s->plen, &op->e) != SB_OK) return op->e.code;
    s->pat = fpat;
    s->filter_base = memchr(fpat, '/', s->plen) == NULL;
  }
  sb_code c =
      dir ? sb_path_parse(&op->p, dir, dlen, sb->cwd, sb->cwdlen, &op->e) : sb_path_from_rel(&op->p, "", 0, &op->e);
  if (c != SB_OK) return c;
  op->parsed = true;
  return sb_lua_guard(sb, op, &op->p, SB_ACC_LIST, SB_KIND_UNKNOWN);
}

void sb_lua_grep_check(lua_State *L) {
  if (lua_type(L, 2) != LUA_TSTRING) luaL_typeerror(L, 2, "string");
  sb_lua_check_opts(L, 3, "grep", grep_opts);
}

size_t sb_lua_search_max(lua_State *L) { return max_results(L, 3); }

int sb_lua_search_push(lua_State *L, sb_search *s, bool grep) { return push_results(L, s, grep); }

static int m_grep(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_grep_check(L);
  size_t plen;
  const char *pattern = lua_tolstring(L, 2, &plen);
  SB_OP(op, "grep");
  char fpat[SB_PATH_MAX + 1];
  sb_search *s = new_search(L, sb, &op->e, max_results(L, 3));
  if (sb_lua_grep_prepare(L, sb, op, s, fpat) != SB_OK) return sb_lua_fail(L, sb, op);
  sb_code c = sb_search_grep(s, pattern, plen, &op->p);
  op->no_path = s->bad_pattern; /* about the pattern, not a path */
  int n = c == SB_OK ? push_results(L, s, true) : -1;
  if (n < 0) return sb_lua_fail(L, sb, op);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)s->count);
  sb_search_free(s);
  return n;
}

static const sb_optspec snap_opts[] = {{"max_bytes", LUA_TNUMBER}, {"directories", LUA_TBOOLEAN}, {NULL, 0}};

/* ---- snapshot through fetch_wanted (a remote backend) ------------------- */

typedef struct snap_fetch {
  lua_State *L;
  int t, paths; /* the result and the path list, on the method's stack */
  uint64_t total;
  sb_code code; /* a file that could not be read (not ENOENT) */
  lua_Integer bad; /* its number */
  bool raised; /* a Lua error (out of memory), on the stack */
} snap_fetch;

/* t[paths[i]] = the bytes (args: t, paths, data, len, i); may raise. */
static int snap_put(lua_State *L) {
  lua_rawgeti(L, 2, lua_tointeger(L, 5));
  lua_pushlstring(L, lua_touserdata(L, 3), (size_t)lua_tointeger(L, 4));
  lua_rawset(L, 1);
  return 0;
}

/* A file the walk noted, fetched; the Lua side runs protected, so an error
 * never unwinds through the backend. */
static bool snap_fetched(void *ud, void *tag, const char *data, size_t len, sb_code c) {
  snap_fetch *f = ud;
  lua_Integer i = (lua_Integer)(uintptr_t)tag;
  if (c == SB_ENOENT || c == SB_EAGAIN) return true; /* vanished meanwhile; or not fetched after a stop */
  if (f->code != SB_OK || f->raised) return false;
  if (c != SB_OK) {
    f->code = c;
    f->bad = i;
    return false;
  }
  lua_State *L = f->L;
  if (!lua_checkstack(L, 8)) return f->raised = true, lua_pushliteral(L, "not enough memory"), false;
  lua_pushcfunction(L, snap_put);
  lua_pushvalue(L, f->t);
  lua_pushvalue(L, f->paths);
  lua_pushlightuserdata(L, (void *)data);
  lua_pushinteger(L, (lua_Integer)len);
  lua_pushinteger(L, i);
  if (lua_pcall(L, 5, 0, 0) != LUA_OK) return f->raised = true, false;
  f->total += len;
  return true;
}

/* The files' bytes in one exchange: 0 with t filled and *total, or the
 * method's failure (what sb_lua_fail pushed). */
static int snap_fetch_all(lua_State *L, sb_sandbox *sb, sb_op *op, int t, int paths, uint64_t *total) {
  snap_fetch f = {.L = L, .t = t, .paths = paths};
  sb_err fe = {.code = SB_OK};
  sb_code c = sb->fs.be->fetch_wanted(&sb->fs, true, snap_fetched, &f, &fe);
  if (f.raised) return lua_error(L); /* its message is on top */
  if (f.code != SB_OK) {
    lua_rawgeti(L, paths, f.bad);
    size_t n;
    const char *rel = lua_tolstring(L, -1, &n);
    if (sb_path_from_rel(&op->p, rel, n, &op->e) == SB_OK) sb_fail(&op->e, f.code, NULL);
    return sb_lua_fail(L, sb, op);
  }
  if (c != SB_OK) {
    op->e = fe;
    return sb_lua_fail(L, sb, op);
  }
  *total = f.total;
  return 0;
}

static int m_snapshot(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_check_opts(L, 2, "snapshot", snap_opts);
  uint64_t def = sb->fs.quota.max_bytes != SB_UNLIMITED ? sb->fs.quota.max_bytes : 64u << 20;
  lua_Integer mb = sb_lua_opt_int(L, 2, "max_bytes", (lua_Integer)(def > INT64_MAX ? INT64_MAX : def));
  SB_OP(op, "snapshot");
  op->parsed = true;
  sb_search *s = new_search(L, sb, &op->e, SIZE_MAX);
  s->max_bytes = mb < 0 ? 0 : (uint64_t)mb;
  s->empty_dirs = sb_lua_opt_bool(L, 2, "directories", false);
  sb_path_from_rel(&op->p, "", 0, &op->e);
  if (sb_search_snapshot(s) != SB_OK) {
    if (sb->fs.be->fetch_wanted) sb->fs.be->fetch_wanted(&sb->fs, false, snap_fetched, NULL, &(sb_err){.code = SB_OK});
    return sb_lua_fail(L, sb, op);
  }
  /* The path list goes into a Lua table first: reading may raise. */
  lua_createtable(L, 0, (int)s->count);
  int t = lua_gettop(L);
  lua_createtable(L, (int)s->count, 0);
  int paths = lua_gettop(L);
  for (size_t i = 0; i < s->count; i++) {
    sb_hit h;
    sb_search_hit(s, i, &h);
    lua_pushlstring(L, h.path, h.plen);
    if (h.kind == SB_HIT_DIR) { /* a directory: "path/" */
      lua_pushliteral(L, "/");
      lua_concat(L, 2);
    }
    lua_rawseti(L, paths, (lua_Integer)i + 1);
  }
  sb_search_free(s);
  uint64_t total = 0;
  size_t n_paths = (size_t)lua_rawlen(L, paths);
  bool fetched = sb->fs.be->fetch_wanted != NULL;
  if (fetched) { /* the files' bytes came in one exchange; directories below */
    int failed = snap_fetch_all(L, sb, op, t, paths, &total);
    if (failed) return failed;
  }
  for (size_t i = 1; i <= n_paths; i++) {
    lua_rawgeti(L, paths, (lua_Integer)i);
    size_t n;
    const char *rel = lua_tolstring(L, -1, &n);
    if (n && rel[n - 1] == '/') {
      lua_pushboolean(L, 1);
      lua_rawset(L, t);
      continue;
    }
    if (fetched) {
      lua_pop(L, 1);
      continue;
    }
    sb_path *fp = &op->p;
    sb_bytes v;
    if (sb_path_from_rel(fp, rel, n, &op->e) != SB_OK) return sb_lua_fail(L, sb, op);
    sb_code c = sb->fs.be->read(&sb->fs, fp, &v, &op->e);
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
  sb_buf_trim(&sb->fs.mem, &sb->fs.scratch, 1 << 20);
  sb_path_from_rel(&op->p, "", 0, &op->e);
  sb_lua_audit_ok(L, sb, op, (lua_Integer)total);
  return 1;
}

void sb_lua_search_keys(lua_State *L) {
  for (int i = 0; i < K_N; i++) lua_pushstring(L, KEYS[i]);
}

void sb_lua_search_methods(lua_State *L) {
  static const luaL_Reg fns[] = {{"glob", m_glob}, {"grep", m_grep}, {"snapshot", m_snapshot}, {NULL, NULL}};
  sb_lua_search_keys(L);
  luaL_setfuncs(L, fns, K_N);
}
