#include "search/search.h"

#include <stdlib.h>
#include <string.h>

#include "base/glob.h"

#define MAX_VISITS 2000000 /* entries a single search may look at */
#define GREP_TEXT_MAX 2000 /* bytes of a matching line kept */
#define GREP_BINARY_PROBE 8000

/* Records in results: u32 pathlen, u32 line, u32 textlen, path, text. */
typedef struct rec {
  uint32_t plen, line, tlen;
} rec;

void sb_search_init(sb_search *s, sb_fs *fs, sb_err *e, size_t max) {
  memset(s, 0, sizeof *s);
  s->fs = fs;
  s->e = e;
  s->max = max;
}

void sb_search_free(sb_search *s) {
  if (!s->fs) return;
  if (s->compiled) regfree(&s->re);
  s->compiled = false;
  sb_buf_free(&s->fs->mem, &s->results);
  sb_buf_free(&s->fs->mem, &s->index);
  sb_buf_trim(&s->fs->mem, &s->fs->scratch, 1 << 20); /* the backend's reads */
  s->fs = NULL;
}

static bool add_rec(sb_search *s, const char *path, size_t plen, uint32_t line,
                    const char *text, size_t tlen) {
  rec r = {(uint32_t)plen, line, (uint32_t)tlen};
  const sb_mem *m = &s->fs->mem;
  sb_buf *out = &s->results;
  if (sb_buf_append(m, out, &r, sizeof r) != 0 || sb_buf_append(m, out, path, plen) != 0 ||
      sb_buf_append(m, out, text, tlen) != 0) {
    sb_fail(s->e, SB_ENOSPC, "out of memory");
    s->failed = true;
    return false;
  }
  s->count++;
  return true;
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

/* The index of the records, in collection order. */
static const char **index_recs(sb_search *s) {
  sb_buf *ix = &s->index;
  ix->len = 0;
  if (sb_buf_reserve(&s->fs->mem, ix, (s->count + 1) * sizeof(char *)) != 0) return NULL;
  const char **idx = (const char **)(void *)ix->p;
  const char *p = s->results.p;
  for (size_t i = 0; i < s->count; i++) {
    rec r;
    memcpy(&r, p, sizeof r);
    idx[i] = p;
    p += sizeof r + r.plen + r.tlen;
  }
  ix->len = s->count * sizeof(char *);
  return idx;
}

bool sb_search_sorted(sb_search *s) {
  const char **idx = index_recs(s);
  if (!idx) return sb_fail(s->e, SB_ENOSPC, "out of memory"), false;
  qsort(idx, s->count, sizeof *idx, cmp_rec);
  return true;
}

void sb_search_hit(const sb_search *s, size_t i, sb_hit *out) {
  const char *p;
  if (s->index.len) {
    p = ((const char *const *)(const void *)s->index.p)[i];
  } else { /* collection order: walk to record i */
    p = s->results.p;
    for (size_t k = 0; k < i; k++) {
      rec r;
      memcpy(&r, p, sizeof r);
      p += sizeof r + r.plen + r.tlen;
    }
  }
  rec r;
  memcpy(&r, p, sizeof r);
  out->path = p + sizeof r;
  out->plen = r.plen;
  out->line = r.line;
  out->text = p + sizeof r + r.plen;
  out->tlen = r.tlen;
}

static bool visit_budget(sb_search *s) {
  if (++s->visits <= MAX_VISITS) return true;
  s->truncated = true;
  return false;
}

static bool visible(sb_search *s, const char *rel, size_t rlen, int type) {
  const sb_policy *pol = s->fs->policy;
  if (!pol->deny.n && !pol->has_allow) return true;
  return sb_policy_visible(pol, rel, rlen, type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE);
}

sb_code sb_search_pattern(const char *cwd, size_t cwdlen, const char *raw, size_t n,
                          char *out, size_t *olen, sb_err *e) {
  if (n == 0) return sb_fail(e, SB_EINVAL, "empty pattern");
  if (memchr(raw, '\0', n)) return sb_fail(e, SB_EINVAL, "pattern contains a NUL byte");
  if (n > SB_PATH_MAX) return sb_fail(e, SB_EINVAL, "pattern too long");
  size_t i = 0, len = 0;
  if (raw[0] == '/') {
    size_t ci = 0;
    while (ci < cwdlen) {
      while (ci < cwdlen && cwd[ci] == '/') ci++;
      if (ci >= cwdlen) break;
      size_t cb = ci;
      while (ci < cwdlen && cwd[ci] != '/') ci++;
      while (i < n && raw[i] == '/') i++;
      size_t pb = i;
      while (i < n && raw[i] != '/') i++;
      if (i - pb != ci - cb || memcmp(raw + pb, cwd + cb, ci - cb) != 0)
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

/* ---- glob --------------------------------------------------------------- */

static int glob_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent,
                   const void *ref) {
  (void)ref;
  sb_search *s = ud;
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

sb_code sb_search_glob(sb_search *s, const sb_path *start) {
  sb_fs *fs = s->fs;
  sb_stat st;
  sb_code c = fs->be->stat(fs, start, true, &st, s->e); /* a link in the prefix is followed, as the walk follows its start */
  if (c == SB_OK && st.type != SB_T_DIR) c = SB_ENOTDIR; /* a prefix names directories */
  if (c == SB_OK) {
    /* the walk visits what is below the start; the start itself may match */
    if (start->len && sb_glob_match(s->pat, s->plen, start->buf, start->len))
      add_rec(s, start->buf, start->len, 0, NULL, 0);
    c = fs->be->walk(fs, start, glob_cb, s, s->e);
  }
  if (c == SB_ENOENT || c == SB_ENOTDIR || c == SB_EACCES) c = SB_OK; /* nothing matches */
  return s->failed ? s->e->code : c;
}

/* ---- grep --------------------------------------------------------------- */

static bool line_matches(sb_search *s, const char *b, size_t n) {
  if (s->literal && !s->icase) return s->nlen == 0 || memmem(b, n, s->needle, s->nlen);
  regmatch_t m = {.rm_so = 0, .rm_eo = (regoff_t)n};
  return regexec(&s->re, b, 1, &m, REG_STARTEND) == 0;
}

static int grep_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent,
                   const void *ref) {
  sb_search *s = ud;
  if (!visit_budget(s)) return SB_WALK_STOP;
  if (!visible(s, rel, rlen, ent->type)) return SB_WALK_SKIP;
  if (ent->type != SB_T_FILE) return ent->type == SB_T_DIR ? SB_WALK_CONTINUE : SB_WALK_SKIP;
  if (s->pat) {
    const char *subj = rel;
    if (s->filter_base) subj = rel + rlen - ent->namelen;
    if (!sb_glob_match(s->pat, s->plen, subj, rlen - (size_t)(subj - rel))) return SB_WALK_CONTINUE;
  }
  const sb_policy *pol = s->fs->policy;
  if (!sb_policy_ext_ok(&pol->ext_read, pol->has_ext_read, rel, rlen)) return SB_WALK_CONTINUE;
  sb_bytes v;
  sb_err ignore;
  if (s->fs->be->read_ref(s->fs, ref, &v, &ignore) != SB_OK) return SB_WALK_CONTINUE;
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

/* ERE with glibc's back-references can take exponential time; refuse them. */
static bool has_backref(const char *p, size_t n) {
  for (size_t i = 0; i + 1 < n; i++) {
    if (p[i] != '\\') continue;
    if (p[i + 1] >= '1' && p[i + 1] <= '9') return true;
    i++;
  }
  return false;
}

static sb_code compile(sb_search *s, const char *pat, size_t n, sb_err *e) {
  if (memchr(pat, '\0', n)) return sb_fail(e, SB_EINVAL, "pattern contains a NUL byte");
  if (s->literal && !s->icase) return SB_OK;
  int flags = REG_EXTENDED | REG_NOSUB | (s->icase ? REG_ICASE : 0);
  int rc;
  if (s->literal) {
    /* case-insensitive literal: escape every byte's meaning */
    char *esc = sb_malloc(&s->fs->mem, 2 * n + 1);
    if (!esc) return sb_fail(e, SB_ENOSPC, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      if (strchr(".[]()*+?{}|^$\\", pat[i])) esc[k++] = '\\';
      esc[k++] = pat[i];
    }
    esc[k] = '\0';
    rc = regcomp(&s->re, esc, flags);
    sb_free(&s->fs->mem, esc, 2 * n + 1);
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

sb_code sb_search_grep(sb_search *s, const char *pattern, size_t n, const sb_path *where) {
  s->needle = pattern;
  s->nlen = n;
  sb_code c = compile(s, pattern, n, s->e);
  if (c != SB_OK) {
    s->bad_pattern = c == SB_EINVAL;
    return c;
  }
  s->compiled = !(s->literal && !s->icase);
  c = s->fs->be->walk(s->fs, where, grep_cb, s, s->e);
  return c == SB_OK && s->failed ? s->e->code : c;
}

/* ---- snapshot ----------------------------------------------------------- */

static int snap_cb(void *ud, const char *rel, size_t rlen, const sb_dirent *ent,
                   const void *ref) {
  (void)ref;
  sb_search *s = ud;
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

sb_code sb_search_snapshot(sb_search *s) {
  sb_path root;
  sb_path_from_rel(&root, "", 0, s->e);
  sb_code c = s->fs->be->walk(s->fs, &root, snap_cb, s, s->e);
  return c == SB_OK && s->failed ? s->e->code : c;
}
