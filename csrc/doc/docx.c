#include <string.h>

#include "doc/office.h"

/* Paragraphs outside tables become parts; inside a table each paragraph
 * joins its cell's text, and a table nested in a cell is read into the
 * outer cell (a model reads the outer grid; the inner one is its text). */
typedef struct {
  XML_Parser p;
  doc_buf *out, para, cell, row, rows, style;
  size_t *count;
  int table; /* depth of w:tbl */
  int rc;
  bool in_text;
  size_t cells; /* in the current row */
} docx_state;

static void stop(docx_state *st, int rc) {
  if (!st->rc) st->rc = rc;
  XML_StopParser(st->p, XML_FALSE);
}

static void add(docx_state *st, doc_buf *b, const char *s, size_t n) {
  if (!doc_buf_add(b, s, n)) stop(st, DOC_EFBIG);
}

static void part_sep(docx_state *st) {
  if (*st->count && !doc_buf_add(st->out, ",", 1)) stop(st, DOC_EFBIG);
  (*st->count)++;
}

static void on_start(void *u, const char *name, const char **attrs) {
  docx_state *st = u;
  const char *l = doc_xml_local(name);
  if (strcmp(l, "t") == 0) st->in_text = true;
  else if (strcmp(l, "tab") == 0) add(st, &st->para, "\t", 1);
  else if (strcmp(l, "br") == 0 || strcmp(l, "cr") == 0) add(st, &st->para, "\n", 1);
  else if (strcmp(l, "pStyle") == 0 && st->table == 0) {
    const char *v = doc_xml_attr(attrs, "val");
    doc_buf_clear(&st->style);
    if (v) add(st, &st->style, v, strlen(v));
  } else if (strcmp(l, "tbl") == 0) {
    if (st->table++ == 0) doc_buf_clear(&st->rows);
  } else if (strcmp(l, "tr") == 0 && st->table == 1) {
    doc_buf_clear(&st->row), st->cells = 0;
  } else if (strcmp(l, "tc") == 0 && st->table == 1) {
    doc_buf_clear(&st->cell);
  }
}

static void on_end(void *u, const char *name) {
  docx_state *st = u;
  const char *l = doc_xml_local(name);
  if (strcmp(l, "t") == 0) st->in_text = false;
  else if (strcmp(l, "p") == 0) {
    if (st->table) {
      if (st->cell.n && st->para.n) add(st, &st->cell, "\n", 1);
      add(st, &st->cell, st->para.p ? st->para.p : "", st->para.n);
    } else if (st->para.n) {
      part_sep(st);
      bool ok =
          doc_buf_puts(st->out, "{\"type\":\"paragraph\",\"text\":") && doc_buf_json(st->out, st->para.p, st->para.n);
      if (ok && st->style.n)
        ok = doc_buf_puts(st->out, ",\"style\":") && doc_buf_json(st->out, st->style.p, st->style.n);
      if (!ok || !doc_buf_puts(st->out, "}")) stop(st, DOC_EFBIG);
    }
    doc_buf_clear(&st->para), doc_buf_clear(&st->style);
  } else if (strcmp(l, "tc") == 0 && st->table == 1) {
    if ((st->cells++ && !doc_buf_add(&st->row, ",", 1)) ||
        !doc_buf_json(&st->row, st->cell.p ? st->cell.p : "", st->cell.n))
      stop(st, DOC_EFBIG);
  } else if (strcmp(l, "tr") == 0 && st->table == 1) {
    if ((st->rows.n && !doc_buf_add(&st->rows, ",", 1)) || !doc_buf_add(&st->rows, "[", 1) ||
        !doc_buf_add(&st->rows, st->row.p ? st->row.p : "", st->row.n) || !doc_buf_add(&st->rows, "]", 1))
      stop(st, DOC_EFBIG);
  } else if (strcmp(l, "tbl") == 0 && st->table > 0) {
    if (--st->table == 0) {
      part_sep(st);
      if (!doc_buf_puts(st->out, "{\"type\":\"table\",\"rows\":[") ||
          !doc_buf_add(st->out, st->rows.p ? st->rows.p : "", st->rows.n) || !doc_buf_puts(st->out, "]}"))
        stop(st, DOC_EFBIG);
    }
  }
}

static void on_text(void *u, const char *s, int n) {
  docx_state *st = u;
  if (st->in_text) add(st, &st->para, s, (size_t)n);
}

int doc_docx(doc_zip *z, doc_buf *out, size_t *count) {
  doc_rels rels;
  int rc = doc_rels_read(z, "", &rels); /* _rels/.rels names the main part */
  if (rc) return rc;
  const doc_rel *main = doc_rels_type(&rels, "/officeDocument");
  const char *name = main ? main->target : "word/document.xml";
  docx_state st = {.out = out, .count = count};
  st.para.max = st.cell.max = st.style.max = DOC_TEXT_MAX;
  st.row.max = st.rows.max = out->max;
  st.p = doc_xml_parser(&st);
  if (!st.p) rc = doc_fail(DOC_ENOMEM, "ENOMEM: out of memory");
  else {
    XML_SetElementHandler(st.p, on_start, on_end);
    XML_SetCharacterDataHandler(st.p, on_text);
    rc = doc_zip_parse(z, name, st.p);
    if (!rc && st.rc) rc = doc_fail(st.rc, "EFBIG: the document's text is larger than the helper's output cap");
    XML_ParserFree(st.p);
  }
  doc_buf_free(&st.para), doc_buf_free(&st.cell), doc_buf_free(&st.row), doc_buf_free(&st.rows);
  doc_buf_free(&st.style);
  doc_rels_free(&rels);
  return rc;
}
