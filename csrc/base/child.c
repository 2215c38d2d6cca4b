#include "base/child.h"

#include <stdbool.h>
#include <unistd.h>

#include "plat/proc.h"

SB_CHILD_FN void sb_child_close_fds(int keep1, int keep2) {
  int a = keep1 < keep2 ? keep1 : keep2, b = keep1 < keep2 ? keep2 : keep1;
  unsigned lo = 3;
  bool ok = true;
  for (int k = 0; k < 2 && ok; k++) {
    int keep = k == 0 ? a : b;
    if (keep < 3) continue;
    if ((unsigned)keep > lo) ok = sb_close_range(lo, (unsigned)keep - 1) == 0;
    lo = (unsigned)keep + 1;
  }
  if (ok) ok = sb_close_range(lo, ~0U) == 0;
  if (!ok) /* no such call (kernels before 5.9, other systems) */
    for (int fd = 3; fd < sb_fd_limit(); fd++)
      if (fd != keep1 && fd != keep2) close(fd);
}
