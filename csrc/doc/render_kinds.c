/* sandbox-docrender's kinds: PDF (text, a page as PNG) and images scaled. */
#include <string.h>

#include "doc/image.h"
#include "doc/kinds.h"
#include "doc/pdf.h"

static int run_pdf(char **args, const doc_buf *in, const doc_limits *lim, doc_buf *out) {
  size_t first, last;
  if (!doc_number(args[0], &first) || !doc_number(args[1], &last))
    return doc_fail(DOC_EINVAL, "EINVAL: pdf FIRST LAST: numbers, not %s %s", args[0], args[1]);
  return doc_pdf_text(in->p ? in->p : "", in->n, first ? first : 1, last, out);
}

static int run_pdf_page(char **args, const doc_buf *in, const doc_limits *lim, doc_buf *out) {
  size_t page, side;
  if (!doc_number(args[0], &page) || !doc_number(args[1], &side))
    return doc_fail(DOC_EINVAL, "EINVAL: pdf-page PAGE MAX_SIDE: numbers, not %s %s", args[0], args[1]);
  return doc_pdf_page_png(in->p ? in->p : "", in->n, page, side, out);
}

static int run_image(char **args, const doc_buf *in, const doc_limits *lim, doc_buf *out) {
  size_t side;
  if (strncmp(args[0], "image/", 6) != 0 || !doc_number(args[1], &side))
    return doc_fail(DOC_EINVAL, "EINVAL: image MIME MAX_SIDE: an image/ type and a number, not %s %s", args[0],
                    args[1]);
  return doc_image_scale(in->p ? in->p : "", in->n, args[0], side, out);
}

const char doc_program[] = "sandbox-docrender";
const doc_kind doc_kinds[] = {{"pdf", " FIRST LAST", 2, run_pdf},
                              {"pdf-page", " PAGE MAX_SIDE", 2, run_pdf_page},
                              {"image", " MIME MAX_SIDE", 2, run_image},
                              {NULL, NULL, 0, NULL}};
