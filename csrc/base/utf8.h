/* UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates, nothing
 * above U+10FFFF. One check for every part that needs one (the JSON codec,
 * the search's line semantics). */
#ifndef SB_BASE_UTF8_H
#define SB_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes of the well-formed sequence at s (n > 0 bytes available), or 0. */
size_t sb_utf8_len(const unsigned char *s, size_t n);

/* Is all of s well-formed? (ASCII runs are skipped 8 bytes at a time.) */
bool sb_utf8_valid(const char *s, size_t n);

/* Is every byte of s below 0x80? */
bool sb_utf8_ascii(const char *s, size_t n);

#endif
