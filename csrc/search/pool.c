#include "search/pool.h"
#include "plat/cpu.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define START_AFTER 8 /* files done inline before threads are worth starting */

bool sb_wbuf_reserve(sb_wbuf *b, size_t cap) {
  if (cap <= b->cap) return true;
  size_t nc = b->cap ? b->cap : 4096;
  while (nc < cap) nc = nc > SIZE_MAX / 2 ? cap : nc * 2;
  char *np = realloc(b->p, nc);
  if (!np) return false;
  b->p = np;
  b->cap = nc;
  return true;
}

bool sb_wbuf_append(sb_wbuf *b, const void *p, size_t n) {
  if (n > SIZE_MAX - b->len || !sb_wbuf_reserve(b, b->len + n)) return false;
  if (n) memcpy(b->p + b->len, p, n);
  b->len += n;
  return true;
}

void sb_wbuf_free(sb_wbuf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

void sb_job_free(sb_job *j) {
  if (!j) return;
  if (j->fd >= 0) close(j->fd);
  free(j->own);
  free(j->path);
  sb_wbuf_free(&j->out);
  free(j);
}

size_t sb_pool_cpus(void) { return sb_cpu_count(); }

static sb_job *at(sb_pool *p, size_t i) { return p->ring[i % SB_POOL_QUEUE]; }

static void *worker(void *arg) {
  sb_pool *p = arg;
  void *tls = p->tls_new(p->ctx);
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (p->claim == p->tail && !p->quit) pthread_cond_wait(&p->work_cv, &p->mu);
    if (p->claim == p->tail) break;
    sb_job *j = at(p, p->claim++);
    bool skip = p->stop || !tls;
    if (!tls) p->failed = true;
    pthread_mutex_unlock(&p->mu);
    if (!skip) p->work(p->ctx, tls, j);
    pthread_mutex_lock(&p->mu);
    j->done = true;
    pthread_cond_broadcast(&p->done_cv);
  }
  pthread_mutex_unlock(&p->mu);
  if (tls) p->tls_free(tls);
  return NULL;
}

bool sb_pool_init(sb_pool *p, size_t nthreads, void *ctx, sb_pool_work work, sb_pool_take take,
                  void *(*tls_new)(void *), void (*tls_free)(void *)) {
  memset(p, 0, sizeof *p);
  p->ctx = ctx;
  p->work = work;
  p->take = take;
  p->tls_new = tls_new;
  p->tls_free = tls_free;
  p->nthreads = nthreads > SB_POOL_THREADS_MAX ? SB_POOL_THREADS_MAX : nthreads;
  p->main_tls = tls_new(ctx);
  if (!p->main_tls) return false;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  return true;
}

/* Threads get no signals: the host's handlers run on its own threads. */
static void start_threads(sb_pool *p) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  while (p->started < p->nthreads && pthread_create(&p->threads[p->started], NULL, worker, p) == 0) p->started++;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (p->started == 0) p->nthreads = 0; /* none could start: carry on inline */
}

/* Hand a finished job over (when the search still runs) and free it;
 * false when the taker stops the search. */
static bool deliver(sb_pool *p, sb_job *j, bool live) {
  bool ok = !live || p->take(p->ctx, j);
  sb_job_free(j);
  return ok;
}

/* With the lock held: make progress on the oldest job (hand it over when
 * done, else do a waiting job ourselves, else wait). */
static void step_locked(sb_pool *p) {
  sb_job *j = at(p, p->head);
  if (j->done) {
    p->head++;
    bool live = !p->stop && !p->failed;
    pthread_mutex_unlock(&p->mu);
    bool ok = deliver(p, j, live);
    pthread_mutex_lock(&p->mu);
    if (!ok) p->stop = true;
  } else if (p->claim < p->tail) {
    sb_job *w = at(p, p->claim++);
    bool skip = p->stop;
    pthread_mutex_unlock(&p->mu);
    if (!skip) p->work(p->ctx, p->main_tls, w);
    pthread_mutex_lock(&p->mu);
    w->done = true;
  } else {
    pthread_cond_wait(&p->done_cv, &p->mu);
  }
}

bool sb_pool_submit(sb_pool *p, sb_job *j) {
  if (!p->started) {
    if (p->stop) {
      sb_job_free(j);
      return false;
    }
    if (p->nthreads && ++p->submitted > START_AFTER) start_threads(p);
    if (!p->started) { /* inline */
      p->work(p->ctx, p->main_tls, j);
      if (!deliver(p, j, true)) p->stop = true;
      return !p->stop;
    }
  }
  pthread_mutex_lock(&p->mu);
  if (p->stop || p->failed) {
    pthread_mutex_unlock(&p->mu);
    sb_job_free(j);
    return false;
  }
  while (p->tail - p->head == SB_POOL_QUEUE) step_locked(p);
  p->ring[p->tail++ % SB_POOL_QUEUE] = j;
  pthread_cond_signal(&p->work_cv);
  while (p->head < p->tail && at(p, p->head)->done) step_locked(p); /* hand over what is ready */
  bool ok = !p->stop && !p->failed;
  pthread_mutex_unlock(&p->mu);
  return ok;
}

void sb_pool_finish(sb_pool *p) {
  if (!p->main_tls) return;
  if (p->started) {
    pthread_mutex_lock(&p->mu);
    while (p->head < p->tail) step_locked(p);
    p->quit = true;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->started; i++) pthread_join(p->threads[i], NULL);
  }
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->work_cv);
  pthread_cond_destroy(&p->done_cv);
  p->tls_free(p->main_tls);
  p->main_tls = NULL;
}
