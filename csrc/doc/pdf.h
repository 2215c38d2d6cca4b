/* PDF through Poppler (its GLib interface): text per page, and a page
 * rendered as a PNG image. */
#ifndef SB_DOC_PDF_H
#define SB_DOC_PDF_H

#include <stddef.h>

#include "doc/out.h"

/* {"pages":N,"parts":[{"type":"page","page":n,"text":..}, ...]} for pages
 * first..last (1-based, clamped to the document; last 0: to the end). */
int doc_pdf_text(const void *data, size_t n, size_t first, size_t last, doc_buf *out);
/* Page `page` as a PNG, its longer side at most max_side pixels (and never
 * above 2 pixels a point), into out. */
int doc_pdf_page_png(const void *data, size_t n, size_t page, size_t max_side, doc_buf *out);

#endif
