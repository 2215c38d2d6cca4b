#include "remote/runner_impl.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "plat/signame.h"

/* ---- the loop's side -------------------------------------------------- */

static void join_signal(rproc *p);

static void proc_free(rproc *p) {
  join_signal(p);
  sb_mem m = p->mem;
  for (int k = 0; k < 2; k++) {
    sb_outbuf_free(&m, &p->base.cap[k]);
    sb_outq_free(&m, &p->base.queue[k]);
  }
  free(p->specmem);
  free(p->done_ev);
  sb_free(&m, p->stdin_data, p->stdin_len);
  pthread_cond_destroy(&p->room);
  sb_free(&m, p, sizeof *p);
}

static void join_signal(rproc *p) {
  if (!p->sig_live) return;
  pthread_join(p->sig_th, NULL);
  p->sig_live = false;
}

static void join(rproc *p) {
  join_signal(p);
  if (!p->thread_live) return;
  pthread_join(p->th, NULL);
  p->thread_live = false;
}

static void maybe_free(rproc *p) { sb_proc_maybe_free(&p->base); }

/* The handle core's rule (sb_proc_hold_back), told to the stream thread. */
static void set_hold(rproc *p) {
  bool hold = sb_proc_hold_back(&p->base) && !atomic_load(&p->stop);
  pthread_mutex_lock(&p->rr->mu);
  p->hold = hold;
  if (!hold) pthread_cond_broadcast(&p->room);
  pthread_mutex_unlock(&p->rr->mu);
}

/* n bytes of stream k the thread handed over are gone (read or dropped). */
static void give_back(rproc *p, int k, size_t n) {
  pthread_mutex_lock(&p->rr->mu);
  p->held[k] -= n < p->held[k] ? n : p->held[k];
  pthread_cond_broadcast(&p->room);
  pthread_mutex_unlock(&p->rr->mu);
}

/* To the whole tree (remote/tree.h), any signal: envd's SendSignal knows
 * only SIGTERM and SIGKILL, would reach the wrapper alone, and would stop
 * the output a SIGTERM leaves to come. A SIGKILL whose sweep could not run
 * still reaches the wrapper through envd. */
static void *signal_main(void *arg) {
  rproc *p = arg;
  const sb_envd *d = p->rr->cfg.envd; /* the runner joins this thread before it goes */
  sb_mem plain;
  sb_mem_init_plain(&plain); /* the Lua allocator is not for other threads */
  sb_err e = {.code = SB_OK};
  if (sb_rtree_signal(&plain, d, &p->tree, p->sig_sig, p->kill_helper, SWEEP_LIMIT, &e) != SB_OK &&
      p->sig_sig == SIGKILL && p->sig_pid > 0)
    sb_envd_signal(&plain, d, (uint32_t)p->sig_pid, 9, &e);
  return NULL;
}

static void send_signal(rproc *p, int sig) {
  join_signal(p); /* the one before (a SIGTERM's, a grace period ago) */
  p->sig_sig = sig;
  p->sig_pid = p->base.pid;
  if (pthread_create(&p->sig_th, NULL, signal_main, p) == 0) p->sig_live = true;
  else signal_main(p); /* no thread to be had: in the turn */
}

static void rp_kill(sb_proc *b, int sig) {
  rproc *p = RP(b);
  if (!p->rr || b->finished) return;
  if (sig == SIGKILL || b->kill_sig == 0) b->kill_sig = sig;
  set_hold(p); /* a command being killed is not held back */
  send_signal(p, sig);
  if (sig != SIGKILL && p->kill_at == 0) p->kill_at = sb_now() + p->rr->cfg.grace;
}

/* envd's words for a signal ("signal: killed" from Go, "signal: SIGTERM"
 * from Node) as its number. */
/* The signal in envd's status ("signal: terminated", Go's words, perhaps
 * with " (core dumped)"): Go names signals as the C library describes them,
 * lower-cased, so strsignal's text is the table. */
static int signal_of(const char *status) {
  const char *s = strncmp(status, "signal: ", 8) == 0 ? status + 8 : status;
  for (int sig = 1; sig < NSIG; sig++) {
    const char *d = strsignal(sig), *abbrev = sb_signame(sig);
    size_t n = d ? strlen(d) : 0;
    if (n && strncasecmp(s, d, n) == 0 && (s[n] == '\0' || s[n] == ' ')) return sig;
    if (abbrev && strncmp(s, "SIG", 3) == 0 && strcmp(s + 3, abbrev) == 0) return sig;
  }
  return SIGKILL; /* ended by a signal envd did not name */
}

static void queue_add(rproc *p, int k, const char *d, size_t n) {
  bool keep = p->hold || sb_outq_pending(&p->base.queue[k]) < sb_rr_queue_cap(p->rr);
  if (!keep) {
    p->base.qdropped[k] += n; /* nobody reads while it ends: the result keeps head and tail */
  } else if (sb_outq_push(&p->mem, &p->base.queue[k], d, n) != 0) {
    p->base.qdropped[k] += n; /* out of memory: counted, never silent */
    p->base.output_incomplete = true;
    keep = false;
  }
  if (!keep) give_back(p, k, n);
}

static void give_input(rproc *p) {
  sb_err e;
  rrunner *rr = p->rr;
  /* a failure is the process no longer reading: its end tells the rest */
  if (p->stdin_len) sb_envd_input(&rr->mem, rr->cfg.envd, p->rpid, p->stdin_data, p->stdin_len, &e);
  if (p->close_after_input) {
    sb_envd_close_stdin(&rr->mem, rr->cfg.envd, p->rpid, &e);
    p->in_open = false;
  }
  sb_free(&rr->mem, p->stdin_data, p->stdin_len);
  p->stdin_data = NULL;
  p->stdin_len = 0;
}

static void finish(rproc *p) {
  sb_proc *b = &p->base;
  if (b->finished) return;
  b->finished = true;
  b->t_end = sb_now();
  p->base.eof[0] = p->base.eof[1] = true;
  p->in_open = false;
  join(p);
  rrunner *rr = p->rr;
  if (rr->base.hooks.on_exit) rr->base.hooks.on_exit(b);
  maybe_free(p);
}

static void dispatch(rrunner *rr, rev *v) {
  rproc *p = v->p;
  sb_proc *b = &p->base;
  switch (v->kind) {
  case SB_REV_START:
    p->started = true;
    rr->tree_ok = true; /* the template passed the wrapper's check: later starts skip it */
    p->rpid = v->pid;
    b->pid = (pid_t)v->pid;
    if (p->stdin_data || p->close_after_input) give_input(p);
    break;
  case SB_REV_STDOUT:
  case SB_REV_STDERR: {
    int k = v->kind == SB_REV_STDERR ? SB_ERR : SB_OUT;
    if (sb_outbuf_add(&p->mem, &b->cap[k], v->data, v->len) != 0) b->output_incomplete = true;
    if (b->queued[k]) queue_add(p, k, v->data, v->len);
    if (rr->base.hooks.on_data) rr->base.hooks.on_data(b, k, v->data, v->len);
    break;
  }
  case SB_REV_END:
    p->ended = true;
    b->exited = true;
    set_hold(p);
    if (v->timed_out) b->timed_out = true; /* the engine's deadline, the backstop of ours */
    if (v->code != SB_OK) { /* it could not run */
      b->status = -1;
      snprintf(b->error, sizeof b->error, "%s", v->text);
    } else {
      b->status = v->exited ? (v->exit_code & 0xff) << 8 : signal_of(v->text);
    }
    break;
  case EV_RESUMED: /* envd replays nothing: what was printed meanwhile is gone */ b->output_incomplete = true; break;
  case EV_DONE:
    p->done = true;
    if (!p->started && p->start_later) { /* it never ran: the start's failure, as start would say it */
      sb_err e = {.code = SB_OK};
      b->start_code = sb_rr_start_failure(p, v->code, v->text, &e);
      b->exited = true;
      b->status = -1;
      snprintf(b->error, sizeof b->error, "%s", e.msg ? e.msg : sb_code_text(b->start_code));
    } else if (!p->ended) { /* lost: the link, or the sandbox, is gone */
      b->exited = true;
      b->status = -1;
      b->output_incomplete = true;
      snprintf(b->error, sizeof b->error, "%s", v->text);
    }
    finish(p);
    break;
  default: break;
  }
}

/* Take every queued event and handle it; true when there was one. */
static bool drain(rrunner *rr) {
  sb_notify_drain(&rr->wake);
  pthread_mutex_lock(&rr->mu);
  rev *v = rr->head;
  rr->head = NULL;
  rr->tail = &rr->head;
  pthread_mutex_unlock(&rr->mu);
  bool any = v != NULL;
  while (v) {
    rev *next = v->next;
    dispatch(rr, v);
    free(v);
    v = next;
  }
  return any;
}

/* Timeouts and grace periods that are due; the seconds to the next one (-1: none). */
static double timers(rrunner *rr) {
  double now = sb_now(), next = -1;
  for (sb_proc *b = rr->base.procs; b; b = b->next) {
    rproc *p = RP(b);
    if (b->finished) continue;
    if (p->deadline > 0 && now >= p->deadline) {
      p->deadline = 0;
      b->timed_out = true;
      rp_kill(b, SIGTERM);
    }
    if (p->kill_at > 0 && now >= p->kill_at) {
      p->kill_at = 0;
      b->kill_sig = SIGKILL;
      send_signal(p, SIGKILL);
    }
    double t[2] = {p->deadline, p->kill_at};
    for (int i = 0; i < 2; i++)
      if (t[i] > 0 && (next < 0 || t[i] - now < next)) next = t[i] - now;
  }
  return next < 0 ? -1 : next < 0.001 ? 0.001 : next;
}

static bool rr_run(sb_runner *r, sb_proc *p, double timeout) {
  rrunner *rr = RR(r);
  double deadline = timeout < 0 ? -1 : sb_now() + timeout;
  r->running++;
  for (;;) {
    bool any = drain(rr);
    double next = timers(rr);
    if (p ? p->finished : any || !sb_runner_live(r, false)) break;
    double left = deadline < 0 ? -1 : deadline - sb_now();
    if (deadline >= 0 && left <= 0) break;
    double wait = left < 0 ? next : next < 0 || left < next ? left : next;
    struct pollfd pf = {.fd = rr->wake.rfd, .events = POLLIN};
    int ms = wait < 0 ? -1 : (int)(wait * 1000) + 1;
    if (poll(&pf, 1, ms) < 0 && errno != EINTR) break;
    if (!p && pf.revents) {
      drain(rr);
      timers(rr);
      break;
    }
  }
  r->running--;
  return p ? p->finished : true;
}

static int rr_backend_fd(sb_runner *r) { return RR(r)->wake.rfd; }

static int rr_backend_timeout(sb_runner *r) {
  double next = timers(RR(r));
  return next < 0 ? -1 : (int)(next * 1000) + 1;
}

static sb_proc *rr_start(sb_runner *r, sb_cmd *cmd, sb_err *e) {
  rrunner *rr = RR(r);
  if (cmd->inherit_stdio) {
    sb_fail(e, SB_ENOTSUP, "a remote command has no host stdio to inherit");
    return NULL;
  }
  char cwd[2 * SB_PATH_MAX + 4];
  if (!sb_rr_cwd(rr, cmd, cwd, sizeof cwd, e)) {
    cmd->cwd_failed = true;
    return NULL;
  }
  rproc *p = sb_malloc(&rr->mem, sizeof *p);
  if (!p) {
    sb_fail_oom(e);
    return NULL;
  }
  memset(p, 0, sizeof *p);
  atomic_init(&p->stop, false);
  pthread_cond_init(&p->room, NULL);
  p->hold = true;
  sb_proc *b = &p->base;
  p->rr = rr;
  p->mem = rr->mem;
  sb_proc_init(b, r, cmd, rr->cfg.max_output);
  bool want_in = (cmd->stdin_data && cmd->stdin_len) || cmd->keep_stdin;
  /* without CloseStdin (envd < 0.5.2) an input's end could never be told:
   * input given up front is refused; a handle's stdin is closed from the
   * start (the command reads EOF, h:write is EPIPE), as an SDK user gets */
  if (want_in && !cmd->stdin_len && !sb_envd_has(rr->cfg.envd, SB_ENVD_CLOSE_STDIN)) want_in = false;
  if (want_in && !sb_envd_has(rr->cfg.envd, SB_ENVD_CLOSE_STDIN)) {
    unsigned v = rr->cfg.envd->version;
    proc_free(p);
    sb_failf(e, SB_ENOTSUP,
             "remote: a command's stdin needs envd 0.5.2 or later (CloseStdin); this sandbox's envd is %u.%u.%u: "
             "use a template built on a current E2B, or give the input as a file",
             v / 1000000, v / 1000 % 1000, v % 1000);
    return NULL;
  }
  if (!sb_rtree_init(&p->tree)) {
    proc_free(p);
    sb_fail(e, SB_EIO, "no random bytes from the kernel for the command's mark");
    return NULL;
  }
  /* a foreground command's deadline on the engine too, past our own
   * timeout and grace: if this host goes, the tree's watchdog still ends
   * all of it, and envd's deadline the wrapper after that. A background
   * one gets none (E2B #1074). */
  double watchdog = cmd->timeout > 0 && !cmd->background ? cmd->timeout + rr->cfg.grace + 2 : 0;
  sb_rr_guard_tick(rr, watchdog > 0);
  if (!sb_rr_build_spec(p, cmd, cwd, watchdog, rr->cfg.grace, &rr->guard, &rr->helper, !rr->tree_ok) ||
      !(p->done_ev = sb_rr_new_ev(p, EV_DONE, 0)) ||
      (cmd->stdin_len && !(p->stdin_data = sb_malloc(&rr->mem, cmd->stdin_len)))) {
    proc_free(p);
    sb_fail_oom(e);
    return NULL;
  }
  if (cmd->stdin_len) memcpy(p->stdin_data, cmd->stdin_data, p->stdin_len = cmd->stdin_len);
  p->close_after_input = want_in && !cmd->keep_stdin;
  p->in_open = want_in;
  p->spec.stdin_open = want_in;
  if (watchdog > 0) p->spec.deadline = watchdog + rr->cfg.grace + 5;
  p->spec.keepalive = 1;
  b->t0 = sb_now();
  if (cmd->timeout > 0) p->deadline = b->t0 + cmd->timeout;
  snprintf(p->prog, sizeof p->prog, "%s", cmd->argv[0]);
  p->start_later = cmd->start_later;
  int err = pthread_create(&p->th, NULL, sb_rr_stream_main, p);
  if (err) {
    proc_free(p);
    sb_fail_errno(e, err);
    return NULL;
  }
  p->thread_live = true;
  if (!p->start_later) {
    /* as the local runner: a started command has its pid, a failed start is
     * the call's error (not found, not executable, an unreachable engine) */
    pthread_mutex_lock(&rr->mu);
    while (!p->t_ready) pthread_cond_wait(&rr->started, &rr->mu);
    bool ok = p->t_code == SB_OK;
    b->pid = (pid_t)p->t_pid;
    pthread_mutex_unlock(&rr->mu);
    if (!ok) {
      join(p);
      sb_rr_start_failure(p, p->t_code, p->t_msg, e);
      proc_free(p);
      return NULL;
    }
    rr->tree_ok = true;
  }
  b->id = ++r->next_id;
  b->next = r->procs;
  r->procs = b;
  return b;
}

static int rp_write(sb_proc *b, const char *data, size_t len) {
  rproc *p = RP(b);
  if (!p->rr || b->finished || !p->in_open) return -EPIPE;
  if (!p->started) { /* before envd named it: kept, given with the start */
    char *more = sb_realloc(&p->mem, p->stdin_data, p->stdin_len, p->stdin_len + len);
    if (!more) return -ENOMEM;
    memcpy(more + p->stdin_len, data, len);
    p->stdin_data = more;
    p->stdin_len += len;
    return 0;
  }
  sb_err e;
  return sb_envd_input(&p->mem, p->rr->cfg.envd, p->rpid, data, len, &e) == SB_OK ? 0 : -EPIPE;
}

static void rp_close_stdin(sb_proc *b) {
  rproc *p = RP(b);
  if (!p->rr || !p->in_open) return;
  p->in_open = false;
  if (!p->started) {
    p->close_after_input = true; /* with the start */
    return;
  }
  sb_err e;
  sb_envd_close_stdin(&p->mem, p->rr->cfg.envd, p->rpid, &e);
}

/* The handle core's hooks (exec/runner.c). */
static void rp_popped(sb_proc *b, int k, size_t len) { give_back(RP(b), k, len); /* room for the thread */ }
static void rp_hold_changed(sb_proc *b) { set_hold(RP(b)); }
static bool rp_busy(sb_proc *b) { return RP(b)->thread_live || RP(b)->sig_live; }
static void rp_detach(sb_proc *b) { RP(b)->rr = NULL; }
static void rp_free(sb_proc *b) { proc_free(RP(b)); }

static void rr_close(sb_runner *r) {
  rrunner *rr = RR(r);
  for (sb_proc *p = r->procs; p; p = p->next)
    if (!p->finished) rp_kill(p, SIGTERM);
  double limit = sb_now() + rr->cfg.grace + 5;
  while (sb_runner_live(r, false) > 0 && sb_now() < limit) rr_run(r, NULL, 0.05);
  /* what is still running: killed, and its stream let go of (its thread
   * ends at the next keepalive, or at the idle limit on a dead link) */
  for (sb_proc *b = r->procs; b; b = b->next) {
    rproc *p = RP(b);
    if (b->finished) continue;
    send_signal(p, SIGKILL);
    atomic_store(&p->stop, true);
    set_hold(p); /* a thread waiting for room lets go */
    join(p);
    drain(rr);
    if (!b->finished) finish(p);
  }
  drain(rr);
  sb_rr_guard_close(rr);
  sb_runner_detach_all(r); /* what the binding still holds stays readable */
  sb_notify_close(&rr->wake);
  pthread_mutex_destroy(&rr->mu);
  pthread_cond_destroy(&rr->started);
  sb_mem m = rr->mem;
  sb_free(&m, rr, sizeof *rr);
}

static const sb_runner_ops remote_ops = {
    .start = rr_start,
    .run = rr_run,
    .backend_fd = rr_backend_fd,
    .backend_timeout = rr_backend_timeout,
    .close = rr_close,
    .kill = rp_kill,
    .write = rp_write,
    .close_stdin = rp_close_stdin,
    .popped = rp_popped,
    .hold_changed = rp_hold_changed,
    .busy = rp_busy,
    .detach = rp_detach,
    .free = rp_free,
};

sb_runner *sb_remote_runner(const sb_mem *m, const sb_remote_runner_config *cfg, sb_err *e) {
  rrunner *rr = sb_malloc(m, sizeof *rr);
  if (!rr) {
    sb_fail_oom(e);
    return NULL;
  }
  memset(rr, 0, sizeof *rr);
  if (sb_notify_open(&rr->wake) != 0) {
    sb_fail_errno(e, errno);
    sb_free(m, rr, sizeof *rr);
    return NULL;
  }
  pthread_mutex_init(&rr->mu, NULL);
  pthread_cond_init(&rr->started, NULL);
  rr->tail = &rr->head;
  atomic_init(&rr->guard_lost, false);
  atomic_init(&rr->guard_done, false);
  atomic_init(&rr->helper_lost, false);
  rr->base.ops = &remote_ops;
  rr->base.grace = cfg->grace;
  rr->cfg = *cfg;
  rr->mem = *m;
  return &rr->base;
}
