/* What every runner shares. */
#include "exec/runner.h"

int sb_runner_live(const sb_runner *r, bool background_only) {
  int n = 0;
  for (const sb_proc *p = r->procs; p; p = p->next)
    if (!p->finished && (!background_only || p->background)) n++;
  return n;
}

bool sb_proc_pop(sb_proc *p, int k, const char **data, size_t *len) {
  if (!sb_outq_pop(&p->queue[k], data, len)) return false;
  if (p->runner) p->ops->popped(p, k, *len);
  return true;
}

bool sb_proc_stream_done(const sb_proc *p, int k) { return p->eof[k] && sb_outq_pending(&p->queue[k]) == 0; }

void sb_proc_wait_begin(sb_proc *p) {
  p->waiters++;
  if (p->runner && !p->finished) p->ops->hold_changed(p);
}

void sb_proc_wait_end(sb_proc *p) {
  if (p->waiters > 0) p->waiters--;
  if (p->runner && !p->finished) p->ops->hold_changed(p);
}

void sb_proc_init(sb_proc *p, sb_runner *r, const sb_cmd *cmd, size_t max_output) {
  p->runner = r;
  p->ops = r->ops;
  p->background = cmd->background;
  p->queued[SB_OUT] = cmd->background && cmd->queue[SB_OUT];
  p->queued[SB_ERR] = cmd->background && cmd->queue[SB_ERR];
  for (int k = 0; k < 2; k++) sb_outbuf_init(&p->cap[k], max_output);
}

bool sb_proc_hold_back(const sb_proc *p) { return !p->exited && !p->kill_sig && !p->waiters && !p->released; }

void sb_proc_maybe_free(sb_proc *p) {
  if (!p->released || !p->finished || !p->runner || p->ops->busy(p)) return;
  for (sb_proc **pp = &p->runner->procs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  p->ops->free(p);
}

void sb_proc_release(sb_proc *p) {
  p->released = true;
  if (!p->runner) { /* detached: its resources are gone already */
    p->ops->free(p);
    return;
  }
  p->ops->hold_changed(p); /* nobody can read it any more */
  sb_proc_maybe_free(p);
}

void sb_runner_detach_all(sb_runner *r) {
  sb_proc *p = r->procs;
  r->procs = NULL;
  while (p) {
    sb_proc *next = p->next;
    p->ops->detach(p);
    p->runner = NULL;
    p->next = NULL;
    if (p->released) p->ops->free(p);
    p = next;
  }
}
