/* The remote runner's keepers: the engine-side helper (remote/helper.h),
 * uploaded once a command has passed the template's check, and, for the
 * commands the helper does not run (login = true, or no helper to be had),
 * the deadline guard (remote/tree.h), made again when a wrapper found it
 * gone. Their uploads, starts and stops are envd round trips, made by a
 * thread of its own: a call never waits for them (SPEC §16); the commands
 * started meanwhile run under the wrapper, with their own watchdogs. */
#include "remote/runner_impl.h"

static void *keeper_main(void *arg) {
  rrunner *rr = arg; /* the runner joins this thread before it goes */
  sb_mem plain;
  sb_mem_init_plain(&plain); /* the Lua allocator is not for other threads */
  sb_err e = {.code = SB_OK};
  if (rr->guard_old.live) sb_rtree_guard_stop(&plain, rr->cfg.envd, &rr->guard_old, SWEEP_LIMIT, &e);
  e.code = SB_OK;
  rr->helper_code = SB_OK;
  if (rr->helper_want) rr->helper_code = sb_rhelper_install(&plain, rr->cfg.envd, &rr->helper_next, SWEEP_LIMIT, &e);
  /* a helper runs every command but login ones: no guard for them */
  bool helper = rr->helper_want ? rr->helper_code == SB_OK : rr->helper.live;
  rr->guard_tried = rr->guard_want && (rr->cfg.login || !helper);
  double idle = rr->cfg.guard_idle > 0 ? rr->cfg.guard_idle : SB_RR_GUARD_IDLE;
  e.code = SB_OK;
  rr->guard_code =
      rr->guard_tried ? sb_rtree_guard_start(&plain, rr->cfg.envd, &rr->guard_next, idle, SWEEP_LIMIT, &e) : SB_OK;
  atomic_store(&rr->guard_done, true);
  return NULL;
}

/* The thread's outcome, once it is done (or, with wait, when it is). */
static void harvest(rrunner *rr, bool wait) {
  if (!rr->guard_th_live || (!wait && !atomic_load(&rr->guard_done))) return;
  pthread_join(rr->guard_th, NULL);
  rr->guard_th_live = false;
  if (rr->helper_want) {
    if (rr->helper_code == SB_OK) rr->helper = rr->helper_next;
    else rr->helper_fails++;
  }
  if (rr->guard_tried) {
    if (rr->guard_code == SB_OK) rr->guard = rr->guard_next;
    else rr->guard_fails++;
  }
}

static bool helper_carried(void) {
  const unsigned char *b;
  return sb_rhelper_program(&b) > 0;
}

void sb_rr_guard_tick(rrunner *rr, bool need) {
  harvest(rr, false);
  if (rr->guard_th_live) return;
  rr->guard_old.live = false;
  if (atomic_exchange(&rr->guard_lost, false) && rr->guard.live) {
    rr->guard_old = rr->guard; /* swept by the thread: its sleeps and directory */
    rr->guard.live = false;
  }
  if (atomic_exchange(&rr->helper_lost, false)) rr->helper.live = false; /* gone with its directory */
  rr->helper_want =
      rr->cfg.helper && rr->tree_ok && !rr->helper.live && rr->helper_fails < GUARD_TRIES && helper_carried();
  /* (the thread starts no guard when the upload it makes succeeds) */
  bool by_wrapper = rr->cfg.login || !rr->helper.live;
  rr->guard_want = need && by_wrapper && !rr->guard.live && rr->tree_ok && rr->guard_fails < GUARD_TRIES;
  if (!rr->helper_want && !rr->guard_want && !rr->guard_old.live) return;
  atomic_store(&rr->guard_done, false);
  if (pthread_create(&rr->guard_th, NULL, keeper_main, rr) == 0) rr->guard_th_live = true;
  else {
    if (rr->guard_want) rr->guard_fails++;
    if (rr->helper_want) rr->helper_fails++;
  }
}

void sb_rr_guard_close(rrunner *rr) {
  harvest(rr, true);
  sb_err e = {.code = SB_OK};
  sb_rtree_guard_stop(&rr->mem, rr->cfg.envd, &rr->guard, SWEEP_LIMIT, &e);
  e.code = SB_OK;
  sb_rhelper_remove(&rr->mem, rr->cfg.envd, &rr->helper, SWEEP_LIMIT, &e);
}
