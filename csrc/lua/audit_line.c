#include "lua/audit_line.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/utf8.h"

#define STR_MAX 1024 /* longer strings (an argv element, a path) are cut, and say so */
#define LIST_MAX 64 /* longer lists keep their first elements and a count */
#define DEPTH_MAX 3

void sb_aline_grow(sb_aline *w, const char *s, size_t n) {
  if (!w->bad && sb_buf_append(w->m, w->b, s, n) != 0) w->bad = true;
}

/* A JSON string: valid UTF-8 out whatever came in (a byte that is not
 * part of a well-formed sequence becomes U+FFFD), cut at STR_MAX. */
void sb_aline_str(sb_aline *w, const char *s, size_t n) {
  static const char hx[] = "0123456789abcdef";
  size_t cut = n > STR_MAX ? STR_MAX : n;
  sb_aline_put(w, "\"", 1);
  size_t i = 0, run = 0;
  while (i < cut) {
    unsigned char c = (unsigned char)s[i];
    size_t k = c < 0x80 ? 1 : sb_utf8_len((const unsigned char *)s + i, cut - i);
    if (k == 1 && c >= 0x20 && c != '"' && c != '\\') {
      i++;
      continue;
    }
    sb_aline_put(w, s + run, i - run);
    if (k > 1) {
      sb_aline_put(w, s + i, k);
      i += k;
    } else if (k == 0) {
      sb_aline_lit(w, "\\ufffd");
      i++;
    } else {
      char e[7] = {'\\', 'u', '0', '0', hx[c >> 4], hx[c & 15], 0};
      if (c == '"' || c == '\\') e[1] = (char)c, e[2] = 0;
      sb_aline_lit(w, e);
      i++;
    }
    run = i;
  }
  sb_aline_put(w, s + run, i - run);
  if (cut < n) {
    char more[48];
    sb_aline_put(w, more, (size_t)snprintf(more, sizeof more, "...[%zu more bytes]", n - cut));
  }
  sb_aline_put(w, "\"", 1);
}

/* Integers and times without printf: an event's numbers are most of what
 * formatting a line costs. */
void sb_aline_int(sb_aline *w, long long v) {
  char b[24], *e = b + sizeof b, *p = e;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do *--p = (char)('0' + u % 10);
  while ((u /= 10) != 0);
  if (v < 0) *--p = '-';
  sb_aline_put(w, p, (size_t)(e - p));
}

/* Seconds with microseconds, as %.6f would print a wall-clock time. */
void sb_aline_time(sb_aline *w, double t) {
  if (!(t >= 0 && t < 1e15)) {
    sb_aline_lit(w, "null");
    return;
  }
  long long us = (long long)(t * 1e6 + 0.5);
  sb_aline_int(w, us / 1000000);
  char f[8] = {'.'};
  long long r = us % 1000000;
  for (int i = 6; i >= 1; i--, r /= 10) f[i] = (char)('0' + r % 10);
  sb_aline_put(w, f, 7);
}

static void put_num(sb_aline *w, lua_State *L, int idx, bool is_time) {
  if (lua_isinteger(L, idx)) {
    sb_aline_int(w, (long long)lua_tointeger(L, idx));
    return;
  }
  double d = lua_tonumber(L, idx);
  if (is_time) {
    sb_aline_time(w, d);
  } else if (!isfinite(d)) {
    sb_aline_lit(w, "null");
  } else {
    char b[40];
    sb_aline_put(w, b, (size_t)snprintf(b, sizeof b, "%.17g", d));
  }
}

static void put_value(sb_aline *w, int idx, int depth, bool is_time);

static int key_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* An array (its length is its size, or it is empty) or an object with its
 * string keys in order; other keys and values (functions) are left out. */
static void put_table(sb_aline *w, int idx, int depth, const char *const *first) {
  lua_State *L = w->L;
  idx = lua_absindex(L, idx);
  size_t n = (size_t)lua_rawlen(L, idx);
  if (depth >= DEPTH_MAX) {
    sb_aline_lit(w, "null");
    return;
  }
  if (n > 0) {
    sb_aline_put(w, "[", 1);
    size_t shown = n > LIST_MAX ? LIST_MAX : n;
    for (size_t i = 1; i <= shown; i++) {
      if (i > 1) sb_aline_put(w, ",", 1);
      lua_rawgeti(L, idx, (lua_Integer)i);
      put_value(w, -1, depth + 1, false);
      lua_pop(L, 1);
    }
    if (shown < n) {
      char more[40];
      sb_aline_put(w, more, (size_t)snprintf(more, sizeof more, ",\"...[%zu more]\"", n - shown));
    }
    sb_aline_put(w, "]", 1);
    return;
  }
  const char *keys[64];
  size_t nk = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING || nk == sizeof keys / sizeof *keys) continue;
    const char *k = lua_tostring(L, -1); /* anchored: the key is in the table */
    bool skip = false;
    for (const char *const *f = first; f && *f && !skip; f++) skip = strcmp(*f, k) == 0;
    if (!skip) keys[nk++] = k;
  }
  qsort(keys, nk, sizeof *keys, key_cmp);
  bool any = false;
  sb_aline_put(w, "{", 1);
  for (int pass = 0; pass < 2; pass++) {
    size_t count = pass == 0 ? 0 : nk;
    if (pass == 0 && first)
      while (first[count]) count++;
    for (size_t i = 0; i < count; i++) {
      const char *k = pass == 0 ? first[i] : keys[i];
      int t = lua_getfield(L, idx, k);
      if (t == LUA_TNIL || t == LUA_TFUNCTION || t == LUA_TUSERDATA || t == LUA_TLIGHTUSERDATA || t == LUA_TTHREAD) {
        lua_pop(L, 1);
        continue;
      }
      if (any) sb_aline_put(w, ",", 1);
      any = true;
      sb_aline_str(w, k, strlen(k));
      sb_aline_put(w, ":", 1);
      put_value(w, -1, depth + 1, strcmp(k, "time") == 0);
      lua_pop(L, 1);
    }
  }
  sb_aline_put(w, "}", 1);
}

static void put_value(sb_aline *w, int idx, int depth, bool is_time) {
  lua_State *L = w->L;
  switch (lua_type(L, idx)) {
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    sb_aline_str(w, s, n);
    break;
  }
  case LUA_TNUMBER: put_num(w, L, idx, is_time); break;
  case LUA_TBOOLEAN: sb_aline_lit(w, lua_toboolean(L, idx) ? "true" : "false"); break;
  case LUA_TTABLE: put_table(w, idx, depth, NULL); break;
  default: sb_aline_lit(w, "null"); break;
  }
}

static const char *const FIRST[] = {"seq", "time", "kind", NULL};

void sb_aline_event(sb_aline *w, int idx) { put_table(w, idx, 0, FIRST); }
