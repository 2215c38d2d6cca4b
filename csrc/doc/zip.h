/* Office files' packages (OOXML: a ZIP of XML parts), read from memory with
 * libzip and streamed into expat. What may be inflated is capped over the
 * whole package (a zip bomb stops at the cap whatever its headers claim),
 * and so is the number of entries. Relationships (the `_rels` parts) are
 * resolved to part names here, once for the three formats. */
#ifndef SB_DOC_ZIP_H
#define SB_DOC_ZIP_H

#include <expat.h>
#include <stdbool.h>
#include <stddef.h>
#include <zip.h>

#include "doc/out.h"

typedef struct {
  zip_t *z;
  size_t inflated, max_inflated; /* bytes inflated so far; the cap over all parts */
} doc_zip;

/* Open the package in data[0..n) (kept by the caller while open). */
int doc_zip_open(doc_zip *d, const void *data, size_t n, size_t max_inflated);
void doc_zip_close(doc_zip *d);

/* Is there a part of this name? */
bool doc_zip_has(doc_zip *d, const char *name);

/* Stream the part into p (made with doc_xml_parser). DOC_OK, or an error
 * (printed): a missing part, a malformed one, the inflation cap. A handler
 * that stops the parser with XML_StopParser(p, XML_FALSE) ends it early
 * without an error. */
int doc_zip_parse(doc_zip *d, const char *name, XML_Parser p);

/* An expat parser reporting names as "namespace-uri|local-name". */
XML_Parser doc_xml_parser(void *user);
/* The local part of such a name. */
const char *doc_xml_local(const char *name);
/* An attribute's value by its local name (any namespace), or NULL. */
const char *doc_xml_attr(const char **attrs, const char *local);

/* A part's relationships: id, type and target resolved to a part name. */
typedef struct {
  char *id, *type, *target;
} doc_rel;
typedef struct {
  doc_rel *v;
  size_t n, cap;
} doc_rels;

/* The relationships of part (from its _rels file; none if it has none). */
int doc_rels_read(doc_zip *d, const char *part, doc_rels *out);
const doc_rel *doc_rels_id(const doc_rels *r, const char *id);
/* The first relationship whose type ends with suffix ("/notesSlide"). */
const doc_rel *doc_rels_type(const doc_rels *r, const char *suffix);
void doc_rels_free(doc_rels *r);

#endif
