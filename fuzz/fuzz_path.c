/* libFuzzer: the path front door. Input: one byte choosing the cwd, then
 * the agent path. Checks the invariants every backend relies on. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); abort(); } } while (0)

static const char *const CWDS[] = {"/", "/workspace", "/a/b/c", "/x y/é"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *cwd = CWDS[data[0] % 4];
  const char *s = (const char *)data + 1;
  size_t n = size - 1;
  static sb_path p, q;
  sb_err e;
  sb_code c = sb_path_parse(&p, s, n, cwd, strlen(cwd), &e);
  if (c != SB_OK) {
    CHECK(c == SB_EINVAL || c == SB_EESCAPE || c == SB_ENAMETOOLONG);
    return 0;
  }
  CHECK(n > 0 && n <= SB_PATH_MAX && !memchr(s, 0, n));
  CHECK(p.len <= n && p.buf[p.len] == '\0' && strlen(p.buf) == p.len);
  CHECK(p.len == 0 || (p.buf[0] != '/' && p.buf[p.len - 1] != '/'));
  CHECK(!strstr(p.buf, "//"));
  long depth = 0;
  for (unsigned i = 0; i < p.ncomp; i++) {
    size_t len;
    const char *comp = sb_path_comp(&p, i, &len);
    CHECK(len >= 1 && len <= SB_NAME_MAX && !memchr(comp, '/', len));
    CHECK(!(len == 1 && comp[0] == '.'));
    depth += sb_path_is_dotdot(comp, len) ? -1 : 1;
    CHECK(depth >= 0); /* never above the root, lexically */
  }
  char clean[SB_PATH_MAX + 1];
  size_t cl = sb_path_clean(&p, clean);
  CHECK(cl <= p.len);
  /* the clean form is a fixed point with no ".." left */
  CHECK(sb_path_from_rel(&q, clean, cl, &e) == SB_OK);
  CHECK(q.len == cl && memcmp(q.buf, clean, cl) == 0 && !q.dotdot);
  for (unsigned i = 0; i < q.ncomp; i++) {
    size_t len;
    const char *comp = sb_path_comp(&q, i, &len);
    CHECK(!sb_path_is_dotdot(comp, len));
  }
  return 0;
}
