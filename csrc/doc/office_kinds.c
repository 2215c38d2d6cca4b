/* sandbox-docparse's kinds: the Office formats. */
#include <string.h>

#include "doc/kinds.h"
#include "doc/office.h"

typedef int (*reader)(doc_zip *z, doc_buf *out, size_t *count, size_t max_rows);

static int docx(doc_zip *z, doc_buf *out, size_t *count, size_t max_rows) { return doc_docx(z, out, count); }
static int pptx(doc_zip *z, doc_buf *out, size_t *count, size_t max_rows) { return doc_pptx(z, out, count); }

/* {"parts":[...]} of the package in `in`, read by `read`. */
static int package(reader read, const doc_buf *in, const doc_limits *lim, size_t max_rows, doc_buf *out) {
  doc_zip z;
  int rc = doc_zip_open(&z, in->p ? in->p : "", in->n, lim->max_inflated);
  if (rc) return rc;
  size_t count = 0;
  if (!doc_buf_puts(out, "{\"parts\":[")) rc = doc_fail(DOC_EFBIG, "EFBIG: the output cap is too small");
  else rc = read(&z, out, &count, max_rows);
  if (!rc && !doc_buf_puts(out, "]}")) rc = doc_fail(DOC_EFBIG, "EFBIG: the result is over the output cap");
  doc_zip_close(&z);
  return rc;
}

static int run_docx(char **args, const doc_buf *in, const doc_limits *lim, doc_buf *out) {
  return package(docx, in, lim, 0, out);
}
static int run_pptx(char **args, const doc_buf *in, const doc_limits *lim, doc_buf *out) {
  return package(pptx, in, lim, 0, out);
}
static int run_xlsx(char **args, const doc_buf *in, const doc_limits *lim, doc_buf *out) {
  size_t rows;
  if (!doc_number(args[0], &rows)) return doc_fail(DOC_EINVAL, "EINVAL: xlsx MAX_ROWS: %s is no number", args[0]);
  return package(doc_xlsx, in, lim, rows, out);
}

const char doc_program[] = "sandbox-docparse";
const doc_kind doc_kinds[] = {
    {"docx", "", 0, run_docx}, {"pptx", "", 0, run_pptx}, {"xlsx", " MAX_ROWS", 1, run_xlsx}, {NULL, NULL, 0, NULL}};
