#include "base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
  const char *name, *text;
} codes[SB_NCODES] = {
    [SB_OK] = {"OK", "success"},
    [SB_ENOENT] = {"ENOENT", "no such file or directory"},
    [SB_EEXIST] = {"EEXIST", "file exists"},
    [SB_ENOTDIR] = {"ENOTDIR", "not a directory"},
    [SB_EISDIR] = {"EISDIR", "is a directory"},
    [SB_ENOTEMPTY] = {"ENOTEMPTY", "directory not empty"},
    [SB_EINVAL] = {"EINVAL", "invalid argument"},
    [SB_ENAMETOOLONG] = {"ENAMETOOLONG", "file name too long"},
    [SB_ELOOP] = {"ELOOP", "too many levels of symbolic links (a loop)"},
    [SB_EESCAPE] = {"EESCAPE", "path escapes the sandbox"},
    [SB_EACCES] = {"EACCES", "permission denied"},
    [SB_EFBIG] = {"EFBIG", "file too large"},
    [SB_ENOSPC] = {"ENOSPC", "no space left in the sandbox"},
    [SB_ENOTSUP] = {"ENOTSUP", "operation not supported"},
    [SB_EBUSY] = {"EBUSY", "resource busy"},
    [SB_EAGAIN] = {"EAGAIN", "resource temporarily unavailable, try again"},
    [SB_EIO] = {"EIO", "input/output error"},
};

const char *sb_code_name(sb_code c) { return (unsigned)c < SB_NCODES ? codes[c].name : "EIO"; }

const char *sb_code_text(sb_code c) { return (unsigned)c < SB_NCODES ? codes[c].text : codes[SB_EIO].text; }

sb_code sb_code_from_errno(int e) {
  switch (e) {
  case 0: return SB_OK;
  case ENOENT: return SB_ENOENT;
  case EEXIST: return SB_EEXIST;
  case ENOTDIR: return SB_ENOTDIR;
  case EISDIR: return SB_EISDIR;
  case ENOTEMPTY: return SB_ENOTEMPTY;
  case EINVAL: return SB_EINVAL;
  case ENAMETOOLONG: return SB_ENAMETOOLONG;
  case ELOOP: return SB_ELOOP;
  case EXDEV: return SB_EESCAPE;
  case EACCES:
  case EPERM:
  case EROFS: return SB_EACCES;
  case EFBIG: return SB_EFBIG;
  case ENOSPC:
  case EDQUOT:
  case ENOMEM: return SB_ENOSPC;
  case ENOTSUP:
  case ENXIO:
  case ENODEV: return SB_ENOTSUP;
  case EBUSY: return SB_EBUSY;
  case EAGAIN:
  case EINTR: return SB_EAGAIN;
  default: return SB_EIO;
  }
}

sb_code sb_fail(sb_err *e, sb_code c, const char *msg) {
  e->code = c;
  e->cause = SB_CAUSE_NONE;
  e->msg = msg;
  return c;
}

sb_code sb_failf(sb_err *e, sb_code c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->dyn, sizeof e->dyn, fmt, ap);
  va_end(ap);
  e->code = c;
  e->cause = SB_CAUSE_NONE;
  e->msg = e->dyn;
  return c;
}

sb_code sb_fail_oom(sb_err *e) { return sb_fail(e, SB_ENOSPC, "out of memory"); }

sb_code sb_fail_errno(sb_err *e, int errnum) {
  sb_code c = sb_code_from_errno(errnum);
  if (errnum == ENOMEM) return sb_fail_oom(e);
  if (c == SB_EIO) return sb_failf(e, c, "%s", strerror(errnum));
  return sb_fail(e, c, NULL);
}
