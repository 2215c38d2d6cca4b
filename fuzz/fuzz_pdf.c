/* libFuzzer: PDF through the helper's reader (csrc/doc/pdf.c over
 * Poppler): the text of the first pages and the first page as a small
 * image. Invariants: no crash or leak in our code; on success the text
 * result is balanced JSON of valid UTF-8 within the cap, and the image is
 * a PNG. (Poppler itself is Debian's build, not instrumented: this checks
 * how we drive it and what we make of its answers.) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "doc/pdf.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1 << 20)) return 0;
  doc_buf out = {.max = (size_t)4 << 20};
  if (doc_pdf_text(data, size, 1, 3, &out) == DOC_OK) {
    CHECK(out.n > 2 && out.p[0] == '{' && out.p[out.n - 1] == '}');
    CHECK(sb_utf8_valid(out.p, out.n));
  }
  doc_buf_clear(&out);
  if (doc_pdf_page_png(data, size, 1, 64, &out) == DOC_OK) CHECK(out.n > 8 && memcmp(out.p, "\211PNG", 4) == 0);
  doc_buf_free(&out);
  return 0;
}
