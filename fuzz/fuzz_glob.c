/* libFuzzer: the glob matcher. Input: pattern NUL path. A match must be
 * consistent with the pruning function the walks use, and the static
 * prefix must be a literal directory prefix. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/glob.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *d = (const char *)data;
  const char *nul = memchr(d, 0, size);
  if (!nul || size > 4096) return 0;
  size_t plen = (size_t)(nul - d), slen = size - plen - 1;
  const char *pat = d, *path = nul + 1;
  if (memchr(path, 0, slen)) return 0;
  bool m = sb_glob_match(pat, plen, path, slen);
  if (m) {
    /* every ancestor of a matching path must be worth descending into */
    CHECK(sb_glob_could_match_below(pat, plen, path, slen));
    for (size_t i = 0; i < slen; i++)
      if (path[i] == '/') CHECK(sb_glob_could_match_below(pat, plen, path, i));
    CHECK(sb_glob_could_match_below(pat, plen, "", 0));
  }
  size_t pre = sb_glob_static_prefix(pat, plen);
  CHECK(pre <= plen && !sb_glob_has_magic(pat, pre));
  CHECK(pre == 0 || pre == plen || pat[pre] == '/');
  return 0;
}
