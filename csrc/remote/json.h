/* JSON for the remote backend's protocol (E2B's REST API and envd's Connect
 * JSON, SPEC §15): a strict RFC 8259 parser into a flat token tape, a writer
 * with a sticky error, and the base64 protobuf's JSON uses for bytes.
 *
 * The tape: every value is one token; an array's elements and an object's
 * key/value pairs follow it in order, and `next` jumps past the whole value,
 * so a caller walks a document without recursion and frees it in two calls.
 * Strings are decoded (escapes resolved, UTF-8 checked) into one text buffer,
 * numbers are kept as their text (int64 travels as strings in Connect JSON
 * anyway). Nothing here raises or allocates outside the given sb_mem. */
#ifndef SB_NET_JSON_H
#define SB_NET_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/mem.h"

#define SB_JSON_MAX_DEPTH 128 /* nesting the parser and the writer accept */
#define SB_JSON_NONE ((size_t)-1)

typedef enum sb_jtype { SB_JNULL, SB_JFALSE, SB_JTRUE, SB_JNUM, SB_JSTR, SB_JARR, SB_JOBJ } sb_jtype;

typedef struct sb_jtok {
  uint8_t type; /* sb_jtype */
  uint32_t len; /* STR/NUM: bytes at text + off; ARR: elements; OBJ: pairs */
  uint32_t off; /* STR/NUM: offset of the NUL-terminated bytes in text */
  uint32_t next; /* the token after this value and everything inside it */
} sb_jtok;

typedef struct sb_json {
  const sb_mem *m;
  sb_jtok *t;
  size_t n, cap;
  sb_buf text;
} sb_json;

/* Parse s[0, n) whole (only white space may follow the value). EINVAL with
 * the byte offset and what was wrong; ENOSPC out of memory. d is usable for
 * sb_json_free either way. */
sb_code sb_json_parse(sb_json *d, const sb_mem *m, const char *s, size_t n, sb_err *e);
void sb_json_free(sb_json *d);

/* Navigation. Token 0 is the document; indexes past the tape, or a token of
 * another type, give SB_JSON_NONE / NULL / false, so lookups chain safely. */
size_t sb_json_field(const sb_json *d, size_t obj, const char *key);
size_t sb_json_elem(const sb_json *d, size_t arr, size_t k);
const char *sb_json_str(const sb_json *d, size_t i, size_t *len);
/* An integer: a number without fraction or exponent, or a string holding
 * one (proto3 JSON writes int64 as strings). */
bool sb_json_int(const sb_json *d, size_t i, int64_t *out);
bool sb_json_bool(const sb_json *d, size_t i, bool dflt);
bool sb_json_is(const sb_json *d, size_t i, sb_jtype type);

/* The writer: commas are placed for the caller; the first failure (out of
 * memory, a string that is not UTF-8, nesting too deep) sticks and every
 * later call is a no-op, so a caller checks once, at sb_jw_finish. */
typedef struct sb_jw {
  const sb_mem *m;
  sb_buf b;
  sb_code code;
  const char *why;
  int depth;
  char open[SB_JSON_MAX_DEPTH]; /* the opener at each level */
  bool need_comma;
  bool after_key;
} sb_jw;

void sb_jw_init(sb_jw *w, const sb_mem *m);
void sb_jw_begin_obj(sb_jw *w);
void sb_jw_begin_arr(sb_jw *w);
void sb_jw_end(sb_jw *w); /* closes the innermost object or array */
void sb_jw_key(sb_jw *w, const char *key);
void sb_jw_str(sb_jw *w, const char *s, size_t n);
void sb_jw_cstr(sb_jw *w, const char *s);
void sb_jw_int(sb_jw *w, int64_t v);
void sb_jw_bool(sb_jw *w, bool v);
void sb_jw_null(sb_jw *w);
void sb_jw_num_text(sb_jw *w, const char *s, size_t n); /* a number's text as parsed */
void sb_jw_b64(sb_jw *w, const void *data, size_t n); /* bytes, as a base64 string */
/* SB_OK with the document in w->b (NUL-terminated, the caller frees it with
 * sb_buf_free), or the sticky failure in e (and w->b freed). */
sb_code sb_jw_finish(sb_jw *w, sb_err *e);

/* Write token i of d and everything inside it (a canonical form: no white
 * space, strings re-escaped). */
void sb_jw_value(sb_jw *w, const sb_json *d, size_t i);

/* base64: standard alphabet with padding out (false: out of memory); in,
 * standard or URL-safe, padded or not (protobuf's JSON accepts all four),
 * appended to out: EINVAL on a byte outside the alphabet, a bad length or
 * stray low bits, ENOSPC out of memory. */
bool sb_b64_encode(const sb_mem *m, sb_buf *out, const void *data, size_t n);
sb_code sb_b64_decode(const sb_mem *m, sb_buf *out, const char *s, size_t n);

#endif
