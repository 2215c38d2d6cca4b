/* The byte finders under grep's prefilters (find.c). Plain functions of
 * their arguments: any thread may call them. */
#ifndef SB_SEARCH_FIND_H
#define SB_SEARCH_FIND_H

#include <stddef.h>

#define SB_FIND_DIGITS_MAX 32 /* the longest run sb_find_digits looks for */

/* The first needle nd[0, m) in h[0, n), or NULL (memmem, but looking
 * for the needle's two rarest bytes 16 positions at a time). */
const char *sb_find(const char *h, size_t n, const char *nd, size_t m);

/* The first run of `run` ASCII digits in h[0, n), or NULL; run is 1 to
 * SB_FIND_DIGITS_MAX. */
const char *sb_find_digits(const char *h, size_t n, size_t run);

/* Newlines in p[0, n). */
size_t sb_count_newlines(const char *p, size_t n);

#endif
