#include "search/matcher.h"
#include "search/find.h"

#include "base/utf8.h"
#include "plat/bytes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MATCH_LIMIT 20000000u /* backtracking steps per call: catastrophic patterns stop */
#define JIT_STACK_MAX (4u << 20)

/* ---- the required literal ------------------------------------------------ */

static bool is_meta(char c) { return strchr(".^$|()[]{}*+?\\", c) != NULL; }

/* Bytes of a character class starting at p[0] == '[' (to its ']'), or 0
 * when it is not certain where PCRE2 ends it (then no prefilter is used).
 * "[:name:]" inside is a POSIX class only in exactly that form; PCRE2's
 * rules for other "[:", "[." and "[=" are subtle, and \Q..\E can quote the
 * ']'. */
static size_t class_span(const char *p, size_t n) {
  size_t i = 1;
  if (i < n && p[i] == '^') i++;
  if (i < n && p[i] == ']') i++; /* a leading ']' is literal */
  while (i < n && p[i] != ']') {
    if (p[i] == '\\') {
      if (i + 1 < n && (p[i + 1] == 'Q' || p[i + 1] == 'E')) return 0;
      i++;
    } else if (p[i] == '[' && i + 1 < n && strchr(":.=", p[i + 1])) {
      size_t j = i + 2;
      if (j < n && p[j] == '^') j++;
      while (j < n && p[j] >= 'a' && p[j] <= 'z') j++;
      if (!(p[i + 1] == ':' && j + 1 < n && p[j] == ':' && p[j + 1] == ']')) return 0;
      i = j + 1;
    }
    i++;
  }
  return i < n ? i + 1 : 0;
}

/* Bytes of a quantifier {m}, {m,} or {m,n} starting at p[0] == '{', or 0
 * when it is something else (then PCRE2 may read the brace as a literal). */
static size_t quant_span(const char *p, size_t n) {
  size_t i = 1, digits = 0;
  while (i < n && p[i] >= '0' && p[i] <= '9') i++, digits++;
  if (!digits) return 0;
  if (i < n && p[i] == ',')
    for (i++; i < n && p[i] >= '0' && p[i] <= '9';) i++;
  return i < n && p[i] == '}' ? i + 1 : 0;
}

/* An escape \c that stands for the character c itself (0 otherwise). */
static char escaped_literal(char c) {
  if (c == 't') return '\t';
  if ((unsigned char)c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
    return c == '\n' ? 0 : c;
  return 0;
}

/* The larger of `have` and m when q starts a quantifier {m}, {m,} or {m,n}
 * of a digit atom (\d or [0-9]): m digits in a row are in every match. At
 * most SB_MATCH_DIGITS_MAX (a longer run holds that many too). */
static size_t digit_run(const char *q, size_t n, size_t have) {
  if (!n || q[0] != '{' || !quant_span(q, n)) return have;
  size_t m = 0;
  for (size_t i = 1; i < n && q[i] >= '0' && q[i] <= '9' && m < SB_MATCH_DIGITS_MAX; i++)
    m = m * 10 + (size_t)(q[i] - '0');
  if (m > SB_MATCH_DIGITS_MAX) m = SB_MATCH_DIGITS_MAX;
  return m > have ? m : have;
}

size_t sb_required_literal(const char *pat, size_t n, char *out, size_t cap, size_t *digits) {
  char run[SB_MATCH_PRE_MAX];
  size_t rl = 0, best = 0, dmax = 0;
  int depth = 0;
#define END_RUN() \
  do { \
    if (rl > best) memcpy(out, run, best = rl); \
    rl = 0; \
  } while (0)
  if (cap > SB_MATCH_PRE_MAX) cap = SB_MATCH_PRE_MAX;
  for (size_t i = 0; i < n; i++) {
    char c = pat[i], lit = 0;
    if (c == '(') {
      if (i + 1 < n && pat[i + 1] == '?' && !(i + 2 < n && strchr(":=!<>", pat[i + 2]))) goto none; /* inline options */
      if (i + 2 < n && pat[i + 1] == '*') goto none; /* (*VERB) */
      depth++;
      END_RUN();
      continue;
    }
    if (c == ')') {
      if (depth > 0) depth--;
      END_RUN();
      continue;
    }
    if (c == '|') {
      if (depth == 0) goto none; /* alternatives at the top: nothing is required */
      continue;
    }
    if (c == '{' && depth == 0) { /* a quantifier of what came before: not literals */
      size_t span = quant_span(pat + i, n - i);
      if (!span) goto none;
      i += span - 1;
      END_RUN();
      continue;
    }
    if (depth > 0) {
      /* \Q..\E and \c take bytes that would read as '(', ')' or '|' here
       * (\c( is one character): no prefilter rather than a wrong depth */
      if (c == '\\' && i + 1 < n && (pat[i + 1] == 'Q' || pat[i + 1] == 'c')) goto none;
      if (c == '\\') i++;
      else if (c == '[') {
        size_t span = class_span(pat + i, n - i);
        if (!span) goto none;
        i += span - 1;
      }
      continue;
    }
    if (c == '[') {
      size_t span = class_span(pat + i, n - i);
      if (!span) goto none;
      if (span == 5 && memcmp(pat + i, "[0-9]", 5) == 0) dmax = digit_run(pat + i + 5, n - i - 5, dmax);
      i += span - 1;
      END_RUN();
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= n) goto none;
      /* \Q quotes; \p \P \x \o \c \N \g \k and digits take an argument
       * whose bytes are not literals: no prefilter rather than a wrong one */
      if (strchr("QpPxocNgk0123456789", pat[i + 1])) goto none;
      if (pat[i + 1] == 'd') dmax = digit_run(pat + i + 2, n - i - 2, dmax);
      lit = escaped_literal(pat[i + 1]);
      i++;
      if (!lit) {
        END_RUN();
        continue;
      }
    } else if (is_meta(c) || (unsigned char)c >= 0x80 || c == '\n') {
      END_RUN();
      continue;
    } else {
      lit = c;
    }
    /* a repeat that allows zero takes the character out of the literal */
    char q = i + 1 < n ? pat[i + 1] : 0;
    if (q == '*' || q == '?' || q == '{') {
      END_RUN();
      continue;
    }
    if (rl < cap) run[rl++] = lit;
    if (q == '+') END_RUN();
  }
  END_RUN();
#undef END_RUN
  if (digits) *digits = dmax;
  return best;
none:
  if (digits) *digits = 0;
  return 0;
}

/* Constructs whose meaning in a whole buffer is not their meaning in one
 * line: a lookaround can see past the newline (every spelling: (?= (?!
 * (?<= (?<! and the non-atomic (?* (?<*), \K moves the match start, \A \z
 * \Z \G mean the buffer's ends, and any "(*" (alpha assertions such as
 * (*napla:, verbs such as (*COMMIT) that end a whole-buffer search early,
 * option settings) is taken as one too rather than listed name by name.
 * Such a pattern is run on each line alone, as grep's line semantics ask;
 * a false alarm only costs speed. */
static bool needs_lines(const char *pat, size_t n) {
  static const char *const forms[] = {"(?=", "(?!", "(?<=", "(?<!", "(?<*", "(?*",
                                      "(*",  "\\K", "\\A",  "\\z",  "\\Z",  "\\G"};
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
    if (memmem(pat, n, forms[i], strlen(forms[i]))) return true;
  return false;
}

/* Does the pattern use what PCRE2_UCP changes (\w \W \d \D \s \S \b \B,
 * POSIX classes)? A false alarm only costs a second compile. */
static bool unicode_classes(const char *pat, size_t n) {
  for (size_t i = 0; i + 1 < n; i++) {
    if (pat[i] == '[' && pat[i + 1] == ':') return true;
    if (pat[i] == '\\') {
      if (strchr("wWdDsSbB", pat[i + 1])) return true;
      i++;
    }
  }
  return false;
}

/* ---- compile ------------------------------------------------------------- */

sb_code sb_matcher_compile(sb_matcher *m, const char *pat, size_t n, bool literal, bool icase, bool multiline,
                           sb_err *e) {
  memset(m, 0, sizeof *m);
  m->needle = pat;
  m->nlen = n;
  m->multiline = multiline;
  if (memchr(pat, '\0', n)) return sb_fail(e, SB_EINVAL, "pattern contains a NUL byte");
  if (literal && !icase) {
    m->literal = true;
    return SB_OK;
  }
  uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (icase ? PCRE2_CASELESS : 0);
  if (literal) opts |= PCRE2_LITERAL; /* takes no line options: it has no anchors */
  else opts |= PCRE2_MULTILINE | (multiline ? PCRE2_DOTALL : 0);
  int err;
  PCRE2_SIZE off;
  /* lines end at LF; a CR before it is not part of the line ("x$" matches
   * "x\r\n", as agents editing CRLF files expect) */
  pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
  if (!cc) return sb_fail_oom(e);
  pcre2_set_newline(cc, PCRE2_NEWLINE_ANYCRLF);
  /* PCRE2_UCP: \w, \d, \s, \b and POSIX classes know Unicode, as rg -P
   * (and rg's own engine) do. On text that is all ASCII they give the same
   * answers without it, several times faster: such a pattern is compiled
   * both ways, and sb_matcher_scan picks per buffer. */
  bool ucp = !literal && unicode_classes(pat, n);
  m->code = pcre2_compile((PCRE2_SPTR)pat, n, opts | (ucp ? PCRE2_UCP : 0), &err, &off, cc);
  if (m->code && ucp && !(m->ascii = pcre2_compile((PCRE2_SPTR)pat, n, opts, &err, &off, cc))) {
    pcre2_compile_context_free(cc);
    sb_matcher_free(m);
    return sb_fail_oom(e);
  }
  pcre2_compile_context_free(cc);
  if (!m->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return sb_failf(
        e, SB_EINVAL,
        "invalid regular expression '%.*s': %s at offset %zu (pass literal = true to search for the text as it is)",
        (int)(n < 60 ? n : 60), pat, (const char *)msg, (size_t)off);
  }
  /* SANDBOX_NO_JIT: the interpreter instead (valgrind flags the JIT's
   * 16-byte loads that reach past a subject's end within its last block) */
  m->jit = !getenv("SANDBOX_NO_JIT") && pcre2_jit_compile(m->code, PCRE2_JIT_COMPLETE) == 0 &&
      (!m->ascii || pcre2_jit_compile(m->ascii, PCRE2_JIT_COMPLETE) == 0);
  if (!literal && !icase) m->prelen = sb_required_literal(pat, n, m->pre, sizeof m->pre, &m->digits);
  if (m->digits < SB_MATCH_DIGITS_MIN || multiline) m->digits = 0;
  m->per_line = !literal && !multiline && needs_lines(pat, n);
  /* next to invalid UTF-8, PCRE2 (10.42) places \b and \B differently in a
   * whole buffer and in a line alone (and differently again with and
   * without its JIT): such text is judged a line at a time (sb_matcher_scan) */
  m->bounds = !literal && !multiline && (memmem(pat, n, "\\b", 2) || memmem(pat, n, "\\B", 2));
  uint32_t minlen = 1;
  m->empty = !literal && !multiline && pcre2_pattern_info(m->code, PCRE2_INFO_MINLENGTH, &minlen) == 0 && minlen == 0;
  return SB_OK;
}

void sb_matcher_free(sb_matcher *m) {
  if (m->code) pcre2_code_free(m->code);
  if (m->ascii) pcre2_code_free(m->ascii);
  m->code = m->ascii = NULL;
}

bool sb_mstate_init(sb_mstate *st, const sb_matcher *m) {
  memset(st, 0, sizeof *st);
  if (!m->code) return true;
  st->md = pcre2_match_data_create_from_pattern(m->code, NULL);
  st->mc = pcre2_match_context_create(NULL);
  if (!st->md || !st->mc) return sb_mstate_free(st), false;
  pcre2_set_match_limit(st->mc, MATCH_LIMIT);
  if (m->jit) {
    st->js = pcre2_jit_stack_create(32u << 10, JIT_STACK_MAX, NULL);
    if (!st->js) return sb_mstate_free(st), false;
    pcre2_jit_stack_assign(st->mc, NULL, st->js);
  }
  return true;
}

void sb_mstate_free(sb_mstate *st) {
  if (st->md) pcre2_match_data_free(st->md);
  if (st->mc) pcre2_match_context_free(st->mc);
  if (st->js) pcre2_jit_stack_free(st->js);
  memset(st, 0, sizeof *st);
}

/* ---- scan ---------------------------------------------------------------- */

static size_t line_start(const char *buf, size_t from, size_t at) {
  const char *nl = at > from ? sb_memrchr(buf + from, '\n', at - from) : NULL;
  return nl ? (size_t)(nl - buf) + 1 : from;
}

static size_t line_end(const char *buf, size_t len, size_t at) {
  const char *nl = at < len ? memchr(buf + at, '\n', len - at) : NULL;
  return nl ? (size_t)(nl - buf) : len;
}

static int run(const sb_matcher *m, const pcre2_code *c, sb_mstate *st, const char *s, size_t n, size_t start) {
  if (m->jit) return pcre2_jit_match(c, (PCRE2_SPTR)s, n, start, 0, st->md, st->mc);
  return pcre2_match(c, (PCRE2_SPTR)s, n, start, 0, st->md, st->mc);
}

/* Does the line [ls, le) match on its own? (> 0 yes, 0 no, < 0 error) */
static int line_matches(const sb_matcher *m, const pcre2_code *c, sb_mstate *st, const char *buf, size_t ls,
                        size_t le) {
  int rc = run(m, c, st, buf + ls, le - ls, 0);
  return rc >= 0 ? 1 : rc == PCRE2_ERROR_NOMATCH ? 0 : rc;
}

int sb_matcher_scan(const sb_matcher *m, sb_mstate *st, const char *buf, size_t len, sb_match_fn fn, void *ud) {
  if (len == 0) return 0; /* no lines */
  /* the buffer's final newline ends the last line; nothing follows it */
  size_t end = buf[len - 1] == '\n' ? len - 1 : len;
  if (m->prelen && !sb_find(buf, len, m->pre, m->prelen)) return 0;
  /* all ASCII: the faster code gives the same answers, and no byte is invalid */
  bool text_ascii = (m->ascii || m->digits) && sb_utf8_ascii(buf, len);
  bool ascii = m->ascii && text_ascii;
  const pcre2_code *code = ascii ? m->ascii : m->code;
  /* in ASCII text \d is [0-9]: only the lines holding the run are judged */
  size_t digits = m->prelen || !text_ascii ? 0 : m->digits;
  if (digits && !sb_find_digits(buf, len, digits)) return 0;
  bool per_line = m->per_line || (m->bounds && !m->prelen && !ascii && !sb_utf8_valid(buf, len)) ||
      (m->empty && !m->prelen && memmem(buf, len, "\r\n", 2));
  size_t pos = 0;
  while (pos <= end) {
    size_t ls, le;
    if (m->literal || (m->prelen && !m->multiline)) {
      /* every matching line holds the literal: find it, then judge its line */
      const char *lit = m->literal ? m->needle : m->pre;
      size_t ll = m->literal ? m->nlen : m->prelen;
      const char *q = ll ? sb_find(buf + pos, len - pos, lit, ll) : buf + pos;
      if (!q || (size_t)(q - buf) > end) return 0;
      ls = line_start(buf, pos, (size_t)(q - buf));
      le = line_end(buf, len, (size_t)(q - buf));
      if (!m->literal) {
        int rc = line_matches(m, code, st, buf, ls, le);
        if (rc < 0) return rc;
        if (rc == 0) {
          pos = le + 1;
          continue;
        }
      }
    } else if (digits) {
      const char *q = sb_find_digits(buf + pos, len - pos, digits);
      if (!q || (size_t)(q - buf) > end) return 0;
      ls = line_start(buf, pos, (size_t)(q - buf));
      le = line_end(buf, len, (size_t)(q - buf));
      int rc = line_matches(m, code, st, buf, ls, le);
      if (rc < 0) return rc;
      if (rc == 0) {
        pos = le + 1;
        continue;
      }
    } else if (per_line) {
      ls = pos;
      le = line_end(buf, len, pos);
      int rc = line_matches(m, code, st, buf, ls, le);
      if (rc < 0) return rc;
      if (rc == 0) {
        pos = le + 1;
        continue;
      }
    } else {
      int rc = run(m, code, st, buf, len, pos);
      if (rc == PCRE2_ERROR_NOMATCH) return 0;
      if (rc < 0) return rc;
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
      size_t ms = ov[0], me = ov[1];
      if (ms > end) return 0;
      ls = line_start(buf, pos, ms);
      if (m->multiline) {
        size_t last = me > ms ? me - 1 : ms; /* the match's last byte */
        if (last > end) last = end;
        le = line_end(buf, len, last);
        if (le > end) le = end;
      } else {
        le = line_end(buf, len, ms);
        /* a match that ran over the newline: does the line match alone? */
        if (me > le) {
          int r2 = line_matches(m, code, st, buf, ls, le);
          if (r2 < 0) return r2;
          if (r2 == 0) {
            pos = le + 1;
            continue;
          }
        }
      }
    }
    if (!fn(ud, ls, le)) return 0;
    pos = le + 1;
  }
  return 0;
}
