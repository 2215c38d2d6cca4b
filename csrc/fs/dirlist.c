/* Listing storage shared by the backends and the binding. */
#include <stdlib.h>
#include <string.h>

#include "fs/dirlist.h"

void sb_dirlist_reset(const sb_mem *m, sb_dirlist *dl) {
  dl->n = 0;
  sb_buf_trim(m, &dl->names, 1 << 16);
  if (dl->cap > 4096) sb_dirlist_free(m, dl);
}

int sb_dirlist_push(const sb_mem *m, sb_dirlist *dl, const sb_dirent *ent) {
  if (dl->n == dl->cap) {
    size_t cap = dl->cap ? dl->cap * 2 : 64;
    sb_dirent *v = sb_realloc(m, dl->v, dl->cap * sizeof *v, cap * sizeof *v);
    if (!v) return -1;
    dl->v = v;
    dl->cap = cap;
  }
  dl->v[dl->n++] = *ent;
  return 0;
}

void sb_dirlist_fix_names(sb_dirlist *dl, size_t from) {
  for (size_t i = from; i < dl->n; i++) dl->v[i].name = dl->names.p + dl->v[i].name_off;
}

void sb_dirlist_free(const sb_mem *m, sb_dirlist *dl) {
  sb_free(m, dl->v, dl->cap * sizeof *dl->v);
  sb_buf_free(m, &dl->names);
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
  size_t i = 1;
  while (i < dl->n && cmp_ent(&dl->v[i - 1], &dl->v[i]) < 0) i++; /* often sorted already */
  if (i < dl->n) qsort(dl->v, dl->n, sizeof *dl->v, cmp_ent);
}

/* Merge sort: stable, so earlier entries win among equal names. */
static void msort(sb_dirent *v, size_t n, sb_dirent *tmp) {
  if (n < 2) return;
  size_t h = n / 2, i = 0, j = h, k = 0;
  msort(v, h, tmp);
  msort(v + h, n - h, tmp);
  while (i < h && j < n) tmp[k++] = cmp_ent(&v[j], &v[i]) < 0 ? v[j++] : v[i++];
  while (i < h) tmp[k++] = v[i++];
  while (j < n) tmp[k++] = v[j++];
  memcpy(v, tmp, n * sizeof *v);
}

int sb_dirlist_unique(const sb_mem *m, sb_dirlist *dl) {
  if (dl->n < 2) return 0;
  sb_dirent *tmp = sb_malloc(m, dl->n * sizeof *tmp);
  if (!tmp) return -1;
  msort(dl->v, dl->n, tmp);
  sb_free(m, tmp, dl->n * sizeof *tmp);
  size_t w = 1;
  for (size_t i = 1; i < dl->n; i++)
    if (cmp_ent(&dl->v[i], &dl->v[w - 1]) != 0) dl->v[w++] = dl->v[i];
  dl->n = w;
  return 0;
}
