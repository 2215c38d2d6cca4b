#include "base/utf8.h"

#include <stdint.h>
#include <string.h>

size_t sb_utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else return 0;
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  return len;
}

bool sb_utf8_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    if (n - i >= 8) {
      uint64_t w;
      memcpy(&w, p + i, sizeof w);
      if (!(w & 0x8080808080808080ull)) {
        i += 8;
        continue;
      }
    }
    size_t l = sb_utf8_len(p + i, n - i);
    if (!l) return false;
    i += l;
  }
  return true;
}

bool sb_utf8_ascii(const char *s, size_t n) {
  uint64_t acc = 0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) { /* four words a step, one test: the compiler vectorises it */
    uint64_t w[4];
    memcpy(w, s + i, sizeof w);
    acc |= w[0] | w[1] | w[2] | w[3];
    if (acc & 0x8080808080808080ull) return false;
  }
  for (; i < n; i++) acc |= (unsigned char)s[i];
  return !(acc & 0x8080808080808080ull);
}
