/* sandbox-docparse: the document helper. It reads one file's bytes on
 * stdin (bytes the sandbox's backend read, never a path) and prints what
 * they hold as JSON (a PDF page: PNG). The sandbox runs it confined (its
 * own ContainerSandbox: no network, no writable file, a memory, process
 * and time limit); it also limits itself before it reads a byte, so a
 * malformed file costs at most those limits wherever it is started.
 *
 *   sandbox-docparse [--memory=B] [--cpu=S] [--max-input=B] [--max-output=B]
 *                    [--max-inflated=B] KIND [ARGS]
 *   KIND: pdf FIRST LAST | pdf-page PAGE MAX_SIDE | docx | pptx | xlsx MAX_ROWS
 *         | image MIME MAX_SIDE
 *
 * Exit 0 with the result on stdout, or DOC_E* (out.h) with "CODE: message"
 * on stderr. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "doc/image.h"
#include "doc/office.h"
#include "doc/pdf.h"

typedef struct {
  size_t memory, cpu, max_input, max_output, max_inflated;
} limits;

static bool number(const char *s, size_t *out) {
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

static int office(const char *kind, doc_buf *in, size_t max_inflated, size_t max_rows, doc_buf *out) {
  doc_zip z;
  int rc = doc_zip_open(&z, in->p ? in->p : "", in->n, max_inflated);
  if (rc) return rc;
  size_t count = 0;
  if (!doc_buf_puts(out, "{\"parts\":[")) rc = doc_fail(DOC_EFBIG, "EFBIG: the output cap is too small");
  else if (strcmp(kind, "docx") == 0) rc = doc_docx(&z, out, &count);
  else if (strcmp(kind, "pptx") == 0) rc = doc_pptx(&z, out, &count);
  else rc = doc_xlsx(&z, out, &count, max_rows);
  if (!rc && !doc_buf_puts(out, "]}")) rc = doc_fail(DOC_EFBIG, "EFBIG: the result is over the output cap");
  doc_zip_close(&z);
  return rc;
}

int main(int argc, char **argv) {
  limits lim = {.memory = (size_t)1 << 30,
                .cpu = 30,
                .max_input = (size_t)256 << 20,
                .max_output = (size_t)64 << 20,
                .max_inflated = (size_t)256 << 20};
  static const struct {
    const char *name;
    size_t offset;
  } flags[] = {{"--memory=", offsetof(limits, memory)},
               {"--cpu=", offsetof(limits, cpu)},
               {"--max-input=", offsetof(limits, max_input)},
               {"--max-output=", offsetof(limits, max_output)},
               {"--max-inflated=", offsetof(limits, max_inflated)}};
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    size_t f = 0, k = 0;
    while (f < sizeof flags / sizeof *flags && strncmp(argv[i], flags[f].name, k = strlen(flags[f].name)) != 0) f++;
    if (f == sizeof flags / sizeof *flags || !number(argv[i] + k, (size_t *)((char *)&lim + flags[f].offset)))
      return doc_fail(DOC_EINVAL, "EINVAL: sandbox-docparse: bad option %s", argv[i]);
  }
  const char *kind = i < argc ? argv[i] : "";
  size_t a = 0, b = 0;
  const char *mime = NULL;
  if (strcmp(kind, "image") == 0 && argc - i == 3) { /* image MIME MAX_SIDE: the MIME type is no number */
    mime = argv[i + 1];
    if (strncmp(mime, "image/", 6) != 0 || !number(argv[i + 2], &b))
      return doc_fail(DOC_EINVAL, "EINVAL: usage: sandbox-docparse image image/TYPE MAX_SIDE < file");
    argc = i + 1; /* the rest as for a kind without arguments */
  }
  bool two = strcmp(kind, "pdf") == 0 || strcmp(kind, "pdf-page") == 0, one = strcmp(kind, "xlsx") == 0;
  bool none = strcmp(kind, "docx") == 0 || strcmp(kind, "pptx") == 0 || mime;
  if (!(two || one || none) ||
      argc - i - 1 !=
          (two       ? 2
               : one ? 1
                     : 0) ||
      (argc > i + 1 && !number(argv[i + 1], &a)) || (two && !number(argv[i + 2], &b)))
    return doc_fail(DOC_EINVAL,
                    "EINVAL: usage: sandbox-docparse [--memory=B] [--cpu=S] KIND [ARGS] < file "
                    "(KIND: pdf FIRST LAST | pdf-page PAGE MAX_SIDE | docx | pptx | xlsx MAX_ROWS)");
  /* limits first: nothing of the file is read before they hold */
  if (!set_limit(RLIMIT_AS, lim.memory) || !set_limit(RLIMIT_CPU, lim.cpu) || !set_limit(RLIMIT_CORE, 0) ||
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return doc_fail(DOC_EIO, "EIO: sandbox-docparse could not set its limits: %s", strerror(errno));
  doc_buf in = {0}, out = {.max = lim.max_output};
  int rc = read_input(lim.max_input, &in);
  if (!rc) {
    if (strcmp(kind, "pdf") == 0) rc = doc_pdf_text(in.p ? in.p : "", in.n, a ? a : 1, b, &out);
    else if (strcmp(kind, "pdf-page") == 0) rc = doc_pdf_page_png(in.p ? in.p : "", in.n, a, b, &out);
    else if (mime) rc = doc_image_scale(in.p ? in.p : "", in.n, mime, b, &out);
    else rc = office(kind, &in, lim.max_inflated, a, &out);
  }
  if (!rc) rc = write_all(out.p ? out.p : "", out.n);
  doc_buf_free(&in), doc_buf_free(&out);
  return rc;
}
