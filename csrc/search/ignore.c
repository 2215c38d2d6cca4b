#include "search/ignore.h"

#include <stdint.h>
#include <string.h>

#include "base/glob.h"
#include "plat/bytes.h"

/* A rule in `rules`: the header, then the pattern's bytes. */
typedef struct rule {
  uint32_t len;
  bool neg; /* "!pattern": re-include */
  bool dir_only; /* "pattern/" */
  bool anchored; /* a '/' before the end: relative to the file's directory */
  bool below; /* "x/" then "**": what is inside x, not x itself */
} rule;

/* A directory with rules: its path (at `off` in rules), then its rules. */
typedef struct level {
  size_t off, dlen, first, end;
} level;

void sb_ignore_init(sb_ignore *ig, const sb_mem *m) {
  memset(ig, 0, sizeof *ig);
  ig->mem = m;
}

void sb_ignore_free(sb_ignore *ig) {
  if (!ig->mem) return;
  sb_buf_free(ig->mem, &ig->rules);
  sb_buf_free(ig->mem, &ig->levels);
  ig->mem = NULL;
}

static level *levels(const sb_ignore *ig, size_t *n) {
  *n = ig->levels.len / sizeof(level);
  return (level *)(void *)ig->levels.p;
}

static bool add_rule(sb_ignore *ig, const char *s, size_t n) {
  rule r = {0};
  if (n && s[0] == '!') {
    r.neg = true;
    s++, n--;
  }
  while (n && s[n - 1] == '/') {
    r.dir_only = true;
    n--;
  }
  if (n == 0) return true;
  r.anchored = memchr(s, '/', n) != NULL;
  while (n && s[0] == '/') s++, n--;
  if (n == 0) return true;
  r.below = n >= 3 && memcmp(s + n - 3, "/**", 3) == 0;
  r.len = (uint32_t)n;
  return sb_buf_append(ig->mem, &ig->rules, &r, sizeof r) == 0 && sb_buf_append(ig->mem, &ig->rules, s, n) == 0;
}

bool sb_ignore_add(sb_ignore *ig, const char *dir, size_t dlen, const char *text, size_t tlen) {
  size_t nl;
  level *lv = levels(ig, &nl);
  if (!nl || lv[nl - 1].dlen != dlen || memcmp(ig->rules.p + lv[nl - 1].off, dir, dlen) != 0) {
    level l = {.off = ig->rules.len, .dlen = dlen};
    if (sb_buf_append(ig->mem, &ig->rules, dir, dlen) != 0) return false;
    l.first = l.end = ig->rules.len;
    if (sb_buf_append(ig->mem, &ig->levels, &l, sizeof l) != 0) {
      ig->rules.len = l.off;
      return false;
    }
    lv = levels(ig, &nl);
  }
  size_t i = 0;
  while (i < tlen) {
    const char *nlp = memchr(text + i, '\n', tlen - i);
    size_t e = nlp ? (size_t)(nlp - text) : tlen, b = i;
    i = e + 1;
    if (e > b && text[e - 1] == '\r') e--;
    /* trailing spaces go, unless escaped ("\ ") */
    while (e > b && text[e - 1] == ' ' && !(e - b >= 2 && text[e - 2] == '\\')) e--;
    if (e == b || text[b] == '#') continue;
    if (!add_rule(ig, text + b, e - b)) return false;
  }
  lv[nl - 1].end = ig->rules.len;
  return true;
}

void sb_ignore_leave(sb_ignore *ig, const char *rel, size_t rlen) {
  size_t nl;
  level *lv = levels(ig, &nl);
  while (nl) {
    const level *l = &lv[nl - 1];
    /* the root's level holds everything; another holds what is below it */
    if (l->dlen == 0 || (rlen > l->dlen && rel[l->dlen] == '/' && memcmp(rel, ig->rules.p + l->off, l->dlen) == 0))
      break;
    ig->rules.len = l->off;
    nl--;
  }
  ig->levels.len = nl * sizeof(level);
}

static bool rule_matches(const rule *r, const char *pat, const char *sub, size_t slen, const char *base, size_t blen,
                         bool is_dir) {
  if (r->dir_only && !is_dir) return false;
  if (!r->anchored) return sb_glob_match(pat, r->len, base, blen);
  if (!sb_glob_match(pat, r->len, sub, slen)) return false;
  return !r->below || !sb_glob_match(pat, r->len - 3, sub, slen); /* not x itself */
}

bool sb_ignore_match(const sb_ignore *ig, const char *rel, size_t rlen, bool is_dir) {
  size_t nl;
  const level *lv = levels(ig, &nl);
  const char *slash = sb_memrchr(rel, '/', rlen);
  const char *base = slash ? slash + 1 : rel;
  size_t blen = rlen - (size_t)(base - rel);
  for (size_t k = nl; k-- > 0;) {
    const level *l = &lv[k];
    if (l->dlen >= rlen) continue; /* the directory itself is judged by its parent */
    const char *sub = l->dlen ? rel + l->dlen + 1 : rel;
    size_t slen = rlen - (size_t)(sub - rel);
    const rule *last = NULL;
    for (size_t off = l->first; off < l->end;) {
      rule r;
      memcpy(&r, ig->rules.p + off, sizeof r);
      const char *pat = ig->rules.p + off + sizeof r;
      if (rule_matches(&r, pat, sub, slen, base, blen, is_dir)) last = (const rule *)(const void *)(ig->rules.p + off);
      off += sizeof r + r.len;
    }
    if (last) {
      rule r;
      memcpy(&r, last, sizeof r);
      return !r.neg;
    }
  }
  return false;
}
