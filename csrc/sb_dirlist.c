/* Listing storage shared by the backends and the binding. */
#include <stdlib.h>
#include <string.h>

#include "sb_backend.h"

void sb_dirlist_reset(sb_sandbox *sb, sb_dirlist *dl) {
  dl->n = 0;
  sb_buf_trim(&sb->mem, &dl->names, 1 << 16);
  if (dl->cap > 4096) sb_dirlist_free(sb, dl);
}

int sb_dirlist_push(sb_sandbox *sb, sb_dirlist *dl, const sb_dirent *ent) {
  if (dl->n == dl->cap) {
    size_t cap = dl->cap ? dl->cap * 2 : 64;
    sb_dirent *v = sb_realloc(&sb->mem, dl->v, dl->cap * sizeof *v, cap * sizeof *v);
    if (!v) return -1;
    dl->v = v;
    dl->cap = cap;
  }
  dl->v[dl->n++] = *ent;
  return 0;
}

void sb_dirlist_free(sb_sandbox *sb, sb_dirlist *dl) {
  sb_free(&sb->mem, dl->v, dl->cap * sizeof *dl->v);
  sb_buf_free(&sb->mem, &dl->names);
  dl->v = NULL;
  dl->n = dl->cap = 0;
}

static int cmp_ent(const void *a, const void *b) {
  const sb_dirent *x = a, *y = b;
  size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
  int r = memcmp(x->name, y->name, n);
  return r ? r : (x->namelen > y->namelen) - (x->namelen < y->namelen);
}

void sb_dirlist_sort(sb_dirlist *dl) {
  if (dl->n > 1) qsort(dl->v, dl->n, sizeof *dl->v, cmp_ent);
}
