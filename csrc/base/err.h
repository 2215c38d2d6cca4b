/* The one error vocabulary of both backends (SPEC §3). An environmental
 * failure travels as an sb_code plus an optional detail sentence, and reaches
 * Lua as `nil, "CODE: message: path", "CODE"`. */
#ifndef SB_ERR_H
#define SB_ERR_H

#include <stddef.h>

typedef enum sb_code {
  SB_OK = 0,
  SB_ENOENT,
  SB_EEXIST,
  SB_ENOTDIR,
  SB_EISDIR,
  SB_ENOTEMPTY,
  SB_EINVAL,
  SB_ENAMETOOLONG,
  SB_ELOOP,
  SB_EESCAPE,
  SB_EACCES,
  SB_EFBIG,
  SB_ENOSPC,
  SB_ENOTSUP,
  SB_EBUSY,
  SB_EAGAIN,
  SB_EIO,
  SB_NCODES
} sb_code;

/* What the code alone cannot tell a caller that must react to the cause:
 * set by the layer that knows it, after sb_fail*, which clears it. */
typedef enum {
  SB_CAUSE_NONE,
  SB_CAUSE_TIMEOUT, /* a remote call got no answer in its time */
  SB_CAUSE_INTERNAL, /* the remote engine answered Connect's `internal` */
} sb_cause;

typedef struct sb_err {
  sb_code code;
  sb_cause cause;
  const char *msg; /* detail; NULL = the code's default text */
  char dyn[512]; /* storage when the detail is formatted (room for a why-and-what-to-do) */
} sb_err;

const char *sb_code_name(sb_code c);
const char *sb_code_text(sb_code c);
sb_code sb_code_from_errno(int e);

/* Record a failure; both return c so callers can `return sb_fail(...)`. */
sb_code sb_fail(sb_err *e, sb_code c, const char *msg);
sb_code sb_failf(sb_err *e, sb_code c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
sb_code sb_fail_errno(sb_err *e, int errnum);
/* The one out-of-memory failure (ENOSPC: the sandbox's budget or the host's
 * allocator said no). */
sb_code sb_fail_oom(sb_err *e);

#endif
