#include "doc/pdf.h"

#include <cairo.h>
#include <poppler.h>
#include <string.h>

static PopplerDocument *open_pdf(const void *data, size_t n, int *rc) {
  GError *err = NULL;
  GBytes *bytes = g_bytes_new_static(data, n);
  PopplerDocument *doc = poppler_document_new_from_bytes(bytes, NULL, &err);
  g_bytes_unref(bytes);
  if (!doc) {
    bool locked = err && err->domain == POPPLER_ERROR && err->code == POPPLER_ERROR_ENCRYPTED;
    *rc = doc_fail(DOC_EINVAL, "EINVAL: %s (%s)",
                   locked ? "the PDF is encrypted (no password is tried)" : "not a PDF Poppler can open",
                   err ? err->message : "no reason given");
    if (err) g_error_free(err);
  }
  return doc;
}

int doc_pdf_text(const void *data, size_t n, size_t first, size_t last, doc_buf *out) {
  int rc = DOC_OK;
  PopplerDocument *doc = open_pdf(data, n, &rc);
  if (!doc) return rc;
  size_t pages = (size_t)poppler_document_get_n_pages(doc);
  if (!last || last > pages) last = pages;
  if (!doc_buf_printf(out, "{\"pages\":%zu,\"parts\":[", pages)) rc = DOC_EFBIG;
  for (size_t i = first; !rc && i <= last; i++) {
    PopplerPage *page = poppler_document_get_page(doc, (int)i - 1);
    char *text = page ? poppler_page_get_text(page) : NULL;
    bool ok = (i == first || doc_buf_add(out, ",", 1)) &&
        doc_buf_printf(out, "{\"type\":\"page\",\"page\":%zu,\"text\":", i) && doc_buf_json0(out, text ? text : "") &&
        doc_buf_puts(out, "}");
    g_free(text);
    if (page) g_object_unref(page);
    if (!ok) rc = DOC_EFBIG;
  }
  if (!rc && !doc_buf_puts(out, "]}")) rc = DOC_EFBIG;
  if (rc == DOC_EFBIG)
    doc_fail(rc, "EFBIG: the text of pages %zu-%zu is larger than the helper's output cap", first, last);
  g_object_unref(doc);
  return rc;
}

static cairo_status_t to_buf(void *closure, const unsigned char *data, unsigned int n) {
  return doc_buf_add(closure, (const char *)data, n) ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

int doc_pdf_page_png(const void *data, size_t n, size_t page_no, size_t max_side, doc_buf *out) {
  int rc = DOC_OK;
  PopplerDocument *doc = open_pdf(data, n, &rc);
  if (!doc) return rc;
  int pages = poppler_document_get_n_pages(doc);
  if (page_no < 1 || page_no > (size_t)pages) {
    g_object_unref(doc);
    return doc_fail(DOC_EINVAL, "EINVAL: page %zu is not in the document (it has %d)", page_no, pages);
  }
  PopplerPage *page = poppler_document_get_page(doc, (int)page_no - 1);
  double w = 0, h = 0;
  if (page) poppler_page_get_size(page, &w, &h);
  if (!page || w < 1 || h < 1 || w > 1e5 || h > 1e5) {
    if (page) g_object_unref(page);
    g_object_unref(doc);
    return doc_fail(DOC_EINVAL, "EINVAL: page %zu has no usable size (%g×%g points)", page_no, w, h);
  }
  double scale = (double)max_side / (w > h ? w : h);
  if (scale > 2) scale = 2;
  int pw = (int)(w * scale + 0.5), ph = (int)(h * scale + 0.5);
  if (pw < 1) pw = 1;
  if (ph < 1) ph = 1;
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, pw, ph);
  cairo_t *cr = cairo_create(s);
  cairo_set_source_rgb(cr, 1, 1, 1); /* paper: a PDF page draws on white */
  cairo_paint(cr);
  cairo_scale(cr, scale, scale);
  poppler_page_render(page, cr);
  cairo_destroy(cr);
  cairo_surface_flush(s);
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS)
    rc = doc_fail(DOC_ENOMEM, "ENOMEM: the page's image (%d×%d) could not be made", pw, ph);
  else if (cairo_surface_write_to_png_stream(s, to_buf, out) != CAIRO_STATUS_SUCCESS)
    rc = doc_fail(DOC_EFBIG, "EFBIG: the page's image is larger than the helper's output cap");
  cairo_surface_destroy(s);
  g_object_unref(page);
  g_object_unref(doc);
  return rc;
}
