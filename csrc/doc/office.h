/* The three Office formats, each read from an open package into parts of
 * the result's JSON (appended to out, separated by commas; *count says how
 * many). The text is what the file holds, in document order: no layout,
 * no styles but a paragraph's style name, no formulas (a cell's cached
 * value), numbers and dates as they are stored. */
#ifndef SB_DOC_OFFICE_H
#define SB_DOC_OFFICE_H

#include "doc/out.h"
#include "doc/zip.h"

/* Word: {"type":"paragraph","text":..,"style"?:..} and
 * {"type":"table","rows":[[cell text, ...], ...]} in body order. */
int doc_docx(doc_zip *z, doc_buf *out, size_t *count);
/* PowerPoint: {"type":"slide","index":n,"title":..,"text":..,"notes":..}
 * in the presentation's order. */
int doc_pptx(doc_zip *z, doc_buf *out, size_t *count);
/* Excel: {"type":"sheet","index":n,"name":..,"rows":[{"row":r,"cells":[..]}],
 * "truncated":bool} in the workbook's order, at most max_rows rows a sheet. */
int doc_xlsx(doc_zip *z, doc_buf *out, size_t *count, size_t max_rows);

/* The cap on one text (a paragraph, a slide, a cell, a shared string). */
#define DOC_TEXT_MAX ((size_t)16 << 20)

#endif
