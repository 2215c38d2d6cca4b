#include "base/child.h"

#include <unistd.h>

#include "plat/proc.h"

SB_CHILD_FN void sb_child_close_fds_as(int keep1, int keep2, bool one_by_one) {
  int a = keep1 < keep2 ? keep1 : keep2, b = keep1 < keep2 ? keep2 : keep1;
  unsigned lo = 3;
  bool ok = !one_by_one;
  for (int k = 0; k < 2 && ok; k++) {
    int keep = k == 0 ? a : b;
    if (keep < 3) continue;
    if ((unsigned)keep > lo) ok = sb_close_range(lo, (unsigned)keep - 1) == 0;
    lo = (unsigned)keep + 1;
  }
  if (ok && sb_close_range(lo, ~0U) == 0) return;
  /* No close_range (kernels before 5.9, macOS, older BSDs): the fds below
   * the last kept one each, the rest in one closefrom where libc has it,
   * else each up to the fd limit, looked up once (a lookup is a system
   * call: per fd it doubled a loop of 20 000 closes, 50 ms a command). */
  for (int fd = 3; fd < b; fd++)
    if (fd != a) close(fd);
  int from = b < 3 ? 3 : b + 1;
  if (one_by_one || sb_closefrom(from) != 0)
    for (int fd = from, limit = sb_fd_limit(); fd < limit; fd++) close(fd);
}

SB_CHILD_FN void sb_child_close_fds(int keep1, int keep2) { sb_child_close_fds_as(keep1, keep2, false); }
