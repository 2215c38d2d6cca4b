/* The document helpers' entry (sandbox-docparse, sandbox-docrender: see
 * kinds.h). A helper reads one file's bytes on stdin (bytes the sandbox's
 * backend read, never a path) and prints what they hold: JSON, or an image.
 * The sandbox runs it confined (its own ContainerSandbox: no network, no
 * writable file, a memory, process and time limit); it also limits itself
 * before it reads a byte, so a malformed file costs at most those limits
 * wherever it is started.
 *
 *   PROGRAM [--memory=B] [--cpu=S] [--max-input=B] [--max-output=B]
 *           [--max-inflated=B] KIND [ARGS] < file
 *
 * Exit 0 with the result on stdout, or DOC_E* (out.h) with "CODE: message"
 * on stderr. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "doc/kinds.h"

bool doc_number(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') return false;
  *out = (size_t)v;
  return true;
}

static bool set_limit(int what, size_t v) {
  struct rlimit r = {(rlim_t)v, (rlim_t)v};
  return setrlimit(what, &r) == 0;
}

static int read_input(size_t max, doc_buf *in) {
  in->max = max;
  char chunk[65536];
  for (;;) {
    ssize_t k = read(0, chunk, sizeof chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return doc_fail(DOC_EIO, "EIO: reading the file on stdin: %s", strerror(errno));
    if (k == 0) return DOC_OK;
    if (!doc_buf_add(in, chunk, (size_t)k)) return doc_fail(DOC_EFBIG, "EFBIG: the file is over %zu bytes", max);
  }
}

static int write_all(const char *p, size_t n) {
  while (n) {
    ssize_t k = write(1, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return doc_fail(DOC_EIO, "EIO: writing the result: %s", strerror(errno));
    p += k, n -= (size_t)k;
  }
  return DOC_OK;
}

static int usage(void) {
  char kinds[512] = "";
  for (const doc_kind *k = doc_kinds; k->name; k++) {
    size_t n = strlen(kinds);
    snprintf(kinds + n, sizeof kinds - n, "%s%s%s", n ? " | " : "", k->name, k->usage);
  }
  return doc_fail(DOC_EINVAL,
                  "EINVAL: usage: %s [--memory=B] [--cpu=S] [--max-input=B] [--max-output=B] "
                  "[--max-inflated=B] KIND [ARGS] < file (KIND: %s)",
                  doc_program, kinds);
}

int main(int argc, char **argv) {
  doc_limits lim = {.memory = (size_t)1 << 30,
                    .cpu = 30,
                    .max_input = (size_t)256 << 20,
                    .max_output = (size_t)64 << 20,
                    .max_inflated = (size_t)256 << 20};
  static const struct {
    const char *name;
    size_t offset;
  } flags[] = {{"--memory=", offsetof(doc_limits, memory)},
               {"--cpu=", offsetof(doc_limits, cpu)},
               {"--max-input=", offsetof(doc_limits, max_input)},
               {"--max-output=", offsetof(doc_limits, max_output)},
               {"--max-inflated=", offsetof(doc_limits, max_inflated)}};
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    size_t f = 0, k = 0;
    while (f < sizeof flags / sizeof *flags && strncmp(argv[i], flags[f].name, k = strlen(flags[f].name)) != 0) f++;
    if (f == sizeof flags / sizeof *flags || !doc_number(argv[i] + k, (size_t *)((char *)&lim + flags[f].offset)))
      return doc_fail(DOC_EINVAL, "EINVAL: %s: bad option %s", doc_program, argv[i]);
  }
  const doc_kind *kind = doc_kinds;
  while (kind->name && (i >= argc || strcmp(kind->name, argv[i]) != 0)) kind++;
  if (!kind->name || argc - i - 1 != kind->nargs) return usage();
  /* limits first: nothing of the file is read before they hold */
  if (!set_limit(RLIMIT_AS, lim.memory) || !set_limit(RLIMIT_CPU, lim.cpu) || !set_limit(RLIMIT_CORE, 0) ||
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return doc_fail(DOC_EIO, "EIO: %s could not set its limits: %s", doc_program, strerror(errno));
  doc_buf in = {0}, out = {.max = lim.max_output};
  int rc = read_input(lim.max_input, &in);
  if (!rc) rc = kind->run(argv + i + 1, &in, &lim, &out);
  if (!rc) rc = write_all(out.p ? out.p : "", out.n);
  doc_buf_free(&in), doc_buf_free(&out);
  return rc;
}
