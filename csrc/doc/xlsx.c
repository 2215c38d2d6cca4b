#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc/office.h"

/* Columns past this are left out of a row (and the sheet says truncated):
 * a cell at XFD1 must not make a row of 16384 empty strings. */
#define MAX_COLS 512

/* The shared strings (xl/sharedStrings.xml): each <si>'s text, its runs
 * joined, phonetic hints (<rPh>) left out. */
typedef struct {
  XML_Parser p;
  doc_buf all; /* the strings, each NUL-terminated */
  size_t *off; /* where each starts in all */
  size_t n, cap;
  doc_buf cur;
  bool in_t;
  int phonetic, rc;
} strings_state;

static void s_stop(strings_state *st, int rc) {
  if (!st->rc) st->rc = rc;
  XML_StopParser(st->p, XML_FALSE);
}

static void s_start(void *u, const char *name, const char **attrs) {
  strings_state *st = u;
  const char *l = doc_xml_local(name);
  if (strcmp(l, "si") == 0) doc_buf_clear(&st->cur);
  else if (strcmp(l, "rPh") == 0) st->phonetic++;
  else if (strcmp(l, "t") == 0) st->in_t = true;
}

static void s_end(void *u, const char *name) {
  strings_state *st = u;
  const char *l = doc_xml_local(name);
  if (strcmp(l, "rPh") == 0) st->phonetic--;
  else if (strcmp(l, "t") == 0) st->in_t = false;
  else if (strcmp(l, "si") == 0) {
    if (st->n == st->cap) {
      size_t cap = st->cap ? st->cap * 2 : 256;
      size_t *off = realloc(st->off, cap * sizeof *off);
      if (!off) return s_stop(st, DOC_ENOMEM);
      st->off = off, st->cap = cap;
    }
    st->off[st->n++] = st->all.n;
    if (!doc_buf_add(&st->all, st->cur.p ? st->cur.p : "", st->cur.n) || !doc_buf_add(&st->all, "", 1))
      s_stop(st, DOC_EFBIG);
  }
}

static void s_text(void *u, const char *s, int n) {
  strings_state *st = u;
  if (st->in_t && !st->phonetic && !doc_buf_add(&st->cur, s, (size_t)n)) s_stop(st, DOC_EFBIG);
}

/* A sheet's rows: each <c>'s value by its type (s: shared string, b:
 * boolean, inlineStr: its <is> text, the rest: <v> as stored). */
typedef struct {
  XML_Parser p;
  const strings_state *strings;
  doc_buf *out, value, cells;
  size_t rows, max_rows, row, next_col, col, cols;
  char type[16];
  bool in_v, in_t, truncated;
  int rc;
} sheet_state;

static void stop(sheet_state *st, int rc) {
  if (!st->rc) st->rc = rc;
  XML_StopParser(st->p, XML_FALSE);
}

/* "BC12" → column 55 (1-based); 0 if the reference has no letters. */
static size_t column(const char *ref) {
  size_t c = 0;
  for (; *ref >= 'A' && *ref <= 'Z' && c < 100000; ref++) c = c * 26 + (size_t)(*ref - 'A' + 1);
  return c;
}

/* A row's number: its r attribute where that is one Excel can have
 * (1 to 1048576, ECMA-376's limit), else the row after the last; never a
 * number a reader's JSON cannot hold (strtoul took "-1" and 10^20 too). */
#define XLSX_MAX_ROW 1048576u
static size_t row_number(const char *r, size_t prev) {
  size_t n = 0;
  if (r && *r) {
    for (; *r >= '0' && *r <= '9' && n <= XLSX_MAX_ROW; r++) n = n * 10 + (size_t)(*r - '0');
    if (*r == '\0' && n >= 1 && n <= XLSX_MAX_ROW) return n;
  }
  return prev < XLSX_MAX_ROW ? prev + 1 : XLSX_MAX_ROW;
}

static void c_start(void *u, const char *name, const char **attrs) {
  sheet_state *st = u;
  const char *l = doc_xml_local(name);
  if (strcmp(l, "row") == 0) {
    const char *r = doc_xml_attr(attrs, "r");
    st->row = row_number(r, st->row);
    st->next_col = 1, st->cols = 0;
    doc_buf_clear(&st->cells);
  } else if (strcmp(l, "c") == 0) {
    const char *r = doc_xml_attr(attrs, "r"), *t = doc_xml_attr(attrs, "t");
    st->col = r ? column(r) : st->next_col;
    if (!st->col) st->col = st->next_col;
    snprintf(st->type, sizeof st->type, "%s", t ? t : "n");
    doc_buf_clear(&st->value);
  } else if (strcmp(l, "v") == 0) st->in_v = true;
  else if (strcmp(l, "t") == 0) st->in_t = true;
}

static void cell_end(sheet_state *st) {
  if (st->col > MAX_COLS || st->col < st->next_col) {
    if (st->col > MAX_COLS) st->truncated = true;
    return;
  }
  const char *v = st->value.p ? st->value.p : "";
  size_t n = st->value.n;
  if (strcmp(st->type, "s") == 0) {
    char *end;
    unsigned long i = strtoul(v, &end, 10);
    if (end == v || i >= st->strings->n) v = "", n = 0;
    else v = st->strings->all.p + st->strings->off[i], n = strlen(v);
  } else if (strcmp(st->type, "b") == 0) {
    v = strcmp(v, "1") == 0 ? "TRUE" : "FALSE", n = strlen(v);
  }
  bool ok = true;
  for (; ok && st->next_col < st->col; st->next_col++) ok = doc_buf_puts(&st->cells, st->cols++ ? ",\"\"" : "\"\"");
  ok = ok && (!st->cols++ || doc_buf_add(&st->cells, ",", 1)) && doc_buf_json(&st->cells, v, n);
  st->next_col = st->col + 1;
  if (!ok) stop(st, DOC_EFBIG);
}

static void c_end(void *u, const char *name) {
  sheet_state *st = u;
  const char *l = doc_xml_local(name);
  if (strcmp(l, "v") == 0) st->in_v = false;
  else if (strcmp(l, "t") == 0) st->in_t = false;
  else if (strcmp(l, "c") == 0) cell_end(st);
  else if (strcmp(l, "row") == 0 && st->cols) {
    if (st->rows == st->max_rows) {
      st->truncated = true;
      XML_StopParser(st->p, XML_FALSE); /* enough: the rest of the sheet is not read */
      return;
    }
    bool ok = (!st->rows++ || doc_buf_add(st->out, ",", 1)) &&
        doc_buf_printf(st->out, "{\"row\":%zu,\"cells\":[", st->row) &&
        doc_buf_add(st->out, st->cells.p, st->cells.n) && doc_buf_puts(st->out, "]}");
    if (!ok) stop(st, DOC_EFBIG);
  }
}

static void c_text(void *u, const char *s, int n) {
  sheet_state *st = u;
  bool inline_text = st->in_t && strcmp(st->type, "inlineStr") == 0;
  if ((st->in_v || inline_text) && !doc_buf_add(&st->value, s, (size_t)n)) stop(st, DOC_EFBIG);
}

/* The workbook's sheets in order: name and relationship id, NUL-separated pairs. */
typedef struct {
  doc_buf sheets;
  size_t n;
  int rc;
} book_state;

static void b_start(void *u, const char *name, const char **attrs) {
  book_state *st = u;
  if (strcmp(doc_xml_local(name), "sheet") != 0) return;
  const char *nm = doc_xml_attr(attrs, "name"), *id = NULL;
  for (size_t i = 0; attrs[i]; i += 2)
    if (strchr(attrs[i], '|') && strcmp(doc_xml_local(attrs[i]), "id") == 0) id = attrs[i + 1];
  if (!nm || !id) return;
  if (!doc_buf_add(&st->sheets, nm, strlen(nm) + 1) || !doc_buf_add(&st->sheets, id, strlen(id) + 1))
    st->rc = DOC_EFBIG;
  else st->n++;
}

int doc_xlsx(doc_zip *z, doc_buf *out, size_t *count, size_t max_rows) {
  doc_rels top, rels;
  memset(&rels, 0, sizeof rels);
  int rc = doc_rels_read(z, "", &top);
  if (rc) return rc;
  const doc_rel *main = doc_rels_type(&top, "/officeDocument");
  const char *book_name = main ? main->target : "xl/workbook.xml";
  book_state book = {.sheets = {.max = (size_t)4 << 20}};
  strings_state strings = {.all = {.max = out->max}, .cur = {.max = DOC_TEXT_MAX}};
  sheet_state sheet = {.strings = &strings, .out = out, .value = {.max = DOC_TEXT_MAX}, .cells = {.max = DOC_TEXT_MAX}};
  rc = doc_rels_read(z, book_name, &rels);
  XML_Parser p = rc ? NULL : doc_xml_parser(&book);
  if (!rc && !p) rc = doc_fail(DOC_ENOMEM, "ENOMEM: out of memory");
  if (p) {
    XML_SetStartElementHandler(p, b_start);
    rc = doc_zip_parse(z, book_name, p);
    if (!rc && book.rc) rc = doc_fail(book.rc, "EFBIG: too many sheets in %s", book_name);
    XML_ParserFree(p);
  }
  const doc_rel *ss = rc ? NULL : doc_rels_type(&rels, "/sharedStrings");
  if (ss && doc_zip_has(z, ss->target)) {
    strings.p = doc_xml_parser(&strings);
    if (!strings.p) rc = doc_fail(DOC_ENOMEM, "ENOMEM: out of memory");
    else {
      XML_SetElementHandler(strings.p, s_start, s_end);
      XML_SetCharacterDataHandler(strings.p, s_text);
      rc = doc_zip_parse(z, ss->target, strings.p);
      if (!rc && strings.rc) rc = doc_fail(strings.rc, "EFBIG: the shared strings are over the cap");
      XML_ParserFree(strings.p);
    }
  }
  const char *s = book.sheets.p;
  for (size_t i = 0; !rc && i < book.n; i++) {
    const char *nm = s, *id = s + strlen(s) + 1;
    s = id + strlen(id) + 1;
    const doc_rel *r = doc_rels_id(&rels, id);
    if (!r) continue;
    if ((*count && !doc_buf_add(out, ",", 1)) ||
        !doc_buf_printf(out, "{\"type\":\"sheet\",\"index\":%zu,\"name\":", i + 1) || !doc_buf_json0(out, nm) ||
        !doc_buf_puts(out, ",\"rows\":[")) {
      rc = doc_fail(DOC_EFBIG, "EFBIG: the sheets are larger than the helper's output cap");
      break;
    }
    (*count)++;
    sheet.rows = sheet.row = 0, sheet.max_rows = max_rows, sheet.truncated = false, sheet.rc = 0;
    sheet.p = doc_xml_parser(&sheet);
    if (!sheet.p) {
      rc = doc_fail(DOC_ENOMEM, "ENOMEM: out of memory");
      break;
    }
    XML_SetElementHandler(sheet.p, c_start, c_end);
    XML_SetCharacterDataHandler(sheet.p, c_text);
    rc = doc_zip_parse(z, r->target, sheet.p);
    if (!rc && sheet.rc) rc = doc_fail(sheet.rc, "EFBIG: sheet %s is larger than the helper's output cap", nm);
    XML_ParserFree(sheet.p);
    if (!rc && !doc_buf_printf(out, "],\"truncated\":%s}", sheet.truncated ? "true" : "false"))
      rc = doc_fail(DOC_EFBIG, "EFBIG: the sheets are larger than the helper's output cap");
  }
  doc_buf_free(&book.sheets), doc_buf_free(&strings.all), doc_buf_free(&strings.cur);
  free(strings.off);
  doc_buf_free(&sheet.value), doc_buf_free(&sheet.cells);
  doc_rels_free(&rels), doc_rels_free(&top);
  return rc;
}
