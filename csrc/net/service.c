#include "net/service.h"

#include <string.h>

void sb_netsvc_init(sb_netsvc *s) {
  memset(s, 0, sizeof *s);
  sb_mem_init_plain(&s->mem);
}

static void on_wake(uv_async_t *a) {
  sb_netsvc *s = a->data;
  uv_mutex_lock(&s->mu);
  sb_netsvc_fn fn = s->fn;
  void *arg = s->arg;
  s->fn = NULL;
  uv_mutex_unlock(&s->mu);
  if (fn) fn(s, arg);
}

static void thread_main(void *arg) {
  sb_netsvc *s = arg;
  uv_run(&s->loop, UV_RUN_DEFAULT); /* until the wake handle closes */
}

int sb_netsvc_start(sb_netsvc *s) {
  if (s->started) return 0;
  int r = uv_loop_init(&s->loop);
  if (r != 0) return r;
  if ((r = uv_async_init(&s->loop, &s->wake, on_wake)) != 0) {
    uv_loop_close(&s->loop);
    return r;
  }
  s->wake.data = s;
  uv_mutex_init(&s->mu);
  uv_cond_init(&s->cv);
  if ((r = uv_thread_create(&s->thread, thread_main, s)) != 0) {
    uv_close((uv_handle_t *)&s->wake, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    uv_loop_close(&s->loop);
    uv_mutex_destroy(&s->mu);
    uv_cond_destroy(&s->cv);
    return r;
  }
  s->started = true;
  return 0;
}

void sb_netsvc_call(sb_netsvc *s, sb_netsvc_fn fn, void *arg) {
  uv_mutex_lock(&s->mu);
  while (s->busy) uv_cond_wait(&s->cv, &s->mu); /* one call at a time */
  s->busy = true;
  s->fn = fn;
  s->arg = arg;
  uv_async_send(&s->wake);
  while (s->busy) uv_cond_wait(&s->cv, &s->mu);
  uv_cond_broadcast(&s->cv); /* a caller waiting for its turn */
  uv_mutex_unlock(&s->mu);
}

void sb_netsvc_done(sb_netsvc *s) {
  uv_mutex_lock(&s->mu);
  s->busy = false;
  uv_cond_broadcast(&s->cv);
  uv_mutex_unlock(&s->mu);
}

static void close_wake(sb_netsvc *s, void *arg) {
  (void)arg;
  uv_close((uv_handle_t *)&s->wake, NULL); /* the loop ends with its last handle */
  sb_netsvc_done(s);
}

void sb_netsvc_stop(sb_netsvc *s) {
  if (!s->started) return;
  sb_netsvc_call(s, close_wake, NULL);
  uv_thread_join(&s->thread);
  uv_loop_close(&s->loop);
  uv_mutex_destroy(&s->mu);
  uv_cond_destroy(&s->cv);
  s->started = false;
}
