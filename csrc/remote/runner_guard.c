/* The remote runner's deadline guard (remote/tree.h): one per runner,
 * started once a command has passed the template's check, made again when
 * a wrapper found it gone. Its start and stop are envd round trips, made
 * by a thread of its own: a call never waits for them (SPEC §16); the
 * commands started meanwhile keep their deadlines with their own
 * watchdogs. */
#include "remote/runner_impl.h"

static void *guard_main(void *arg) {
  rrunner *rr = arg; /* the runner joins this thread before it goes */
  sb_mem plain;
  sb_mem_init_plain(&plain); /* the Lua allocator is not for other threads */
  sb_err e = {.code = SB_OK};
  if (rr->guard_old.live) sb_rtree_guard_stop(&plain, rr->cfg.envd, &rr->guard_old, SWEEP_LIMIT, &e);
  double idle = rr->cfg.guard_idle > 0 ? rr->cfg.guard_idle : SB_RR_GUARD_IDLE;
  e.code = SB_OK;
  rr->guard_code =
      rr->guard_want ? sb_rtree_guard_start(&plain, rr->cfg.envd, &rr->guard_next, idle, SWEEP_LIMIT, &e) : SB_OK;
  atomic_store(&rr->guard_done, true);
  return NULL;
}

/* The thread's outcome, once it is done (or, with wait, when it is). */
static void harvest(rrunner *rr, bool wait) {
  if (!rr->guard_th_live || (!wait && !atomic_load(&rr->guard_done))) return;
  pthread_join(rr->guard_th, NULL);
  rr->guard_th_live = false;
  if (!rr->guard_want) return;
  if (rr->guard_code == SB_OK) rr->guard = rr->guard_next;
  else rr->guard_fails++;
}

void sb_rr_guard_tick(rrunner *rr, bool need) {
  harvest(rr, false);
  if (rr->guard_th_live) return;
  rr->guard_old.live = false;
  if (atomic_exchange(&rr->guard_lost, false) && rr->guard.live) {
    rr->guard_old = rr->guard; /* swept by the thread: its sleeps and directory */
    rr->guard.live = false;
  }
  rr->guard_want = need && !rr->guard.live && rr->tree_ok && rr->guard_fails < GUARD_TRIES;
  if (!rr->guard_want && !rr->guard_old.live) return;
  atomic_store(&rr->guard_done, false);
  if (pthread_create(&rr->guard_th, NULL, guard_main, rr) == 0) rr->guard_th_live = true;
  else if (rr->guard_want) rr->guard_fails++;
}

void sb_rr_guard_close(rrunner *rr) {
  harvest(rr, true);
  sb_err e = {.code = SB_OK};
  sb_rtree_guard_stop(&rr->mem, rr->cfg.envd, &rr->guard, SWEEP_LIMIT, &e);
}
