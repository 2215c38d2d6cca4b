#include <string.h>

#include "doc/office.h"

/* One slide's (or notes page's) text: shapes whose placeholder is a title
 * go to the title, the others to the text; the slide number, date, header
 * and footer are the master's, left out (on a notes page too, with the
 * slide's own title, which a notes page repeats in its image). */
typedef struct {
  XML_Parser p;
  doc_buf title, text, shape;
  bool notes, in_text, shape_title, shape_chrome;
  int shapes; /* depth of shapes (p:sp) and frames (p:graphicFrame: tables) */
  int rc;
} slide_state;

static void stop(slide_state *st, int rc) {
  if (!st->rc) st->rc = rc;
  XML_StopParser(st->p, XML_FALSE);
}

static void add(slide_state *st, doc_buf *b, const char *s, size_t n) {
  if (!doc_buf_add(b, s, n)) stop(st, DOC_EFBIG);
}

/* A paragraph's end: a line break between paragraphs, none trailing. */
static void line(slide_state *st, doc_buf *b) {
  if (b->n && b->p[b->n - 1] != '\n') add(st, b, "\n", 1);
}

static doc_buf *target(slide_state *st) { return st->shapes ? &st->shape : &st->text; }

static bool shape(const char *l) { return strcmp(l, "sp") == 0 || strcmp(l, "graphicFrame") == 0; }

static void on_start(void *u, const char *name, const char **attrs) {
  slide_state *st = u;
  const char *l = doc_xml_local(name);
  if (shape(l)) {
    if (st->shapes++ == 0) doc_buf_clear(&st->shape), st->shape_title = st->shape_chrome = false;
  } else if (strcmp(l, "ph") == 0 && st->shapes) {
    const char *type = doc_xml_attr(attrs, "type");
    if (type && (strcmp(type, "title") == 0 || strcmp(type, "ctrTitle") == 0)) st->shape_title = true;
    if (type &&
        (strcmp(type, "sldNum") == 0 || strcmp(type, "dt") == 0 || strcmp(type, "ftr") == 0 ||
         strcmp(type, "hdr") == 0 || strcmp(type, "sldImg") == 0))
      st->shape_chrome = true;
  } else if (strcmp(l, "t") == 0) st->in_text = true;
  else if (strcmp(l, "br") == 0) add(st, target(st), "\n", 1);
}

static void on_end(void *u, const char *name) {
  slide_state *st = u;
  const char *l = doc_xml_local(name);
  if (strcmp(l, "t") == 0) st->in_text = false;
  else if (strcmp(l, "p") == 0) line(st, target(st));
  else if (shape(l) && st->shapes && --st->shapes == 0) {
    while (st->shape.n && st->shape.p[st->shape.n - 1] == '\n') st->shape.p[--st->shape.n] = 0;
    if (!st->shape.n || st->shape_chrome || (st->notes && st->shape_title)) return;
    doc_buf *to = st->shape_title && !st->notes ? &st->title : &st->text;
    line(st, to);
    add(st, to, st->shape.p, st->shape.n);
  }
}

static void on_text(void *u, const char *s, int n) {
  slide_state *st = u;
  if (st->in_text) add(st, target(st), s, (size_t)n);
}

/* Read one slide or notes part into st (its buffers cleared first). */
static int read_slide(doc_zip *z, const char *name, slide_state *st, bool notes) {
  doc_buf_clear(&st->title), doc_buf_clear(&st->text), doc_buf_clear(&st->shape);
  st->notes = notes, st->shapes = 0, st->in_text = false, st->rc = 0;
  st->p = doc_xml_parser(st);
  if (!st->p) return doc_fail(DOC_ENOMEM, "ENOMEM: out of memory");
  XML_SetElementHandler(st->p, on_start, on_end);
  XML_SetCharacterDataHandler(st->p, on_text);
  int rc = doc_zip_parse(z, name, st->p);
  if (!rc && st->rc) rc = doc_fail(st->rc, "EFBIG: a slide's text in %s is over %zu bytes", name, DOC_TEXT_MAX);
  XML_ParserFree(st->p);
  while (st->text.n && st->text.p[st->text.n - 1] == '\n') st->text.p[--st->text.n] = 0;
  return rc;
}

/* The slides' relationship ids in the presentation's order (p:sldId). */
typedef struct {
  doc_buf ids; /* NUL-separated */
  size_t n;
  int rc;
} order_state;

static void order_start(void *u, const char *name, const char **attrs) {
  order_state *st = u;
  const char *id = strcmp(doc_xml_local(name), "sldId") == 0 ? doc_xml_attr(attrs, "id") : NULL;
  /* sldId has its own numeric "id" and the relationship's "r:id": take the namespaced one */
  for (size_t i = 0; id && attrs[i]; i += 2)
    if (strchr(attrs[i], '|') && strcmp(doc_xml_local(attrs[i]), "id") == 0) {
      if (!doc_buf_add(&st->ids, attrs[i + 1], strlen(attrs[i + 1]) + 1)) st->rc = DOC_EFBIG;
      else st->n++;
    }
}

int doc_pptx(doc_zip *z, doc_buf *out, size_t *count) {
  doc_rels top, rels, srels;
  memset(&rels, 0, sizeof rels), memset(&srels, 0, sizeof srels);
  int rc = doc_rels_read(z, "", &top);
  if (rc) return rc;
  const doc_rel *main = doc_rels_type(&top, "/officeDocument");
  const char *pres = main ? main->target : "ppt/presentation.xml";
  order_state order = {.ids = {.max = (size_t)1 << 20}};
  slide_state st = {0};
  st.title.max = st.text.max = st.shape.max = DOC_TEXT_MAX;
  doc_buf notes = {.max = DOC_TEXT_MAX};
  rc = doc_rels_read(z, pres, &rels);
  XML_Parser p = rc ? NULL : doc_xml_parser(&order);
  if (!rc && !p) rc = doc_fail(DOC_ENOMEM, "ENOMEM: out of memory");
  if (p) {
    XML_SetStartElementHandler(p, order_start);
    rc = doc_zip_parse(z, pres, p);
    if (!rc && order.rc) rc = doc_fail(order.rc, "EFBIG: too many slides");
    XML_ParserFree(p);
  }
  const char *id = order.ids.p;
  for (size_t i = 0; !rc && i < order.n; i++, id += strlen(id) + 1) {
    const doc_rel *r = doc_rels_id(&rels, id);
    if (!r) continue; /* a slide id without its part: nothing to read */
    doc_buf_clear(&notes); /* the notes page first, then the slide's own text stays in st */
    rc = doc_rels_read(z, r->target, &srels);
    const doc_rel *n = rc ? NULL : doc_rels_type(&srels, "/notesSlide");
    if (n && doc_zip_has(z, n->target)) {
      rc = read_slide(z, n->target, &st, true);
      if (!rc && !doc_buf_add(&notes, st.text.p ? st.text.p : "", st.text.n))
        rc = doc_fail(DOC_EFBIG, "EFBIG: the notes of slide %zu are over %zu bytes", i + 1, DOC_TEXT_MAX);
    }
    if (!rc) rc = read_slide(z, r->target, &st, false);
    doc_rels_free(&srels);
    if (rc) break;
    bool ok = (!*count || doc_buf_add(out, ",", 1)) &&
        doc_buf_printf(out, "{\"type\":\"slide\",\"index\":%zu,\"title\":", i + 1) &&
        doc_buf_json(out, st.title.p ? st.title.p : "", st.title.n) && doc_buf_puts(out, ",\"text\":") &&
        doc_buf_json(out, st.text.p ? st.text.p : "", st.text.n) && doc_buf_puts(out, ",\"notes\":") &&
        doc_buf_json(out, notes.p ? notes.p : "", notes.n) && doc_buf_puts(out, "}");
    if (!ok) rc = doc_fail(DOC_EFBIG, "EFBIG: the slides' text is larger than the helper's output cap");
    (*count)++;
  }
  doc_buf_free(&order.ids), doc_buf_free(&notes);
  doc_buf_free(&st.title), doc_buf_free(&st.text), doc_buf_free(&st.shape);
  doc_rels_free(&rels), doc_rels_free(&top);
  return rc;
}
