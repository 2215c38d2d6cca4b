/* The engine-side helper's upload and removal (see helper.h). */
#include "remote/helper.h"

#include <stdio.h>
#include <string.h>

#include "remote/tree.h"

/* Run by envd's sh: $1 the directory's mark, then the program as printf
 * formats (a byte each: itself, %% and \\, or \ooo). The directory is new
 * and the user's alone (mkdir -m 700 fails on one that exists); a program
 * that does not answer `check` as expected is removed with it. Prints the
 * program's absolute path. */
#define NL "\n"
static const char install_script[] =
    "umask 077; d=${TMPDIR:-/tmp}/" SB_RHELPER_DIR_PREFIX "$1; shift" NL "case $d in /*) ;; *) exit 3 ;; esac" NL
    "command -p mkdir -m 700 \"$d\" || exit 3" NL "h=$d/" SB_RHELPER_NAME NL
    "for c; do printf \"$c\"; done >\"$h\" && command -p chmod 700 \"$h\" && o=$(\"$h\" check) &&"
    " [ \"$o\" = '" SB_RHELPER_HELLO "' ] || { command -p rm -rf \"$d\"; exit 3; }" NL "printf '%s\\n' \"$h\"" NL;
#undef NL

/* A chunk of the formats stays well below Linux's limit for one argument
 * (MAX_ARG_STRLEN, 128 KiB). */
#define CHUNK (60 * 1024)

/* The program as printf formats into one block: chunks NUL-separated,
 * their starts in args[3..]; NULL on OOM. */
static char *encode(const sb_mem *m, const unsigned char *p, size_t n, const char **args, size_t maxargs, size_t *nargs,
                    size_t *size) {
  *size = 4 * n + n / CHUNK + 2;
  char *out = sb_malloc(m, *size), *o = out, *chunk = out;
  if (!out) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if ((size_t)(o - chunk) >= CHUNK - 4) { /* a chunk ends between bytes, never inside an escape */
      *o++ = '\0';
      if (k == maxargs) break;
      args[k++] = chunk;
      chunk = o;
    }
    unsigned char c = p[i];
    if (c == '%' || c == '\\') {
      *o++ = (char)c;
      *o++ = (char)c;
    } else if (c >= 0x20 && c < 0x7f) {
      *o++ = (char)c;
    } else {
      *o++ = '\\';
      *o++ = (char)('0' + (c >> 6));
      *o++ = (char)('0' + ((c >> 3) & 7));
      *o++ = (char)('0' + (c & 7));
    }
  }
  *o++ = '\0';
  if (k < maxargs) args[k++] = chunk;
  *nargs = k;
  return out;
}

#define MAXARGS 64

sb_code sb_rhelper_install(const sb_mem *m, const sb_envd *d, sb_rhelper *h, double limit, sb_err *e) {
  h->live = false;
  const unsigned char *bytes;
  size_t n = sb_rhelper_program(&bytes);
  if (!n) return sb_fail(e, SB_ENOTSUP, "this build carries no engine-side helper");
  sb_rtree mark;
  if (!sb_rtree_init(&mark)) return sb_fail(e, SB_EIO, "no random bytes from the kernel for the helper's directory");
  const char *args[4 + MAXARGS + 1] = {"-c", install_script, "agent-sandbox-rtree", mark.mark};
  size_t nargs, size;
  char *formats = encode(m, bytes, n, args + 4, MAXARGS, &nargs, &size);
  if (!formats) return sb_fail_oom(e);
  args[4 + nargs] = NULL;
  sb_rproc_spec s = {.cmd = SB_RTREE_SHELL, .args = args, .deadline = limit, .keepalive = 1};
  sb_rtree_answer o = {.exit_code = -1}; /* the path, one line */
  sb_code c = nargs < MAXARGS ? sb_envd_start(m, d, &s, sb_rtree_collect, &o, e)
                              : sb_fail(e, SB_EFBIG, "the helper is too large for one upload");
  sb_free(m, formats, size);
  if (c != SB_OK) return c;
  size_t pl = strlen("/" SB_RHELPER_NAME);
  if (!o.ended || o.exit_code != 0 || o.text[0] != '/' || o.len >= sizeof h->path || o.len < pl ||
      strcmp(o.text + o.len - pl, "/" SB_RHELPER_NAME) != 0 || strchr(o.text, '\n'))
    return sb_failf(e, SB_EIO, "remote: the helper did not install (exit %d: %.80s)", o.exit_code, o.text);
  memcpy(h->path, o.text, o.len + 1);
  h->live = true;
  return SB_OK;
}

static sb_code ignore(void *ud, const sb_rproc_event *ev, sb_err *e) {
  (void)ud;
  (void)ev;
  (void)e;
  return SB_OK;
}

sb_code sb_rhelper_remove(const sb_mem *m, const sb_envd *d, sb_rhelper *h, double limit, sb_err *e) {
  if (!h->live) return SB_OK;
  h->live = false;
  const char *args[] = {"remove", NULL};
  sb_rproc_spec s = {.cmd = h->path, .args = args, .deadline = limit, .keepalive = 1};
  return sb_envd_start(m, d, &s, ignore, NULL, e);
}
