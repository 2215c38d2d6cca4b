/* Images scaled down through gdk-pixbuf: decoded at the target size where
 * the format's loader can (JPEG), else decoded and scaled; re-encoded as
 * JPEG for a JPEG, PNG for the others. */
#ifndef SB_DOC_IMAGE_H
#define SB_DOC_IMAGE_H

#include <stddef.h>

#include "doc/out.h"

/* The image in data (of MIME type mime, the loader chosen by it, never by
 * sniffing) with its longer side at most max_side pixels, into out. */
int doc_image_scale(const void *data, size_t n, const char *mime, size_t max_side, doc_buf *out);

#endif
