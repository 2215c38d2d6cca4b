/* libFuzzer: the Office readers (csrc/doc: docx, pptx, xlsx over libzip and
 * expat). Input: a mode byte, then either a whole package (mode 0: the
 * bytes as a file would give them), or XML parts separated by NUL bytes
 * that this harness stores in a ZIP under the names each format reads
 * (mode 1 docx, 2 pptx, 3 xlsx: mutations reach the XML handlers instead
 * of dying at the ZIP's CRC). Invariants: a reader never crashes, leaks or
 * overruns; on success the result is one JSON object whose strings are
 * valid UTF-8, within the output cap. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/utf8.h"
#include "doc/office.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)

static const char *const NAMES[4][6] = {
    {NULL},
    {"word/document.xml", "_rels/.rels", NULL},
    {"ppt/presentation.xml", "ppt/_rels/presentation.xml.rels", "ppt/slides/slide1.xml",
     "ppt/slides/_rels/slide1.xml.rels", "ppt/notesSlides/notesSlide1.xml", NULL},
    {"xl/workbook.xml", "xl/_rels/workbook.xml.rels", "xl/sharedStrings.xml", "xl/worksheets/sheet1.xml", NULL},
};

static void put16(doc_buf *b, unsigned v) {
  char c[2] = {(char)(v & 255), (char)(v >> 8)};
  doc_buf_add(b, c, 2);
}
static void put32(doc_buf *b, unsigned long v) { put16(b, v & 0xffff), put16(b, (unsigned)(v >> 16)); }

/* A stored (uncompressed) ZIP of the parts, as the format's writer would. */
static void store(doc_buf *zip, const char *const *names, const uint8_t *d, size_t n) {
  doc_buf cd = {.max = (size_t)1 << 26};
  size_t count = 0;
  for (size_t i = 0; names[i]; i++) {
    const uint8_t *end = memchr(d, 0, n);
    size_t len = end ? (size_t)(end - d) : n;
    unsigned long crc = crc32(0, d, (uInt)len), off = zip->n;
    size_t nl = strlen(names[i]);
    put32(zip, 0x04034b50), put16(zip, 20), put16(zip, 0), put16(zip, 0), put32(zip, 0), put32(zip, crc);
    put32(zip, len), put32(zip, len), put16(zip, (unsigned)nl), put16(zip, 0);
    doc_buf_add(zip, names[i], nl), doc_buf_add(zip, (const char *)d, len);
    put32(&cd, 0x02014b50), put16(&cd, 20), put16(&cd, 20), put16(&cd, 0), put16(&cd, 0), put32(&cd, 0);
    put32(&cd, crc), put32(&cd, len), put32(&cd, len), put16(&cd, (unsigned)nl), put16(&cd, 0), put16(&cd, 0);
    put16(&cd, 0), put16(&cd, 0), put32(&cd, 0), put32(&cd, off), doc_buf_add(&cd, names[i], nl);
    count++;
    if (!end) break;
    d = end + 1, n -= len + 1;
  }
  unsigned long at = zip->n;
  doc_buf_add(zip, cd.p, cd.n);
  put32(zip, 0x06054b50), put16(zip, 0), put16(zip, 0), put16(zip, (unsigned)count), put16(zip, (unsigned)count);
  put32(zip, cd.n), put32(zip, at), put16(zip, 0);
  doc_buf_free(&cd);
}

/* Is s one JSON value's worth of balanced brackets, strings closed? */
static int balanced(const char *s, size_t n) {
  int depth = 0, in_str = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (in_str) {
      if (c == '\\') i++;
      else if (c == '"') in_str = 0;
      else if ((unsigned char)c < 0x20) return 0;
    } else if (c == '"') in_str = 1;
    else if (c == '{' || c == '[') depth++;
    else if ((c == '}' || c == ']') && --depth < 0) return 0;
  }
  return !in_str && depth == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1 << 20)) return 0;
  unsigned mode = data[0] % 4;
  doc_buf pkg = {.max = (size_t)1 << 26};
  const void *bytes = data + 1;
  size_t n = size - 1;
  if (mode) {
    store(&pkg, NAMES[mode], data + 1, size - 1);
    bytes = pkg.p, n = pkg.n;
  }
  for (int kind = 1; kind <= 3; kind++) {
    if (mode && kind != (int)mode) continue;
    doc_zip z;
    if (doc_zip_open(&z, bytes ? bytes : "", n, (size_t)8 << 20) != DOC_OK) break;
    doc_buf out = {.max = (size_t)4 << 20};
    size_t count = 0;
    int rc = kind == 1 ? doc_docx(&z, &out, &count) : kind == 2 ? doc_pptx(&z, &out, &count) : doc_xlsx(&z, &out, &count, 50);
    if (rc == DOC_OK) {
      CHECK(out.n <= out.max);
      CHECK(sb_utf8_valid(out.p ? out.p : "", out.n));
      CHECK(out.n == 0 || out.p[0] == '{');
      CHECK(balanced(out.p ? out.p : "", out.n));
    }
    doc_buf_free(&out);
    doc_zip_close(&z);
  }
  doc_buf_free(&pkg);
  return 0;
}
