/* The document helper's output: a growable text buffer with a cap (what a
 * hostile file can make the helper hold is bounded), JSON built in one
 * (strings always valid UTF-8: a bad byte becomes U+FFFD). */
#ifndef SB_DOC_OUT_H
#define SB_DOC_OUT_H

#include <stdbool.h>
#include <stddef.h>

/* The helper's exit codes: 0 done; the others name the error's kind, and
 * stderr holds the message ("EINVAL: ..."). */
enum { DOC_OK = 0, DOC_EINVAL = 2, DOC_EFBIG = 3, DOC_ENOMEM = 4, DOC_EIO = 5 };

typedef struct {
  char *p;
  size_t n, cap, max; /* max: the most this buffer may hold */
} doc_buf;

/* Append n bytes; false (and nothing appended) past b->max or out of memory. */
bool doc_buf_add(doc_buf *b, const char *s, size_t n);
void doc_buf_clear(doc_buf *b);
void doc_buf_free(doc_buf *b);

/* Print a message to stderr and return code (for `return doc_fail(...)`). */
int doc_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append s[0..n) as a JSON string; a C string with doc_buf_json0. */
bool doc_buf_json(doc_buf *b, const char *s, size_t n);
bool doc_buf_json0(doc_buf *b, const char *s);
/* Append a C string as it is. */
bool doc_buf_puts(doc_buf *b, const char *s);
bool doc_buf_printf(doc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
