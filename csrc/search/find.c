/* The byte finders of grep's prefilters (matcher.c): a needle by its two
 * rarest bytes, a run of ASCII digits, newlines; SSE2 (and AVX2 where the
 * CPU has it) with a byte loop for the tail and for other machines. Each
 * agrees with a plain byte loop (fuzz_search checks it). */
#include "search/find.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SB_HAVE_AVX2_PATH 1
#endif

/* ---- literal search ----------------------------------------------------- */

/* Bytes ordered from most to least common in source code and prose; a
 * byte not listed is rarer than all of them. The two rarest bytes of a
 * needle are the ones looked for first. */
static const char COMMON[] = " etaoinsrlhdcumfpgbyw_vkxjqzETAOINSRLCDHUMPFGBYWVKXJQZ\n\t0123456789"
                             "(){};,.=*/-+\"':<>[]#&|!\\";

static int rarity(unsigned char c) {
  const char *p = memchr(COMMON, c, sizeof COMMON - 1);
  return p ? (int)(p - COMMON) : 255;
}

#ifdef SB_HAVE_AVX2_PATH
/* 32 candidate starts at once, where the CPU has AVX2 (asked once: a
 * read-only answer of the CPU's, not state of ours); from i, up to where
 * the 16-byte loop takes over. */
__attribute__((target("avx2"))) static size_t find_avx2(const char *h, size_t n, const char *nd, size_t m, size_t a,
                                                        size_t b, const char **hit) {
  size_t i = 0, far = a > b ? a : b;
  const __m256i va = _mm256_set1_epi8(nd[a]), vb = _mm256_set1_epi8(nd[b]);
  for (; i + far + 32 <= n && i + m <= n; i += 32) {
    __m256i ea = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(h + i + a)), va);
    __m256i eb = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(h + i + b)), vb);
    unsigned mask = (unsigned)_mm256_movemask_epi8(_mm256_and_si256(ea, eb));
    while (mask) {
      size_t at = i + (size_t)__builtin_ctz(mask);
      if (at + m <= n && memcmp(h + at, nd, m) == 0) {
        *hit = h + at;
        return i;
      }
      mask &= mask - 1;
    }
  }
  *hit = NULL;
  return i;
}
#endif

const char *sb_find(const char *h, size_t n, const char *nd, size_t m) {
  if (m == 0) return h;
  if (m > n) return NULL;
  if (m == 1) return memchr(h, nd[0], n);
  /* the two rarest positions of the needle (a, b distinct) */
  size_t a = 0, b = 1;
  for (size_t i = 0; i < m; i++) {
    int r = rarity((unsigned char)nd[i]);
    if (r > rarity((unsigned char)nd[a])) a = i;
  }
  b = a == 0 ? 1 : 0;
  for (size_t i = 0; i < m; i++)
    if (i != a && rarity((unsigned char)nd[i]) > rarity((unsigned char)nd[b])) b = i;
  size_t i = 0;
#ifdef SB_HAVE_AVX2_PATH
  if (__builtin_cpu_supports("avx2")) {
    const char *hit;
    i = find_avx2(h, n, nd, m, a, b, &hit);
    if (hit) return hit;
  }
#endif
#ifdef __SSE2__
  /* 16 candidate starts at once: both rare bytes where they must be */
  size_t far = a > b ? a : b;
  const __m128i va = _mm_set1_epi8(nd[a]), vb = _mm_set1_epi8(nd[b]);
  for (; i + far + 16 <= n && i + m <= n; i += 16) {
    __m128i ea = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(h + i + a)), va);
    __m128i eb = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(h + i + b)), vb);
    unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(ea, eb));
    while (mask) {
      size_t at = i + (size_t)__builtin_ctz(mask);
      if (at + m <= n && memcmp(h + at, nd, m) == 0) return h + at;
      mask &= mask - 1;
    }
  }
#endif
  for (; i + m <= n; i++) {
    const char *q = memchr(h + i + a, nd[a], n - m + 1 - i);
    if (!q) return NULL;
    i = (size_t)(q - h) - a;
    if (memcmp(h + i, nd, m) == 0) return h + i;
  }
  return NULL;
}

/* ---- runs of digits ------------------------------------------------------ */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

const char *sb_find_digits(const char *h, size_t n, size_t run) {
  size_t i = 0;
#ifdef __SSE2__
  /* 64-byte windows that overlap by run - 1 bytes: every run lies whole in
   * one, and the first window holding one gives the first */
  const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
  size_t stride = 64 - (run - 1);
  for (; i + 64 <= n; i += stride) {
    uint64_t mask = 0;
    for (int k = 0; k < 4; k++) {
      __m128i t = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)(h + i + 16 * k)), zero);
      /* a digit's byte minus '0' is 0..9 unsigned */
      unsigned d = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(t, nine), t));
      mask |= (uint64_t)d << (16 * k);
    }
    uint64_t starts = mask;
    for (size_t k = 1; k < run && starts; k++) starts &= mask >> k;
    if (starts) return h + i + (size_t)__builtin_ctzll(starts);
  }
#endif
  for (size_t have = 0; i < n; i++) {
    have = is_digit(h[i]) ? have + 1 : 0;
    if (have == run) return h + i + 1 - run;
  }
  return NULL;
}

/* ---- newlines ------------------------------------------------------------ */

size_t sb_count_newlines(const char *p, size_t n) {
  size_t count = 0, i = 0;
#ifdef __SSE2__
  const __m128i nl = _mm_set1_epi8('\n');
  while (n - i >= 16) {
    /* byte counters (each compare adds 0 or -1) folded before they wrap */
    __m128i acc = _mm_setzero_si128();
    size_t blocks = (n - i) / 16;
    if (blocks > 255) blocks = 255;
    for (size_t b = 0; b < blocks; b++, i += 16)
      acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + i)), nl));
    __m128i sums = _mm_sad_epu8(acc, _mm_setzero_si128());
    count += (size_t)_mm_cvtsi128_si32(sums) + (size_t)_mm_extract_epi16(sums, 4);
  }
#endif
  for (; i < n; i++) count += p[i] == '\n';
  return count;
}
