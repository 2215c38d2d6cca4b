/* The remote runner's stream threads (remote/runner.h): one per command,
 * a blocking envd stream each; events go to the loop through a queue and
 * a wake-up fd (plat/fd.h). The start's outcome waits for the wrapper's first byte
 * (remote/tree.h); a full h:read queue holds the thread here. */
#include "remote/runner_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- from the threads ------------------------------------------------- */

static bool push(rrunner *rr, rev *v) {
  v->next = NULL;
  pthread_mutex_lock(&rr->mu);
  *rr->tail = v;
  rr->tail = &v->next;
  pthread_mutex_unlock(&rr->mu);
  return sb_notify_post(&rr->wake);
}

rev *sb_rr_new_ev(rproc *p, int kind, size_t len) {
  rev *v = calloc(1, sizeof *v + len + 1);
  if (v) {
    v->p = p;
    v->kind = kind;
    v->len = len;
  }
  return v;
}

size_t sb_rr_queue_cap(const rrunner *rr) { return rr->cfg.max_output < 64 * 1024 ? 64 * 1024 : rr->cfg.max_output; }

/* Tell start() how the start went (once). */
static void tell_start(rproc *p, sb_code code, const char *msg) {
  pthread_mutex_lock(&p->rr->mu);
  if (!p->t_ready) {
    p->t_ready = true;
    p->t_code = code;
    snprintf(p->t_msg, sizeof p->t_msg, "%s", msg ? msg : "");
  }
  pthread_cond_broadcast(&p->rr->started);
  pthread_mutex_unlock(&p->rr->mu);
}

/* The command runs: the loop hears its start before anything else of it. */
static bool command_runs(rproc *p) {
  rev *v = sb_rr_new_ev(p, SB_REV_START, 0);
  if (!v) return false;
  v->pid = p->t_pid;
  p->t_go = true;
  push(p->rr, v);
  tell_start(p, SB_OK, NULL);
  return true;
}

static sb_code on_event(void *ud, const sb_rproc_event *ev, sb_err *e) {
  rproc *p = ud;
  if (atomic_load(&p->stop)) return sb_fail(e, SB_EAGAIN, "the sandbox let go of the stream");
  if (ev->kind == SB_REV_KEEPALIVE || p->t_failed) return SB_OK; /* failed: the wrapper's end is no result */
  if (ev->kind == SB_REV_START) {
    if (!p->t_started) p->t_pid = ev->pid; /* a reattached stream starts with it again */
    p->t_started = true;
    return SB_OK;
  }
  /* under the helper, nothing comes before its first byte of stdout: what
   * does (envd's sh saying it found no such program) means it did not run,
   * and the command is started again under the wrapper (stream_main) */
  if (p->t_helper && !p->t_out && (ev->kind == SB_REV_STDERR || ev->kind == SB_REV_END)) {
    if (ev->kind == SB_REV_END) p->t_retry = true;
    return SB_OK;
  }
  const char *data = ev->data;
  size_t len = ev->kind == SB_REV_STDOUT || ev->kind == SB_REV_STDERR ? ev->len : 0;
  if (ev->kind == SB_REV_STDOUT && len && !p->t_out) { /* the wrapper's first byte (remote/tree.h) */
    p->t_out = true;
    if (!p->t_go && (data[0] == SB_RTREE_ENOENT || data[0] == SB_RTREE_EACCES || data[0] == SB_RTREE_NOTREE)) {
      p->t_failed = true;
      tell_start(p, data[0] == SB_RTREE_ENOENT ? SB_ENOENT : data[0] == SB_RTREE_EACCES ? SB_EACCES : SB_ENOTSUP, NULL);
      return SB_OK;
    }
    if (data[0] == SB_RTREE_ALONE) atomic_store(&p->rr->guard_lost, true);
    if (data[0] == SB_RTREE_GO || data[0] == SB_RTREE_ALONE) data++, len--;
  }
  if (!p->t_go) {
    if (ev->kind == SB_REV_END) { /* the wrapper did not get as far as the command */
      p->t_failed = true;
      char msg[sizeof p->t_msg];
      snprintf(msg, sizeof msg, "remote: the command did not start (%.100s)",
               ev->error        ? ev->error
                   : ev->status ? ev->status
                                : "no status");
      tell_start(p, SB_EIO, msg);
      return SB_OK;
    }
    if (!command_runs(p)) return sb_fail_oom(e);
  }
  if ((ev->kind == SB_REV_STDOUT || ev->kind == SB_REV_STDERR) && !len) return SB_OK;
  if (len && p->base.queued[ev->kind == SB_REV_STDERR ? SB_ERR : SB_OUT]) {
    int k = ev->kind == SB_REV_STDERR ? SB_ERR : SB_OUT;
    pthread_mutex_lock(&p->rr->mu);
    while (p->held[k] >= sb_rr_queue_cap(p->rr) && p->hold && !atomic_load(&p->stop))
      pthread_cond_wait(&p->room, &p->rr->mu);
    p->held[k] += len;
    pthread_mutex_unlock(&p->rr->mu);
  }
  rev *v = sb_rr_new_ev(p, ev->kind, len);
  if (!v) return sb_fail_oom(e);
  if (len) memcpy(v->data, data, len);
  v->pid = p->t_pid;
  if (ev->kind == SB_REV_END) {
    p->t_ended = true;
    v->exit_code = ev->exit_code;
    v->exited = ev->exited;
    v->timed_out = ev->timed_out;
    /* envd's end is cmd.Wait()'s outcome: its error is the same words as
     * the status for any non-zero exit or signal ("exit status 1"), never
     * "did not start" (that fails the Start call): exited, exitCode and
     * status decide (envd: process/handler/handler.go, Handler.Wait) */
    snprintf(v->text, sizeof v->text, "%s", ev->status ? ev->status : ev->error ? ev->error : "");
    v->code = SB_OK;
  }
  push(p->rr, v);
  return SB_OK;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

void *sb_rr_stream_main(void *arg) {
  rproc *p = arg;
  rrunner *rr = p->rr; /* the runner joins every thread before it goes */
  sb_mem plain;
  sb_mem_init_plain(&plain); /* the Lua allocator is not for other threads */
  sb_err e = {.code = SB_OK};
  sb_code c = sb_envd_start(&plain, rr->cfg.envd, &p->spec, on_event, p, &e);
  if (c == SB_OK && p->t_retry && !atomic_load(&p->stop)) { /* the helper is gone: the wrapper's form */
    atomic_store(&rr->helper_lost, true);
    p->spec.cmd = p->sh_cmd;
    p->spec.args = p->sh_args;
    p->t_helper = p->t_retry = p->t_started = false;
    p->t_pid = 0;
    c = sb_envd_start(&plain, rr->cfg.envd, &p->spec, on_event, p, &e);
  }
  /* a dropped link while the process runs: follow it again (E2B #1128) */
  for (int i = 1;
       c == SB_EIO && p->t_started && !p->t_ended && !p->t_failed && !atomic_load(&p->stop) && i <= RESUME_TRIES; i++) {
    /* dropped before the wrapper's first byte: it may have been printed
     * meanwhile; the command is taken as started (output_incomplete says
     * what may be missing) */
    if (!p->t_go && !command_runs(p)) break;
    sleep_s(RESUME_WAIT * i);
    rev *r = sb_rr_new_ev(p, EV_RESUMED, 0); /* before any event of the new stream */
    if (r) push(rr, r);
    c = sb_envd_attach(&plain, rr->cfg.envd, p->t_pid, p->spec.keepalive, on_event, p, &e);
  }
  if (!p->t_go) { /* nothing ran (t_failed said why), or the start failed: start() says so, no event */
    if (p->t_started && !p->t_failed) /* started, then lost before it could be followed */
      sb_rtree_signal(&plain, rr->cfg.envd, &p->tree, SIGKILL, p->kill_helper, SWEEP_LIMIT, &(sb_err){.code = SB_OK});
    tell_start(p, c == SB_OK ? SB_EIO : c,
               c != SB_OK && e.msg ? e.msg : "remote: Start: the stream ended without a start");
    if (p->start_later) { /* nobody waits in start: the loop hears the start's outcome as the end */
      rev *v = p->done_ev;
      p->done_ev = NULL;
      pthread_mutex_lock(&rr->mu);
      v->code = p->t_code; /* the first told (the wrapper's ENOENT, ...) */
      snprintf(v->text, sizeof v->text, "%s", p->t_msg);
      pthread_mutex_unlock(&rr->mu);
      push(rr, v);
    }
    return NULL;
  }
  rev *v = p->done_ev; /* made with the process: the loop always hears the end */
  p->done_ev = NULL;
  v->code = p->t_ended ? SB_OK : c == SB_OK ? SB_EIO : c;
  snprintf(v->text, sizeof v->text, "%s", c != SB_OK && e.msg ? e.msg : "the stream ended before the process did");
  push(rr, v);
  return NULL;
}
