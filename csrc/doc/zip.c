#include "doc/zip.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES 20000

int doc_zip_open(doc_zip *d, const void *data, size_t n, size_t max_inflated) {
  memset(d, 0, sizeof *d);
  d->max_inflated = max_inflated;
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t *src = zip_source_buffer_create(data, n, 0, &err);
  if (src) d->z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!d->z) {
    int code = zip_error_code_zip(&err) == ZIP_ER_MEMORY ? DOC_ENOMEM : DOC_EINVAL;
    int r = doc_fail(code, "EINVAL: not an Office file: its ZIP package does not open (%s)", zip_error_strerror(&err));
    if (src) zip_source_free(src);
    zip_error_fini(&err);
    return r;
  }
  zip_error_fini(&err);
  if (zip_get_num_entries(d->z, 0) > MAX_ENTRIES) {
    doc_zip_close(d);
    return doc_fail(DOC_EFBIG, "EFBIG: the package has more than %d entries", MAX_ENTRIES);
  }
  return DOC_OK;
}

void doc_zip_close(doc_zip *d) {
  if (d->z) zip_discard(d->z);
  d->z = NULL;
}

bool doc_zip_has(doc_zip *d, const char *name) { return zip_name_locate(d->z, name, 0) >= 0; }

int doc_zip_parse(doc_zip *d, const char *name, XML_Parser p) {
  zip_file_t *f = zip_fopen(d->z, name, 0);
  if (!f)
    return doc_fail(DOC_EINVAL, "EINVAL: the package has no part %s (or it does not open: %s)", name,
                    zip_strerror(d->z));
  int rc = DOC_OK;
  for (;;) {
    void *chunk = XML_GetBuffer(p, 65536);
    if (!chunk) {
      rc = doc_fail(DOC_ENOMEM, "ENOMEM: out of memory parsing %s", name);
      break;
    }
    zip_int64_t k = zip_fread(f, chunk, 65536);
    if (k < 0) {
      rc = doc_fail(DOC_EINVAL, "EINVAL: %s does not inflate: %s", name, zip_file_strerror(f));
      break;
    }
    if ((size_t)k > d->max_inflated - d->inflated) {
      rc = doc_fail(DOC_EFBIG, "EFBIG: the package inflates past %zu bytes (at %s): a zip bomb, or too large to read",
                    d->max_inflated, name);
      break;
    }
    d->inflated += (size_t)k;
    enum XML_Status st = XML_ParseBuffer(p, (int)k, k == 0);
    if (st == XML_STATUS_SUSPENDED) break;
    if (st == XML_STATUS_ERROR) {
      if (XML_GetErrorCode(p) == XML_ERROR_ABORTED) break; /* a handler's stop: it reports */
      rc = doc_fail(DOC_EINVAL, "EINVAL: %s is not well-formed XML (line %lu: %s)", name,
                    (unsigned long)XML_GetCurrentLineNumber(p), XML_ErrorString(XML_GetErrorCode(p)));
      break;
    }
    if (k == 0) break;
  }
  zip_fclose(f);
  return rc;
}

XML_Parser doc_xml_parser(void *user) {
  XML_Parser p = XML_ParserCreateNS("UTF-8", '|');
  if (p) XML_SetUserData(p, user);
  return p;
}

const char *doc_xml_local(const char *name) {
  const char *bar = strrchr(name, '|');
  return bar ? bar + 1 : name;
}

const char *doc_xml_attr(const char **attrs, const char *local) {
  for (size_t i = 0; attrs[i]; i += 2)
    if (strcmp(doc_xml_local(attrs[i]), local) == 0) return attrs[i + 1];
  return NULL;
}

/* A target relative to the directory of part ("ppt/slides/slide1.xml" and
 * "../notesSlides/n1.xml" make "ppt/notesSlides/n1.xml"); absolute ones
 * start at the package's root. NULL out of memory. */
static char *resolve(const char *part, const char *target) {
  size_t cap = strlen(part) + strlen(target) + 2;
  char *out = malloc(cap);
  if (!out) return NULL;
  out[0] = 0;
  if (target[0] == '/') target++;
  else {
    const char *slash = strrchr(part, '/');
    if (slash) memcpy(out, part, (size_t)(slash - part) + 1), out[slash - part + 1] = 0;
  }
  const char *s = target;
  while (*s) {
    const char *e = strchr(s, '/');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len == 2 && s[0] == '.' && s[1] == '.') {
      size_t n = strlen(out);
      if (n) n--; /* drop the trailing '/', then the last name */
      while (n && out[n - 1] != '/') n--;
      out[n] = 0;
    } else if (!(len == 1 && s[0] == '.') && len) {
      strncat(out, s, len);
      if (e) strcat(out, "/");
    }
    s = e ? e + 1 : s + len;
  }
  return out;
}

typedef struct {
  doc_rels *r;
  const char *part;
  int rc;
} rels_state;

static void rel_start(void *u, const char *name, const char **attrs) {
  rels_state *st = u;
  if (st->rc || strcmp(doc_xml_local(name), "Relationship") != 0) return;
  const char *id = doc_xml_attr(attrs, "Id"), *type = doc_xml_attr(attrs, "Type");
  const char *target = doc_xml_attr(attrs, "Target"), *mode = doc_xml_attr(attrs, "TargetMode");
  if (!id || !type || !target || (mode && strcmp(mode, "External") == 0)) return;
  doc_rels *r = st->r;
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 16;
    doc_rel *v = realloc(r->v, cap * sizeof *v);
    if (!v) {
      st->rc = DOC_ENOMEM;
      return;
    }
    r->v = v, r->cap = cap;
  }
  doc_rel *e = &r->v[r->n];
  e->id = strdup(id), e->type = strdup(type), e->target = resolve(st->part, target);
  if (!e->id || !e->type || !e->target) {
    free(e->id), free(e->type), free(e->target);
    st->rc = DOC_ENOMEM;
    return;
  }
  r->n++;
}

int doc_rels_read(doc_zip *d, const char *part, doc_rels *out) {
  memset(out, 0, sizeof *out);
  const char *slash = strrchr(part, '/');
  size_t dir = slash ? (size_t)(slash - part) + 1 : 0;
  char *name = malloc(strlen(part) + 12);
  if (!name) return doc_fail(DOC_ENOMEM, "ENOMEM: out of memory");
  memcpy(name, part, dir);
  strcpy(name + dir, "_rels/");
  strcat(name, part + dir);
  strcat(name, ".rels");
  int rc = DOC_OK;
  if (doc_zip_has(d, name)) {
    rels_state st = {out, part, 0};
    XML_Parser p = doc_xml_parser(&st);
    if (!p) rc = doc_fail(DOC_ENOMEM, "ENOMEM: out of memory");
    else {
      XML_SetStartElementHandler(p, rel_start);
      rc = doc_zip_parse(d, name, p);
      if (!rc && st.rc) rc = doc_fail(st.rc, "ENOMEM: out of memory reading %s", name);
      XML_ParserFree(p);
    }
  }
  free(name);
  if (rc) doc_rels_free(out);
  return rc;
}

const doc_rel *doc_rels_id(const doc_rels *r, const char *id) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->v[i].id, id) == 0) return &r->v[i];
  return NULL;
}

const doc_rel *doc_rels_type(const doc_rels *r, const char *suffix) {
  size_t k = strlen(suffix);
  for (size_t i = 0; i < r->n; i++) {
    size_t n = strlen(r->v[i].type);
    if (n >= k && strcmp(r->v[i].type + n - k, suffix) == 0) return &r->v[i];
  }
  return NULL;
}

void doc_rels_free(doc_rels *r) {
  for (size_t i = 0; i < r->n; i++) free(r->v[i].id), free(r->v[i].type), free(r->v[i].target);
  free(r->v);
  memset(r, 0, sizeof *r);
}
