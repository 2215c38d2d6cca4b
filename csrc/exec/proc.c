#include "exec/proc.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* Without a pidfd the exit is polled: soon at first (most commands are
 * short), backing off to REAP_POLL_MAX_MS. */
#define REAP_POLL_MAX_MS 10

/* libuv counts in whole milliseconds of loop time: round up, and one more,
 * so a deadline never fires early. */
static uint64_t ms(double s) { return s <= 0 ? 0 : (uint64_t)(s * 1000.0 + 0.999) + 1; }

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
    struct timespec zero = {0, 0};
    if (sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE)) sigtimedwait(&s, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* ---- lifetime --------------------------------------------------------- */

static void proc_free(sb_proc *p, const sb_mem *m) {
  for (int k = 0; k < 2; k++) {
    sb_outbuf_free(m, &p->cap[k]);
    sb_buf_free(m, &p->queue[k]);
  }
  if (p->pidfd >= 0) close(p->pidfd);
  sb_free(m, p, sizeof *p);
}

static void maybe_free(sb_proc *p) {
  if (!p->released || !p->finished || p->open_handles > 0) return;
  sb_exec *ex = p->ex;
  if (!ex) return; /* detached: freed by sb_proc_release */
  for (sb_proc **pp = &ex->procs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  proc_free(p, &p->mem);
}

static void on_closed(uv_handle_t *h) {
  sb_proc *p = h->data;
  p->open_handles--;
  if (p->finished && p->open_handles == 0 && p->pidfd >= 0) {
    close(p->pidfd); /* reaped and unwatched: a result needs no fd */
    p->pidfd = -1;
  }
  maybe_free(p);
}

static void close_handle(sb_proc *p, void *h) {
  uv_handle_t *hh = h;
  if (hh->data == p && !uv_is_closing(hh)) uv_close(hh, on_closed);
}

/* ---- signals to the whole tree ---------------------------------------- */

/* The cgroup that holds the whole tree: the v2 leaf, else a v1 one. */
static sb_cgroup *tree_cg(sb_proc *p) {
  if (p->cg.dirfd >= 0) return &p->cg;
  for (int i = 0; i < SB_NLIM; i++)
    if (p->lim[i].dirfd >= 0) return &p->lim[i];
  return NULL;
}

static void tree_signal(sb_proc *p, int sig) {
  sb_cgroup *cg = tree_cg(p);
  if (cg) sb_cgroup_signal(cg, sig);
  if (!p->exited) {
    if (p->pidfd >= 0) syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0);
    else kill(p->pid, sig);
  }
  kill(-p->pid, sig); /* the process group: the leader started a session */
}

/* Anything of the tree left? The cgroup holds every descendant (and no
 * zombie); without one, the process group is all we can see. */
static bool tree_alive(sb_proc *p) {
  sb_cgroup *cg = tree_cg(p);
  if (cg) return !sb_cgroup_empty(cg);
  return kill(-p->pid, 0) == 0;
}

/* Where limit i lives for p (NULL: not limited). */
static sb_cgroup *limit_cg(sb_proc *p, int i) {
  int w = p->ex->lim_where[i];
  return w == 1 ? &p->lim[i] : w == 2 ? &p->cg : NULL;
}

static uint64_t limit_counter(sb_proc *p, int i) {
  sb_cgroup *c = limit_cg(p, i);
  if (!c || c->dirfd < 0) return 0;
  if (i == SB_LIM_MEMORY)
    return p->ex->lim_where[i] == 2 ? sb_cgroup_counter(c, "memory.events", "oom_kill")
                                    : sb_cgroup_counter(c, "memory.oom_control", "oom_kill");
  if (i == SB_LIM_PIDS) return sb_cgroup_counter(c, "pids.events", "max");
  return 0;
}

static void lift(sb_proc *p);

/* ---- finishing -------------------------------------------------------- */

static void finish(sb_proc *p) {
  if (p->finished) return;
  sb_exec *ex = p->ex;
  p->finished = true;
  p->t_end = sb_now();
  /* nothing of the command outlives it */
  if (tree_alive(p)) {
    tree_signal(p, SIGKILL);
    for (int i = 0; i < 100 && tree_alive(p); i++) {
      struct timespec ts = {0, 2 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  p->oom = limit_counter(p, SB_LIM_MEMORY) > p->cnt0[SB_LIM_MEMORY];
  p->pids_hit = limit_counter(p, SB_LIM_PIDS) > p->cnt0[SB_LIM_PIDS];
  sb_cgroup_leaf_remove(&ex->cg, &p->cg);
  for (int i = 0; i < SB_NLIM; i++) sb_cgroup_leaf_remove(&ex->lim[i], &p->lim[i]);
  close_handle(p, &p->t_timeout);
  close_handle(p, &p->t_kill);
  close_handle(p, &p->t_drain);
  close_handle(p, &p->t_reap);
  close_handle(p, &p->exit_poll);
  close_handle(p, &p->in);
  close_handle(p, &p->out[0]);
  close_handle(p, &p->out[1]);
  p->in_open = false;
  if (ex->hooks.on_exit) ex->hooks.on_exit(p);
  maybe_free(p);
}

static void maybe_finish(sb_proc *p) {
  if (p->exited && p->eof[0] && p->eof[1]) finish(p);
}

static void on_drain_deadline(uv_timer_t *t) {
  sb_proc *p = t->data;
  for (int k = 0; k < 2; k++)
    if (!p->eof[k]) {
      p->eof[k] = true;
      p->output_incomplete = true; /* a descendant still held the pipe */
      close_handle(p, &p->out[k]);
    }
  finish(p);
}

static void leader_exited(sb_proc *p) {
  int status = 0;
  int r = sb_spawn_reap(p->pid, p->pidfd, &status);
  if (r == 0) return;
  p->exited = true;
  p->status = r < 0 ? -1 : status; /* -1: reaped by someone else */
  lift(p); /* what is left in the pipes is read to the end */
  if (p->pidfd >= 0) uv_poll_stop(&p->exit_poll);
  else uv_timer_stop(&p->t_reap);
  uv_timer_stop(&p->t_timeout);
  if (!p->eof[0] || !p->eof[1])
    uv_timer_start(&p->t_drain, on_drain_deadline, ms(p->ex->cfg.drain), 0);
  maybe_finish(p);
}

static void on_pidfd(uv_poll_t *h, int status, int events) {
  (void)status;
  (void)events;
  leader_exited(h->data);
}

static void on_reap_tick(uv_timer_t *t) {
  sb_proc *p = t->data;
  leader_exited(p);
  if (!p->exited) {
    uint64_t next = uv_timer_get_repeat(t) * 2;
    uv_timer_set_repeat(t, next > REAP_POLL_MAX_MS ? REAP_POLL_MAX_MS : next);
  }
}

/* ---- output ----------------------------------------------------------- */

/* Bytes a handle may queue for h:read before its pipe stops being read:
 * max_output_bytes, and never less than one read. */
static size_t queue_cap(const sb_proc *p) {
  size_t cap = p->ex->cfg.max_output;
  return cap < sizeof p->ex->readbuf ? sizeof p->ex->readbuf : cap;
}

/* Backpressure holds while the command runs and nobody waits for it; a
 * waiter, a kill or the leader's exit lifts it (see exec_proc.h). */
static bool hold_back(const sb_proc *p) {
  return !p->exited && !p->kill_sig && !p->waiters && !p->released;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void resume(sb_proc *p, int k) {
  if (!p->paused[k]) return;
  p->paused[k] = false;
  if (!p->eof[k] && !uv_is_closing((uv_handle_t *)&p->out[k])) uv_read_start((uv_stream_t *)&p->out[k], on_alloc, on_read);
}

static void lift(sb_proc *p) {
  resume(p, SB_OUT);
  resume(p, SB_ERR);
}

/* Keep a chunk for h:read; with backpressure on, a full queue stops the
 * pipe (one read may overshoot the cap by its size). */
static void queue_add(sb_proc *p, int k, const char *d, size_t n) {
  const sb_mem *m = &p->ex->mem;
  sb_buf *q = &p->queue[k];
  if (p->qoff[k] == q->len) q->len = p->qoff[k] = 0;
  size_t pending = q->len - p->qoff[k], cap = queue_cap(p);
  bool hold = hold_back(p);
  if (!hold && pending >= cap) {
    p->qdropped[k] += n; /* nobody reads while it ends: the result keeps head and tail */
    return;
  }
  if (p->qoff[k] > 0 && q->len + n > q->cap) {
    memmove(q->p, q->p + p->qoff[k], pending);
    q->len = pending;
    p->qoff[k] = 0;
  }
  if (sb_buf_append(m, q, d, n) != 0) {
    p->qdropped[k] += n; /* out of memory: counted, never silent */
    p->output_incomplete = true;
  } else if (hold && pending + n >= cap) {
    uv_read_stop((uv_stream_t *)&p->out[k]);
    p->paused[k] = true;
  }
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)hint;
  sb_proc *p = h->data;
  *buf = uv_buf_init(p->ex->readbuf, sizeof p->ex->readbuf);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  sb_proc *p = s->data;
  int k = s == (uv_stream_t *)&p->out[SB_ERR] ? SB_ERR : SB_OUT;
  if (n > 0) {
    if (sb_outbuf_add(&p->ex->mem, &p->cap[k], buf->base, (size_t)n) != 0) p->output_incomplete = true;
    if (p->queued[k]) queue_add(p, k, buf->base, (size_t)n);
    if (p->ex->hooks.on_data) p->ex->hooks.on_data(p, k, buf->base, (size_t)n);
  } else if (n < 0) { /* EOF, or the pipe broke */
    p->eof[k] = true;
    close_handle(p, s);
    maybe_finish(p);
  }
}

/* ---- timers ----------------------------------------------------------- */

static void on_grace(uv_timer_t *t) {
  sb_proc *p = t->data;
  if (!p->finished && tree_alive(p)) {
    p->kill_sig = SIGKILL;
    tree_signal(p, SIGKILL);
  }
}

static void on_timeout(uv_timer_t *t) {
  sb_proc *p = t->data;
  p->timed_out = true;
  sb_proc_kill(p, SIGTERM);
}

void sb_proc_kill(sb_proc *p, int sig) {
  if (!p->ex || p->finished) return;
  if (sig == SIGKILL || p->kill_sig == 0) p->kill_sig = sig;
  lift(p); /* a writer blocked on a full queue must see the signal */
  tree_signal(p, sig);
  if (sig != SIGKILL && !uv_is_active((uv_handle_t *)&p->t_kill))
    uv_timer_start(&p->t_kill, on_grace, ms(p->ex->cfg.grace), 0);
}

/* ---- stdin ------------------------------------------------------------ */

typedef struct wreq {
  uv_write_t req;
  sb_mem mem;
  size_t len;
  sb_proc *p;
  bool close_after;
  char data[];
} wreq;

static void on_written(uv_write_t *r, int status) {
  (void)status; /* EPIPE: the child stopped reading; its exit tells the rest */
  wreq *w = (wreq *)r;
  sb_proc *p = w->p;
  bool close_after = w->close_after;
  sb_mem m = w->mem;
  sb_free(&m, w, sizeof *w + w->len);
  if (close_after && p->in.data == p) close_handle(p, &p->in);
}

static int write_stdin(sb_proc *p, const char *data, size_t len, bool close_after) {
  if (!p->in_open) return -EPIPE;
  wreq *w = sb_malloc(&p->ex->mem, sizeof *w + len);
  if (!w) return -ENOMEM;
  w->mem = p->ex->mem;
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
    sb_free(&p->ex->mem, w, sizeof *w + len);
    return r;
  }
  return 0;
}

int sb_proc_write(sb_proc *p, const char *data, size_t len) {
  if (!p->ex || p->finished) return -EPIPE;
  return write_stdin(p, data, len, false);
}

void sb_proc_close_stdin(sb_proc *p) {
  if (!p->ex || !p->in_open) return;
  p->in_open = false;
  close_handle(p, &p->in);
}

bool sb_proc_pop(sb_proc *p, int k, const char **data, size_t *len) {
  sb_buf *q = &p->queue[k];
  if (p->qoff[k] >= q->len) return false;
  *data = q->p + p->qoff[k];
  *len = q->len - p->qoff[k];
  p->qoff[k] = q->len;
  if (p->ex && !p->finished) resume(p, k);
  return true;
}

void sb_proc_wait_begin(sb_proc *p) {
  p->waiters++;
  if (p->ex && !p->finished) lift(p);
}

void sb_proc_wait_end(sb_proc *p) {
  if (p->waiters > 0) p->waiters--;
}

bool sb_proc_stream_done(sb_proc *p, int k) {
  return p->eof[k] && p->qoff[k] >= p->queue[k].len;
}

/* ---- spawning --------------------------------------------------------- */

static void close_fds(int *fds, int n) {
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0) close(fds[i]);
}

/* Child ends must not be 0-2 (dup2 onto themselves would keep CLOEXEC). */
static int high_fd(int fd) {
  if (fd >= 3) return fd;
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return h;
}

static sb_code spawn_error(sb_err *e, const sb_spawn_res *res, const char *file) {
  int err = res->err;
  const char *step = res->step ? res->step : "spawn";
  if (strcmp(step, "exec") == 0) {
    if (err == ENOENT) return sb_failf(e, SB_ENOENT, "command not found: %.200s", file);
    if (err == EACCES) return sb_failf(e, SB_EACCES, "permission denied (not executable, or outside what the sandbox allows): %.200s", file);
    if (err == ENOEXEC) return sb_failf(e, SB_EACCES, "not an executable format: %.200s", file);
  }
  if (strcmp(step, "cwd") == 0) return sb_failf(e, sb_code_from_errno(err), "cannot enter the working directory (%s)", strerror(err));
  if (strcmp(step, "clone") == 0 && (err == EAGAIN || err == ENOMEM))
    return sb_failf(e, SB_EAGAIN, "cannot create a process (%s)", strerror(err));
  return sb_failf(e, sb_code_from_errno(err) == SB_EIO ? SB_EIO : sb_code_from_errno(err),
                  "starting the command failed at %s: %s", step, strerror(err));
}

sb_proc *sb_exec_spawn(sb_exec *ex, sb_exec_start *st, sb_err *e) {
  const sb_mem *m = &ex->mem;
  sb_proc *p = sb_malloc(m, sizeof *p);
  if (!p) {
    sb_fail(e, SB_ENOSPC, "out of memory");
    return NULL;
  }
  memset(p, 0, sizeof *p);
  p->ex = ex;
  p->mem = *m;
  p->pidfd = -1;
  p->cg.dirfd = p->cg.procs_fd = p->cg.events_fd = -1;
  for (int i = 0; i < SB_NLIM; i++) p->lim[i].dirfd = p->lim[i].procs_fd = p->lim[i].events_fd = -1;
  p->background = st->background;
  p->queued[SB_OUT] = st->background && st->queue[SB_OUT];
  p->queued[SB_ERR] = st->background && st->queue[SB_ERR];
  p->timeout = st->timeout;
  for (int k = 0; k < 2; k++) sb_outbuf_init(&p->cap[k], ex->cfg.max_output);

  /* stdin: a pipe when there is input to give, /dev/null otherwise */
  bool want_in = (st->stdin_data && st->stdin_len) || st->keep_stdin;
  int fds[6] = {-1, -1, -1, -1, -1, -1}; /* in r/w, out r/w, err r/w */
  if ((want_in && pipe2(fds, O_CLOEXEC)) || pipe2(fds + 2, O_CLOEXEC) || pipe2(fds + 4, O_CLOEXEC)) {
    sb_fail_errno(e, errno);
    close_fds(fds, 6);
    sb_free(m, p, sizeof *p);
    return NULL;
  }
  if (want_in) fds[0] = high_fd(fds[0]);
  fds[3] = high_fd(fds[3]);
  fds[5] = high_fd(fds[5]);
  p->id = ++ex->next_id;
  /* leaves: tree kill (best effort) and limits (enforced, or no command) */
  bool need_v2 = false, ok = true;
  for (int i = 0; i < SB_NLIM; i++) need_v2 |= ex->lim_where[i] == 2;
  if (st->cgroup || need_v2) ok = sb_cgroup_leaf_create(&ex->cg, &p->cg) || !need_v2;
  for (int i = 0; ok && i < SB_NLIM; i++)
    if (ex->lim_where[i] == 1) ok = sb_cgroup_leaf_create(&ex->lim[i], &p->lim[i]);
  if (!ok) {
    sb_failf(e, SB_EAGAIN, "cannot create the cgroup that enforces this sandbox's limits (%s)",
             strerror(errno));
    sb_cgroup_leaf_remove(&ex->cg, &p->cg);
    for (int i = 0; i < SB_NLIM; i++) sb_cgroup_leaf_remove(&ex->lim[i], &p->lim[i]);
    close_fds(fds, 6);
    sb_free(m, p, sizeof *p);
    return NULL;
  }
  for (int i = 0; i < SB_NLIM; i++) p->cnt0[i] = limit_counter(p, i);

  sb_confine_steps steps;
  if (st->spawn.steps) steps = *st->spawn.steps;
  else {
    memset(&steps, 0, sizeof steps);
    steps.landlock_ruleset_fd = -1;
  }
  int ncg = 0;
  for (int i = 0; i < SB_MAX_CGROUPS; i++) steps.cgroup_procs_fds[i] = -1;
  if (p->cg.procs_fd >= 0) steps.cgroup_procs_fds[ncg++] = p->cg.procs_fd;
  for (int i = 0; i < SB_NLIM && ncg < SB_MAX_CGROUPS; i++)
    if (p->lim[i].procs_fd >= 0) steps.cgroup_procs_fds[ncg++] = p->lim[i].procs_fd;
  sb_spawn_req req = st->spawn;
  req.steps = &steps;
  req.stdin_fd = want_in ? fds[0] : ex->devnull;
  req.stdout_fd = fds[3];
  req.stderr_fd = fds[5];
  req.stack = ex->stack;
  req.no_pidfd = ex->no_pidfd;
  sb_spawn_res res;
  int rc = sb_spawn(&req, &res);
  if (want_in) close(fds[0]);
  close(fds[3]);
  close(fds[5]);
  if (rc != 0) {
    if (want_in) close(fds[1]);
    close(fds[2]);
    close(fds[4]);
    sb_cgroup_leaf_remove(&ex->cg, &p->cg);
    for (int i = 0; i < SB_NLIM; i++) sb_cgroup_leaf_remove(&ex->lim[i], &p->lim[i]);
    spawn_error(e, &res, req.file);
    sb_free(m, p, sizeof *p);
    return NULL;
  }
  p->pid = res.pid;
  p->pidfd = res.pidfd;
  p->t0 = sb_now();

  uv_loop_t *loop = &ex->loop;
  uv_pipe_init(loop, &p->out[0], 0);
  uv_pipe_init(loop, &p->out[1], 0);
  uv_pipe_open(&p->out[0], fds[2]);
  uv_pipe_open(&p->out[1], fds[4]);
  uv_timer_init(loop, &p->t_timeout);
  uv_timer_init(loop, &p->t_kill);
  uv_timer_init(loop, &p->t_drain);
  void *handles[] = {&p->out[0], &p->out[1], &p->t_timeout, &p->t_kill, &p->t_drain};
  for (size_t i = 0; i < sizeof handles / sizeof *handles; i++) ((uv_handle_t *)handles[i])->data = p;
  p->open_handles = 5;
  if (want_in) {
    uv_pipe_init(loop, &p->in, 0);
    uv_pipe_open(&p->in, fds[1]);
    p->in.data = p;
    p->open_handles++;
  }
  if (p->pidfd >= 0) {
    uv_poll_init(loop, &p->exit_poll, p->pidfd);
    p->exit_poll.data = p;
    p->open_handles++;
    uv_poll_start(&p->exit_poll, UV_READABLE, on_pidfd);
  } else { /* no pidfd: poll for the exit */
    uv_timer_init(loop, &p->t_reap);
    p->t_reap.data = p;
    p->open_handles++;
    uv_timer_start(&p->t_reap, on_reap_tick, 1, 1);
  }
  uv_read_start((uv_stream_t *)&p->out[0], on_alloc, on_read);
  uv_read_start((uv_stream_t *)&p->out[1], on_alloc, on_read);
  uv_update_time(loop); /* timers count from now, not from the last turn */
  if (st->timeout > 0) uv_timer_start(&p->t_timeout, on_timeout, ms(st->timeout), 0);
  p->in_open = want_in;
  if (st->stdin_data && st->stdin_len) write_stdin(p, st->stdin_data, st->stdin_len, !st->keep_stdin);
  p->next = ex->procs;
  ex->procs = p;
  return p;
}

/* ---- the loop --------------------------------------------------------- */

static void on_wait(uv_timer_t *t) { (void)t; }

bool sb_exec_run(sb_exec *ex, sb_proc *p, double timeout) {
  double deadline = timeout < 0 ? -1 : sb_now() + timeout;
  pipeguard g;
  guard_on(&g);
  ex->running++;
  for (;;) {
    if (p && p->finished) break;
    double left = deadline < 0 ? -1 : deadline - sb_now();
    if (deadline >= 0 && left <= 0) {
      uv_run(&ex->loop, UV_RUN_NOWAIT);
      break;
    }
    /* the loop's clock is cached from its last turn: a host that slept
     * since would get a timer already due, and then a turn that blocks
     * without one */
    uv_update_time(&ex->loop);
    if (left >= 0) uv_timer_start(&ex->wait_timer, on_wait, ms(left) + 1, 0);
    int alive = uv_run(&ex->loop, UV_RUN_ONCE);
    uv_timer_stop(&ex->wait_timer);
    if (!p || !alive) break;
  }
  ex->running--;
  guard_off(&g);
  return p ? p->finished : true;
}

int sb_exec_backend_fd(sb_exec *ex) { return uv_backend_fd(&ex->loop); }

int sb_exec_backend_timeout(sb_exec *ex) {
  if (!sb_exec_live(ex, false)) return -1; /* libuv says 0 for an idle loop */
  uv_update_time(&ex->loop);
  return uv_backend_timeout(&ex->loop);
}

int sb_exec_live(sb_exec *ex, bool background_only) {
  int n = 0;
  for (sb_proc *p = ex->procs; p; p = p->next)
    if (!p->finished && (!background_only || p->background)) n++;
  return n;
}

void sb_proc_release(sb_proc *p) {
  p->released = true;
  if (p->ex && !p->finished) lift(p); /* nobody can read it any more */
  if (!p->ex) proc_free(p, &p->mem); /* detached: its handles are gone already */
  else maybe_free(p);
}

void sb_exec_prepare(sb_exec *ex, const sb_mem *m, const sb_exec_config *cfg) {
  memset(ex, 0, sizeof *ex);
  ex->mem = *m;
  ex->cfg = *cfg;
  ex->devnull = -1;
  ex->cg.dirfd = ex->cg.parentfd = -1;
  for (int i = 0; i < SB_NLIM; i++) ex->lim[i].dirfd = ex->lim[i].parentfd = -1;
}

void sb_exec_setup_cgroups(sb_exec *ex, bool kill, const sb_exec_limits *lim,
                           const char *via[SB_NLIM]) {
  static const char *const ctrl[SB_NLIM] = {"memory", "pids", "cpu"};
  uint64_t want[SB_NLIM] = {lim->memory, lim->pids, lim->cpu > 0};
  bool any = kill;
  for (int i = 0; i < SB_NLIM; i++) {
    via[i] = NULL;
    any |= want[i] != 0;
  }
  if (any) sb_cgroup_base_open(&ex->cg, ex);
  char v[48];
  for (int i = 0; i < SB_NLIM; i++) {
    if (!want[i]) continue;
    /* v2 where the controller is delegated to us, else its v1 hierarchy */
    bool v2 = sb_cgroup_enable(&ex->cg, ctrl[i]);
    sb_cgroup_base *b = v2 ? &ex->cg : &ex->lim[i];
    if (!v2 && !sb_cgroup_base_open_v1(b, ctrl[i], ex)) continue;
    bool ok = true;
    if (i == SB_LIM_MEMORY) {
      snprintf(v, sizeof v, "%llu", (unsigned long long)lim->memory);
      ok = sb_cgroup_setting_add(b, v2 ? "memory.max" : "memory.limit_in_bytes", v);
      /* no escape into swap */
      if (ok && v2 && faccessat(b->dirfd, "memory.swap.max", F_OK, 0) == 0)
        ok = sb_cgroup_setting_add(b, "memory.swap.max", "0");
      if (ok && !v2 && faccessat(b->dirfd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0)
        ok = sb_cgroup_setting_add(b, "memory.memsw.limit_in_bytes", v);
    } else if (i == SB_LIM_PIDS) {
      snprintf(v, sizeof v, "%llu", (unsigned long long)lim->pids);
      ok = sb_cgroup_setting_add(b, "pids.max", v);
    } else {
      long quota = (long)(lim->cpu * 100000 + 0.5);
      if (quota < 1000) quota = 1000;
      if (v2) {
        snprintf(v, sizeof v, "%ld 100000", quota);
        ok = sb_cgroup_setting_add(b, "cpu.max", v);
      } else {
        snprintf(v, sizeof v, "%ld", quota);
        ok = sb_cgroup_setting_add(b, "cpu.cfs_period_us", "100000") &&
             sb_cgroup_setting_add(b, "cpu.cfs_quota_us", v);
      }
    }
    /* a probe leaf proves the settings are accepted before we rely on them */
    sb_cgroup probe;
    if (ok && sb_cgroup_leaf_create(b, &probe)) {
      sb_cgroup_leaf_remove(b, &probe);
      ex->lim_where[i] = v2 ? 2 : 1;
      via[i] = v2 ? "cgroup v2" : "cgroup v1";
    } else if (!v2) {
      sb_cgroup_base_close(b);
    }
  }
  if (!kill && ex->cg.dirfd >= 0) {
    bool used = false;
    for (int i = 0; i < SB_NLIM; i++) used |= ex->lim_where[i] == 2;
    if (!used) sb_cgroup_base_close(&ex->cg);
  }
}

int sb_exec_init(sb_exec *ex, sb_err *e) {
  int r = uv_loop_init(&ex->loop);
  if (r != 0) {
    sb_failf(e, SB_EIO, "cannot create an event loop: %s", uv_strerror(r));
    return -1;
  }
  ex->stack = mmap(NULL, SB_SPAWN_STACK, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  ex->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (ex->stack == MAP_FAILED || ex->devnull < 0) {
    sb_fail_errno(e, ex->devnull < 0 ? errno : ENOMEM);
    if (ex->stack != MAP_FAILED) munmap(ex->stack, SB_SPAWN_STACK);
    if (ex->devnull >= 0) close(ex->devnull);
    ex->stack = NULL;
    ex->devnull = -1;
    uv_loop_close(&ex->loop);
    return -1;
  }
  uv_timer_init(&ex->loop, &ex->wait_timer);
  ex->loop_ready = true;
  return 0;
}

void sb_exec_close(sb_exec *ex) {
  if (ex->loop_ready) {
    for (sb_proc *p = ex->procs; p; p = p->next)
      if (!p->finished) sb_proc_kill(p, SIGTERM);
    double limit = sb_now() + ex->cfg.grace + ex->cfg.drain + 5;
    while (sb_exec_live(ex, false) > 0 && sb_now() < limit) sb_exec_run(ex, NULL, 0.05);
    for (sb_proc *p = ex->procs; p; p = p->next)
      if (!p->finished) { /* should not happen: make sure anyway */
        tree_signal(p, SIGKILL);
        finish(p);
      }
    uv_close((uv_handle_t *)&ex->wait_timer, NULL);
    uv_run(&ex->loop, UV_RUN_DEFAULT); /* completes every close */
    uv_loop_close(&ex->loop);
    /* what the binding still holds stays readable; freed on release */
    sb_proc *p = ex->procs;
    while (p) {
      sb_proc *next = p->next;
      p->ex = NULL;
      p->next = NULL;
      if (p->released) proc_free(p, &p->mem);
      p = next;
    }
    ex->procs = NULL;
    munmap(ex->stack, SB_SPAWN_STACK);
    ex->stack = NULL;
    close(ex->devnull);
    ex->loop_ready = false;
  }
  sb_cgroup_base_close(&ex->cg);
  for (int i = 0; i < SB_NLIM; i++) sb_cgroup_base_close(&ex->lim[i]);
}
