/* What every runner shares. */
#include "exec/runner.h"

int sb_runner_live(const sb_runner *r, bool background_only) {
  int n = 0;
  for (const sb_proc *p = r->procs; p; p = p->next)
    if (!p->finished && (!background_only || p->background)) n++;
  return n;
}
