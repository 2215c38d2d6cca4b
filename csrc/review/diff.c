#include "review/diff.h"

#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct line {
  const char *p;
  size_t len; /* with its '\n', when it has one */
} line;

typedef struct seqs {
  const sb_mem *m;
  line *la, *lb;
  long na, nb;
  uint32_t *xv, *yv; /* equivalence classes of a's and b's lines */
  char *xch, *ych; /* 1: the line is deleted (a) / inserted (b) */
  long *fd, *bd; /* furthest-reaching x per diagonal, forward and backward */
  long max_cost;
} seqs;

/* ---- lines and their classes ----------------------------------------- */

static long split_lines(const sb_mem *m, const char *s, size_t len, line **out) {
  size_t n = 0;
  for (const char *p = s, *end = s + len; p < end; n++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    p = nl ? nl + 1 : end;
  }
  *out = sb_malloc(m, (n ? n : 1) * sizeof **out);
  if (!*out) return -1;
  size_t i = 0;
  for (const char *p = s, *end = s + len; p < end; i++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *next = nl ? nl + 1 : end;
    (*out)[i] = (line){p, (size_t)(next - p)};
    p = next;
  }
  return (long)n;
}

static uint64_t hash(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
  return h;
}

typedef struct slot {
  uint64_t h;
  uint32_t id; /* 0 = empty */
  const line *l;
} slot;

/* Give equal lines the same small number, so comparing is one compare. */
static int classify(seqs *s) {
  size_t total = (size_t)(s->na + s->nb), cap = 16;
  while (cap < 2 * total + 16) cap <<= 1;
  slot *tab = sb_malloc(s->m, cap * sizeof *tab);
  if (!tab) return -1;
  memset(tab, 0, cap * sizeof *tab);
  uint32_t next = 1;
  for (size_t i = 0; i < total; i++) {
    const line *l = i < (size_t)s->na ? &s->la[i] : &s->lb[i - (size_t)s->na];
    uint64_t h = hash(l->p, l->len);
    size_t k = (size_t)h & (cap - 1);
    while (tab[k].id && !(tab[k].h == h && tab[k].l->len == l->len && memcmp(tab[k].l->p, l->p, l->len) == 0))
      k = (k + 1) & (cap - 1);
    if (!tab[k].id) tab[k] = (slot){h, next++, l};
    if (i < (size_t)s->na) s->xv[i] = tab[k].id;
    else s->yv[i - (size_t)s->na] = tab[k].id;
  }
  sb_free(s->m, tab, cap * sizeof *tab);
  return 0;
}

/* ---- the edit script --------------------------------------------------- */

typedef struct box {
  long xoff, xlim, yoff, ylim;
} box;

/* The middle snake of a box (Myers 1986, section 4b): a point where a
 * forward and a backward path of minimal cost meet. Past max_cost steps,
 * the forward point furthest along is taken instead (git's xdiff bounds its
 * cost the same way): the diff stays correct, maybe not minimal. */
static void middle(seqs *s, const box *bx, long *xmid, long *ymid) {
  const uint32_t *xv = s->xv, *yv = s->yv;
  long *fd = s->fd, *bd = s->bd;
  long xoff = bx->xoff, xlim = bx->xlim, yoff = bx->yoff, ylim = bx->ylim;
  long dmin = xoff - ylim, dmax = xlim - yoff;
  long fmid = xoff - yoff, bmid = xlim - ylim;
  long fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
  bool odd = (fmid - bmid) & 1;
  fd[fmid] = xoff;
  bd[bmid] = xlim;
  for (long c = 1;; c++) {
    if (fmin > dmin) fd[--fmin - 1] = -1;
    else ++fmin;
    if (fmax < dmax) fd[++fmax + 1] = -1;
    else --fmax;
    for (long d = fmax; d >= fmin; d -= 2) {
      long tlo = fd[d - 1], thi = fd[d + 1];
      long x = tlo >= thi ? tlo + 1 : thi, y = x - d;
      while (x < xlim && y < ylim && xv[x] == yv[y]) x++, y++;
      fd[d] = x;
      if (odd && bmin <= d && d <= bmax && bd[d] <= x) {
        *xmid = x, *ymid = y;
        return;
      }
    }
    if (bmin > dmin) bd[--bmin - 1] = LONG_MAX;
    else ++bmin;
    if (bmax < dmax) bd[++bmax + 1] = LONG_MAX;
    else --bmax;
    for (long d = bmax; d >= bmin; d -= 2) {
      long tlo = bd[d - 1], thi = bd[d + 1];
      long x = tlo < thi ? tlo : thi - 1, y = x - d;
      while (x > xoff && y > yoff && xv[x - 1] == yv[y - 1]) x--, y--;
      bd[d] = x;
      if (!odd && fmin <= d && d <= fmax && x <= fd[d]) {
        *xmid = x, *ymid = y;
        return;
      }
    }
    if (c >= s->max_cost) {
      long best = -1;
      for (long d = fmax; d >= fmin; d -= 2) {
        long x = fd[d] < xlim ? fd[d] : xlim, y = x - d;
        if (y > ylim) x = ylim + d, y = ylim;
        if (x + y > best) best = x + y, *xmid = x, *ymid = y;
      }
      return;
    }
  }
}

/* Mark what changed, box by box (an explicit stack: no recursion depth to
 * fear on long inputs). */
static int compare(seqs *s) {
  size_t cap = 64, n = 0;
  box *stack = sb_malloc(s->m, cap * sizeof *stack);
  if (!stack) return -1;
  stack[n++] = (box){0, s->na, 0, s->nb};
  while (n > 0) {
    box b = stack[--n];
    while (b.xoff < b.xlim && b.yoff < b.ylim && s->xv[b.xoff] == s->yv[b.yoff]) b.xoff++, b.yoff++;
    while (b.xlim > b.xoff && b.ylim > b.yoff && s->xv[b.xlim - 1] == s->yv[b.ylim - 1]) b.xlim--, b.ylim--;
    if (b.xoff == b.xlim) {
      memset(s->ych + b.yoff, 1, (size_t)(b.ylim - b.yoff));
      continue;
    }
    if (b.yoff == b.ylim) {
      memset(s->xch + b.xoff, 1, (size_t)(b.xlim - b.xoff));
      continue;
    }
    long xm = b.xoff, ym = b.yoff;
    middle(s, &b, &xm, &ym);
    if (n + 2 > cap) {
      box *nb = sb_realloc(s->m, stack, cap * sizeof *stack, 2 * cap * sizeof *stack);
      if (!nb) {
        sb_free(s->m, stack, cap * sizeof *stack);
        return -1;
      }
      stack = nb;
      cap *= 2;
    }
    stack[n++] = (box){b.xoff, xm, b.yoff, ym};
    stack[n++] = (box){xm, b.xlim, ym, b.ylim};
  }
  sb_free(s->m, stack, cap * sizeof *stack);
  return 0;
}

/* ---- hunks --------------------------------------------------------------- */

/* git's default function line: the nearest line above the hunk that starts
 * with a letter, '_' or '$', cut to 80 bytes, trailing blanks dropped. */
static size_t func_line(const seqs *s, long before, const char **out) {
  for (long i = before; i >= 0; i--) {
    const line *l = &s->la[i];
    unsigned char c = l->len ? (unsigned char)l->p[0] : 0;
    if (isalpha(c) || c == '_' || c == '$') {
      size_t n = l->len > 80 ? 80 : l->len;
      while (n > 0 && isspace((unsigned char)l->p[n - 1])) n--;
      *out = l->p;
      return n;
    }
  }
  return 0;
}

static void range(char *buf, size_t cap, long start, long count) {
  if (count == 1) snprintf(buf, cap, "%ld", start + 1);
  else snprintf(buf, cap, "%ld,%ld", count ? start + 1 : start, count);
}

static int put_line(const sb_mem *m, sb_buf *out, char sign, const line *l) {
  if (sb_buf_append(m, out, &sign, 1) || sb_buf_append(m, out, l->p, l->len)) return -1;
  if (l->len == 0 || l->p[l->len - 1] != '\n') return sb_buf_append(m, out, "\n\\ No newline at end of file\n", 29);
  return 0;
}

/* Emit a[a0..a1) against b[b0..b1) as one hunk. */
static int hunk(seqs *s, long a0, long a1, long b0, long b1, sb_buf *out, sb_diff_stat *st) {
  char ra[48], rb[48], head[128];
  range(ra, sizeof ra, a0, a1 - a0);
  range(rb, sizeof rb, b0, b1 - b0);
  const char *fn = NULL;
  size_t fnlen = a0 > 0 ? func_line(s, a0 - 1, &fn) : 0;
  int n = snprintf(head, sizeof head, "@@ -%s +%s @@%s", ra, rb, fnlen ? " " : "");
  if (sb_buf_append(s->m, out, head, (size_t)n) || (fnlen && sb_buf_append(s->m, out, fn, fnlen)) ||
      sb_buf_append(s->m, out, "\n", 1))
    return -1;
  long i = a0, j = b0;
  while (i < a1 || j < b1) {
    if (i < a1 && s->xch[i]) {
      if (put_line(s->m, out, '-', &s->la[i++])) return -1;
      st->removed++;
    } else if (j < b1 && s->ych[j]) {
      if (put_line(s->m, out, '+', &s->lb[j++])) return -1;
      st->added++;
    } else {
      if (put_line(s->m, out, ' ', &s->la[i])) return -1;
      i++, j++;
    }
  }
  st->hunks++;
  return 0;
}

/* Walk both sides together, gathering changes into hunks: two changes
 * closer than 2 * context unchanged lines share one. */
static int hunks(seqs *s, long ctx, sb_buf *out, sb_diff_stat *st) {
  long i = 0, j = 0;
  long h_a0 = -1, h_b0 = 0, last_a = 0, last_b = 0; /* open hunk; end of its last change */
  while (i < s->na || j < s->nb) {
    if ((i < s->na && s->xch[i]) || (j < s->nb && s->ych[j])) {
      long ci = i, cj = j; /* a change starts here */
      while (i < s->na && s->xch[i]) i++;
      while (j < s->nb && s->ych[j]) j++;
      if (h_a0 >= 0 && ci - last_a > 2 * ctx) { /* too far from the open hunk: close it */
        long e = last_a + ctx < s->na ? ctx : s->na - last_a;
        if (hunk(s, h_a0, last_a + e, h_b0, last_b + e, out, st)) return -1;
        h_a0 = -1;
      }
      if (h_a0 < 0) {
        long back = ci < ctx ? ci : ctx;
        h_a0 = ci - back, h_b0 = cj - back;
      }
      last_a = i, last_b = j;
    } else {
      i++, j++;
    }
  }
  if (h_a0 >= 0) {
    long e = last_a + ctx < s->na ? ctx : s->na - last_a;
    if (hunk(s, h_a0, last_a + e, h_b0, last_b + e, out, st)) return -1;
  }
  return 0;
}

/* ---- the whole ------------------------------------------------------------- */

static long isqrt(long v) {
  long r = 1;
  while (r * r < v) r++;
  return r;
}

static void release(seqs *s) {
  const sb_mem *m = s->m;
  size_t na = (size_t)s->na, nb = (size_t)s->nb, nd = na + nb + 3;
  sb_free(m, s->la, (na ? na : 1) * sizeof *s->la);
  sb_free(m, s->lb, (nb ? nb : 1) * sizeof *s->lb);
  sb_free(m, s->xv, (na + 1) * sizeof *s->xv);
  sb_free(m, s->yv, (nb + 1) * sizeof *s->yv);
  sb_free(m, s->xch, na + 1);
  sb_free(m, s->ych, nb + 1);
  if (s->fd) sb_free(m, s->fd - (nb + 1), nd * sizeof *s->fd);
  if (s->bd) sb_free(m, s->bd - (nb + 1), nd * sizeof *s->bd);
}

sb_code sb_diff_text(const sb_mem *m, const char *a, size_t alen, const char *b, size_t blen, unsigned context,
                     sb_buf *out, sb_diff_stat *st, sb_err *e) {
  memset(st, 0, sizeof *st);
  if (alen == blen && memcmp(a, b, alen) == 0) return SB_OK;
  seqs s = {.m = m};
  s.na = split_lines(m, a, alen, &s.la);
  s.nb = s.na < 0 ? -1 : split_lines(m, b, blen, &s.lb);
  if (s.na < 0 || s.nb < 0) {
    if (s.na >= 0) sb_free(m, s.la, (s.na ? (size_t)s.na : 1) * sizeof *s.la);
    return sb_fail_oom(e);
  }
  size_t na = (size_t)s.na, nb = (size_t)s.nb, nd = na + nb + 3;
  s.xv = sb_malloc(m, (na + 1) * sizeof *s.xv);
  s.yv = sb_malloc(m, (nb + 1) * sizeof *s.yv);
  s.xch = sb_malloc(m, na + 1);
  s.ych = sb_malloc(m, nb + 1);
  long *fd = sb_malloc(m, nd * sizeof *fd), *bd = sb_malloc(m, nd * sizeof *bd);
  s.fd = fd ? fd + nb + 1 : NULL; /* diagonals run from -(nb + 1) to na + 1 */
  s.bd = bd ? bd + nb + 1 : NULL;
  s.max_cost = isqrt((long)nd);
  if (s.max_cost < 256) s.max_cost = 256;
  int bad = !s.xv || !s.yv || !s.xch || !s.ych || !s.fd || !s.bd;
  if (!bad) {
    memset(s.xch, 0, na + 1);
    memset(s.ych, 0, nb + 1);
  }
  bad = bad || classify(&s) || compare(&s) || hunks(&s, (long)context, out, st);
  release(&s);
  return bad ? sb_fail_oom(e) : SB_OK;
}

int sb_diff_is_binary(const char *s, size_t len) { return memchr(s, '\0', len < 8000 ? len : 8000) != NULL; }
