/* Worker threads for one search: the main thread walks and submits files
 * in walk order, workers read and match them, and the results come back
 * to the main thread in submission order (so a truncated result is the
 * same however many threads ran). The main thread helps with the work
 * whenever it would otherwise wait.
 *
 * Workers touch only their job, their own state and buffers (malloc'd,
 * never the Lua allocator) and data that the search does not change while
 * it runs; no Lua call and no backend call happens off the main thread. */
#ifndef SB_SEARCH_POOL_H
#define SB_SEARCH_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SB_POOL_QUEUE 128 /* files in flight */
#define SB_POOL_THREADS_MAX 8

/* Growable malloc'd bytes (a worker's). */
typedef struct sb_wbuf {
  char *p;
  size_t len, cap;
} sb_wbuf;

bool sb_wbuf_reserve(sb_wbuf *b, size_t cap);
bool sb_wbuf_append(sb_wbuf *b, const void *p, size_t n);
void sb_wbuf_free(sb_wbuf *b);

/* One file: where its bytes are (an fd the job closes, or memory the walk
 * lends), and what the work made of it. */
typedef struct sb_job {
  char *path; /* root-relative, malloc'd */
  size_t plen;
  int fd;
  const char *data; /* lent by the walk, or the job's own (own) */
  size_t dlen;
  char *own; /* malloc'd bytes the job frees */
  double mtime;
  bool done;
  bool more; /* the work kept less than it found */
  int rc; /* 0, or what the work reports (an error of the whole search) */
  sb_wbuf out; /* the records */
} sb_job;

/* The work on one job, on any thread; `tls` is that thread's state. */
typedef void (*sb_pool_work)(void *ctx, void *tls, sb_job *j);
/* A finished job, on the main thread, in order; false stops the search. */
typedef bool (*sb_pool_take)(void *ctx, sb_job *j);

typedef struct sb_pool {
  void *ctx;
  sb_pool_work work;
  sb_pool_take take;
  void *(*tls_new)(void *ctx); /* a thread's state (NULL: out of memory) */
  void (*tls_free)(void *tls);
  void *main_tls;
  size_t nthreads, started;
  pthread_t threads[SB_POOL_THREADS_MAX];
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  sb_job *ring[SB_POOL_QUEUE];
  size_t head, claim, tail; /* taken < head <= claim <= tail */
  size_t submitted;
  bool quit, stop, failed;
} sb_pool;

/* nthreads = 0: everything on the calling thread. */
bool sb_pool_init(sb_pool *p, size_t nthreads, void *ctx, sb_pool_work work, sb_pool_take take,
                  void *(*tls_new)(void *), void (*tls_free)(void *));
/* Queue a job (ownership passes to the pool); false once the search stopped
 * (the job is released) or on out of memory. */
bool sb_pool_submit(sb_pool *p, sb_job *j);
/* Wait for every job and hand the rest over; join the threads. */
void sb_pool_finish(sb_pool *p);

/* Threads worth starting on this machine (CPUs this process may use). */
size_t sb_pool_cpus(void);

void sb_job_free(sb_job *j);

#endif
