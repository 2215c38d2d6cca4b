/* The document helpers' kinds: main.c is one entry for both programs
 * (sandbox-docparse: Office files, libzip + expat; sandbox-docrender: PDF
 * and images, Poppler + cairo + gdk-pixbuf), each linking the table of the
 * kinds it reads (office_kinds.c, render_kinds.c). Two programs because
 * one that maps Poppler's libraries takes three times as long to start
 * (56 shared objects), and an Office file never needs them. */
#ifndef SB_DOC_KINDS_H
#define SB_DOC_KINDS_H

#include <stdbool.h>
#include <stddef.h>

#include "doc/out.h"

typedef struct {
  size_t memory, cpu, max_input, max_output, max_inflated;
} doc_limits;

typedef struct {
  const char *name, *usage; /* usage: its arguments, for messages */
  int nargs;
  /* args: its nargs arguments as given; in: the file; the result into out */
  int (*run)(char **args, const doc_buf *in, const doc_limits *lim, doc_buf *out);
} doc_kind;

/* This program's kinds, up to one whose name is NULL; its name. */
extern const doc_kind doc_kinds[];
extern const char doc_program[];

/* A non-negative decimal number (the whole of s). */
bool doc_number(const char *s, size_t *out);

#endif
