#include "doc/image.h"

#include <gdk-pixbuf/gdk-pixbuf.h>
#include <string.h>

/* The size both sides get, the aspect kept, the longer one max_side. */
static void fit(int w, int h, size_t max_side, int *ow, int *oh) {
  double s = (double)max_side / (w > h ? w : h);
  if (s > 1) s = 1;
  *ow = (int)(w * s + 0.5), *oh = (int)(h * s + 0.5);
  if (*ow < 1) *ow = 1;
  if (*oh < 1) *oh = 1;
}

typedef struct {
  size_t max_side;
} want;

static void on_size(GdkPixbufLoader *l, int w, int h, gpointer user) {
  int ow, oh;
  fit(w, h, ((want *)user)->max_side, &ow, &oh);
  gdk_pixbuf_loader_set_size(l, ow, oh);
}

static gboolean to_buf(const gchar *data, gsize n, GError **err, gpointer user) {
  if (doc_buf_add(user, data, n)) return TRUE;
  g_set_error_literal(err, G_FILE_ERROR, G_FILE_ERROR_NOSPC, "over the output cap");
  return FALSE;
}

int doc_image_scale(const void *data, size_t n, const char *mime, size_t max_side, doc_buf *out) {
  if (max_side < 1) return doc_fail(DOC_EINVAL, "EINVAL: the longest side must be at least 1 pixel");
  GError *err = NULL;
  GdkPixbufLoader *l = gdk_pixbuf_loader_new_with_mime_type(mime, &err);
  if (!l) {
    int rc = doc_fail(DOC_EINVAL, "EINVAL: no decoder for %s here (%s)", mime, err ? err->message : "none");
    if (err) g_error_free(err);
    return rc;
  }
  want w = {max_side};
  g_signal_connect(l, "size-prepared", G_CALLBACK(on_size), &w);
  gboolean ok = gdk_pixbuf_loader_write(l, data, n, &err);
  ok = gdk_pixbuf_loader_close(l, ok ? &err : NULL) && ok;
  GdkPixbuf *pix = ok ? gdk_pixbuf_loader_get_pixbuf(l) : NULL;
  if (!pix) {
    int rc = doc_fail(DOC_EINVAL, "EINVAL: the image does not decode (%s)", err ? err->message : "no image in it");
    if (err) g_error_free(err);
    g_object_unref(l);
    return rc;
  }
  g_object_ref(pix);
  g_object_unref(l);
  int ow, oh, pw = gdk_pixbuf_get_width(pix), ph = gdk_pixbuf_get_height(pix);
  fit(pw, ph, max_side, &ow, &oh);
  if (ow != pw || oh != ph) { /* a loader that decoded at full size: scale now */
    GdkPixbuf *small = gdk_pixbuf_scale_simple(pix, ow, oh, GDK_INTERP_BILINEAR);
    g_object_unref(pix);
    pix = small;
    if (!pix) return doc_fail(DOC_ENOMEM, "ENOMEM: the scaled image (%d×%d) could not be made", ow, oh);
  }
  bool jpeg = strcmp(mime, "image/jpeg") == 0;
  ok = jpeg ? gdk_pixbuf_save_to_callback(pix, to_buf, out, "jpeg", &err, "quality", "85", NULL)
            : gdk_pixbuf_save_to_callback(pix, to_buf, out, "png", &err, NULL);
  g_object_unref(pix);
  int rc = DOC_OK;
  if (!ok) rc = doc_fail(DOC_EFBIG, "EFBIG: the scaled image could not be written (%s)", err ? err->message : "?");
  if (err) g_error_free(err);
  return rc;
}
