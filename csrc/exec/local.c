#include "exec/local.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "base/clock.h"
#include "exec/spawn.h"
#include "exec/cmdtree.h"
#include "exec/local_impl.h"
#include "exec/zygote.h"
#include "plat/proc.h"

/* Writing to a child's stdin after it exited raises SIGPIPE, which would
 * kill the host. Block it in this thread around the loop and writes, and
 * consume one our writes left pending; the host's disposition is untouched. */
typedef struct pipeguard {
  sigset_t old;
} pipeguard;

static void guard_on(pipeguard *g) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &s, &g->old);
}

static void guard_off(pipeguard *g) {
  if (!sigismember(&g->old, SIGPIPE)) {
    sigset_t pend, s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    int got; /* pending for this thread (a write's SIGPIPE is): sigwait returns at once */
    if (sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE)) sigwait(&s, &got);
  }
  pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

bool sb_local_have_pidfd(void) {
  int fd = sb_pidfd_open(getpid());
  if (fd < 0) return false;
  close(fd);
  return true;
}

/* ---- lifetime --------------------------------------------------------- */

static void proc_free(lproc *p) {
  sb_mem m = p->mem;
  for (int k = 0; k < 2; k++) {
    sb_outbuf_free(&m, &p->base.cap[k]);
    sb_outq_free(&m, &p->base.queue[k]);
  }
  if (p->pidfd >= 0) close(p->pidfd);
  sb_free(&m, p, sizeof *p);
}

static void maybe_free(lproc *p) { sb_proc_maybe_free(&p->base); }

static void on_closed(uv_handle_t *h) {
  lproc *p = h->data;
  p->open_handles--;
  if (p->base.finished && p->open_handles == 0 && p->pidfd >= 0) {
    close(p->pidfd); /* reaped and unwatched: a result needs no fd */
    p->pidfd = -1;
  }
  maybe_free(p);
}

static void close_handle(lproc *p, void *h) {
  uv_handle_t *hh = h;
  if (hh->data == p && !uv_is_closing(hh)) uv_close(hh, on_closed);
}

/* ---- signals to the whole tree ---------------------------------------- */

static void tree_signal(lproc *p, int sig) { sb_cmdtree_signal(&p->tree, p->base.pid, p->pidfd, p->base.exited, sig); }

static bool tree_alive(lproc *p) { return sb_cmdtree_alive(&p->tree, p->base.pid); }

/* ---- output and backpressure ------------------------------------------ */

void sb_lp_on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)hint;
  lproc *p = h->data;
  *buf = uv_buf_init(p->lr->readbuf, sizeof p->lr->readbuf);
}

/* Bytes a handle may queue for h:read before its pipe stops being read:
 * max_output_bytes, and never less than one read. */
static size_t queue_cap(const lproc *p) {
  size_t cap = p->lr->cfg.max_output;
  return cap < sizeof p->lr->readbuf ? sizeof p->lr->readbuf : cap;
}

static bool hold_back(const lproc *p) { return sb_proc_hold_back(&p->base); }

static void resume(lproc *p, int k) {
  if (!p->paused[k]) return;
  p->paused[k] = false;
  if (!p->base.eof[k] && !uv_is_closing((uv_handle_t *)&p->out[k]))
    uv_read_start((uv_stream_t *)&p->out[k], sb_lp_on_alloc, sb_lp_on_read);
}

static void lift(lproc *p) {
  resume(p, SB_OUT);
  resume(p, SB_ERR);
}

/* Keep a chunk for h:read; with backpressure on, a full queue stops the
 * pipe (one read may overshoot the cap by its size). */
static void queue_add(lproc *p, int k, const char *d, size_t n) {
  sb_outq *q = &p->base.queue[k];
  size_t pending = sb_outq_pending(q), cap = queue_cap(p);
  bool hold = hold_back(p);
  if (!hold && pending >= cap) {
    p->base.qdropped[k] += n; /* nobody reads while it ends: the result keeps head and tail */
    return;
  }
  if (sb_outq_push(&p->mem, q, d, n) != 0) {
    p->base.qdropped[k] += n; /* out of memory: counted, never silent */
    p->base.output_incomplete = true;
  } else if (hold && pending + n >= cap) {
    uv_read_stop((uv_stream_t *)&p->out[k]);
    p->paused[k] = true;
  }
}

/* ---- finishing -------------------------------------------------------- */

static void finish(lproc *p) {
  sb_proc *b = &p->base;
  if (b->finished) return;
  local *lr = p->lr;
  b->finished = true;
  b->t_end = sb_now();
  /* nothing of the command outlives it */
  bool left = tree_alive(p);
  if (left) {
    tree_signal(p, SIGKILL);
    for (int i = 0; i < 100 && (left = tree_alive(p)); i++) {
      struct timespec ts = {0, 2 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  b->oom = sb_cmdtree_hit(&p->tree, SB_LIM_MEMORY);
  b->pids_hit = sb_cmdtree_hit(&p->tree, SB_LIM_PIDS);
  sb_cmdtree_remove(&p->tree);
  close_handle(p, &p->t_timeout);
  close_handle(p, &p->t_kill);
  close_handle(p, &p->t_drain);
  close_handle(p, &p->t_reap);
  close_handle(p, &p->exit_poll);
  close_handle(p, &p->in);
  close_handle(p, &p->out[0]);
  close_handle(p, &p->out[1]);
  p->in_open = false;
  /* (a process that would not die may still change the tree: counted on) */
  if (p->outside && !left && lr->cfg.fs) lr->cfg.fs->outside--;
  if (lr->cfg.fs && lr->cfg.fs->be->cmd) lr->cfg.fs->be->cmd->changed(lr->cfg.fs);
  if (lr->base.hooks.on_exit) lr->base.hooks.on_exit(b);
  maybe_free(p);
}

static void maybe_finish(lproc *p) {
  if (p->base.exited && p->base.eof[0] && p->base.eof[1]) finish(p);
}

static void on_drain_deadline(uv_timer_t *t) {
  lproc *p = t->data;
  for (int k = 0; k < 2; k++)
    if (!p->base.eof[k]) {
      p->base.eof[k] = true;
      p->base.output_incomplete = true; /* a descendant still held the pipe */
      close_handle(p, &p->out[k]);
    }
  finish(p);
}

static void leader_exited(lproc *p) {
  int status = 0;
  int r = sb_spawn_reap(p->base.pid, p->pidfd, &status);
  if (r == 0) return;
  p->base.exited = true;
  p->base.status = r < 0 ? -1 : status; /* -1: reaped by someone else */
  lift(p); /* what is left in the pipes is read to the end */
  if (p->pidfd >= 0) uv_poll_stop(&p->exit_poll);
  else uv_timer_stop(&p->t_reap);
  uv_timer_stop(&p->t_timeout);
  if (!p->base.eof[0] || !p->base.eof[1])
    uv_timer_start(&p->t_drain, on_drain_deadline, sb_local_ms(p->lr->cfg.drain), 0);
  maybe_finish(p);
}

void sb_lp_on_pidfd(uv_poll_t *h, int status, int events) {
  (void)status;
  (void)events;
  leader_exited(h->data);
}

void sb_lp_on_reap_tick(uv_timer_t *t) {
  lproc *p = t->data;
  leader_exited(p);
  if (!p->base.exited) {
    uint64_t next = uv_timer_get_repeat(t) * 2;
    uv_timer_set_repeat(t, next > REAP_POLL_MAX_MS ? REAP_POLL_MAX_MS : next);
  }
}

void sb_lp_on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  lproc *p = s->data;
  int k = s == (uv_stream_t *)&p->out[SB_ERR] ? SB_ERR : SB_OUT;
  if (n > 0) {
    if (sb_outbuf_add(&p->mem, &p->base.cap[k], buf->base, (size_t)n) != 0) p->base.output_incomplete = true;
    if (p->base.queued[k]) queue_add(p, k, buf->base, (size_t)n);
    sb_runner_hooks *h = &p->lr->base.hooks;
    if (h->on_data) h->on_data(&p->base, k, buf->base, (size_t)n);
  } else if (n < 0) { /* EOF, or the pipe broke */
    p->base.eof[k] = true;
    close_handle(p, s);
    maybe_finish(p);
  }
}

/* ---- timers and kills ----------------------------------------------------- */

static void on_grace(uv_timer_t *t) {
  lproc *p = t->data;
  if (!p->base.finished && tree_alive(p)) {
    p->base.kill_sig = SIGKILL;
    tree_signal(p, SIGKILL);
  }
}

static void lp_kill(sb_proc *b, int sig) {
  lproc *p = LP(b);
  if (!p->lr || b->finished) return;
  if (sig == SIGKILL || b->kill_sig == 0) b->kill_sig = sig;
  lift(p); /* a writer blocked on a full queue must see the signal */
  p->lr->stirred = true;
  tree_signal(p, sig);
  if (sig != SIGKILL && !uv_is_active((uv_handle_t *)&p->t_kill))
    uv_timer_start(&p->t_kill, on_grace, sb_local_ms(p->lr->cfg.grace), 0);
}

void sb_lp_on_timeout(uv_timer_t *t) {
  lproc *p = t->data;
  p->base.timed_out = true;
  lp_kill(&p->base, SIGTERM);
}

/* ---- stdin ------------------------------------------------------------ */

typedef struct wreq {
  uv_write_t req;
  sb_mem mem;
  size_t len;
  lproc *p;
  bool close_after;
  char data[];
} wreq;

static void on_written(uv_write_t *r, int status) {
  (void)status; /* EPIPE: the child stopped reading; its exit tells the rest */
  wreq *w = (wreq *)r;
  lproc *p = w->p;
  bool close_after = w->close_after;
  sb_mem m = w->mem;
  sb_free(&m, w, sizeof *w + w->len);
  if (close_after && p->in.data == p) close_handle(p, &p->in);
}

int sb_lp_write_stdin(lproc *p, const char *data, size_t len, bool close_after) {
  if (!p->in_open) return -EPIPE;
  wreq *w = sb_malloc(&p->mem, sizeof *w + len);
  if (!w) return -ENOMEM;
  w->mem = p->mem;
  w->len = len;
  w->p = p;
  w->close_after = close_after;
  memcpy(w->data, data, len);
  if (close_after) p->in_open = false;
  uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
  pipeguard g;
  guard_on(&g);
  int r = uv_write(&w->req, (uv_stream_t *)&p->in, &b, 1, on_written);
  guard_off(&g);
  if (r < 0) {
    sb_free(&p->mem, w, sizeof *w + len);
    return r;
  }
  return 0;
}

static int lp_write(sb_proc *b, const char *data, size_t len) {
  lproc *p = LP(b);
  if (!p->lr || b->finished) return -EPIPE;
  p->lr->stirred = true;
  return sb_lp_write_stdin(p, data, len, false);
}

static void lp_close_stdin(sb_proc *b) {
  lproc *p = LP(b);
  if (!p->lr || !p->in_open) return;
  p->lr->stirred = true;
  p->in_open = false;
  close_handle(p, &p->in);
}

/* The handle core's hooks (exec/runner.c). */
static void lp_popped(sb_proc *b, int k, size_t len) {
  (void)len;
  if (b->finished) return;
  if (LP(b)->lr) LP(b)->lr->stirred = true;
  resume(LP(b), k);
}

static void lp_hold_changed(sb_proc *b) {
  if (LP(b)->lr) LP(b)->lr->stirred = true;
  if (!hold_back(LP(b))) lift(LP(b));
}

static bool lp_busy(sb_proc *b) { return LP(b)->open_handles > 0; }
static void lp_detach(sb_proc *b) { LP(b)->lr = NULL; }
static void lp_free(sb_proc *b) { proc_free(LP(b)); }

/* ---- the loop --------------------------------------------------------- */

/* The loop, at the first command. */
int sb_local_loop_init(local *lr, sb_err *e) {
  if (lr->loop_ready) return 0;
  int r = uv_loop_init(&lr->loop);
  if (r != 0) {
    sb_failf(e, SB_EIO, "cannot create an event loop: %s", uv_strerror(r));
    return -1;
  }
  lr->stack = mmap(NULL, 2 * SB_SPAWN_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | SB_MAP_STACK, -1, 0);
  lr->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (lr->stack == MAP_FAILED || lr->devnull < 0) {
    sb_fail_errno(e, lr->devnull < 0 ? errno : ENOMEM);
    if (lr->stack != MAP_FAILED) munmap(lr->stack, 2 * SB_SPAWN_STACK);
    if (lr->devnull >= 0) close(lr->devnull);
    lr->stack = NULL;
    lr->devnull = -1;
    uv_loop_close(&lr->loop);
    return -1;
  }
  uv_timer_init(&lr->loop, &lr->wait_timer);
  lr->loop_ready = true;
  return 0;
}

static void on_wait(uv_timer_t *t) { (void)t; }

static bool lr_run(sb_runner *r, sb_proc *p, double timeout) {
  local *lr = LR(r);
  if (!lr->loop_ready) return p ? p->finished : true;
  lr->stirred = false;
  double deadline = timeout < 0 ? -1 : sb_now() + timeout;
  pipeguard g;
  guard_on(&g);
  r->running++;
  for (;;) {
    if (p && p->finished) break;
    double left = deadline < 0 ? -1 : deadline - sb_now();
    if (deadline >= 0 && left <= 0) {
      uv_run(&lr->loop, UV_RUN_NOWAIT);
      break;
    }
    /* the loop's clock is cached from its last turn: a host that slept
     * since would get a timer already due, and then a turn that blocks
     * without one */
    uv_update_time(&lr->loop);
    if (left >= 0) uv_timer_start(&lr->wait_timer, on_wait, sb_local_ms(left) + 1, 0);
    int alive = uv_run(&lr->loop, UV_RUN_ONCE);
    uv_timer_stop(&lr->wait_timer);
    if (!p || !alive) break;
  }
  r->running--;
  guard_off(&g);
  return p ? p->finished : true;
}

static int lr_backend_fd(sb_runner *r) {
  sb_err e;
  if (sb_local_loop_init(LR(r), &e) != 0) return -1;
  return uv_backend_fd(&LR(r)->loop);
}

static int lr_backend_timeout(sb_runner *r) {
  local *lr = LR(r);
  if (!lr->loop_ready || !sb_runner_live(r, false)) return -1; /* libuv says 0 for an idle loop */
  if (lr->stirred) return 0;
  uv_update_time(&lr->loop);
  return uv_backend_timeout(&lr->loop);
}

static void lr_close(sb_runner *r) {
  local *lr = LR(r);
  if (lr->loop_ready) {
    for (sb_proc *p = r->procs; p; p = p->next)
      if (!p->finished) lp_kill(p, SIGTERM);
    double limit = sb_now() + lr->cfg.grace + lr->cfg.drain + 5;
    while (sb_runner_live(r, false) > 0 && sb_now() < limit) lr_run(r, NULL, 0.05);
    for (sb_proc *p = r->procs; p; p = p->next)
      if (!p->finished) { /* should not happen: make sure anyway */
        tree_signal(LP(p), SIGKILL);
        finish(LP(p));
      }
    uv_close((uv_handle_t *)&lr->wait_timer, NULL);
    uv_run(&lr->loop, UV_RUN_DEFAULT); /* completes every close */
    uv_loop_close(&lr->loop);
    sb_zygote_free(lr->zygote);
    munmap(lr->stack, 2 * SB_SPAWN_STACK);
    close(lr->devnull);
  }
  sb_runner_detach_all(r); /* what the binding still holds stays readable */
  sb_mem m = lr->mem;
  sb_free(&m, lr, sizeof *lr);
}

static const sb_runner_ops local_ops = {
    .start = sb_local_start,
    .run = lr_run,
    .backend_fd = lr_backend_fd,
    .backend_timeout = lr_backend_timeout,
    .close = lr_close,
    .kill = lp_kill,
    .write = lp_write,
    .close_stdin = lp_close_stdin,
    .popped = lp_popped,
    .hold_changed = lp_hold_changed,
    .busy = lp_busy,
    .detach = lp_detach,
    .free = lp_free,
};

sb_runner *sb_local_runner(const sb_mem *m, const sb_local_config *cfg, sb_err *e) {
  local *lr = sb_malloc(m, sizeof *lr);
  if (!lr) {
    sb_fail_oom(e);
    return NULL;
  }
  memset(lr, 0, sizeof *lr);
  lr->base.ops = &local_ops;
  lr->base.grace = cfg->grace;
  lr->cfg = *cfg;
  lr->mem = *m;
  lr->devnull = -1;
  return &lr->base;
}
