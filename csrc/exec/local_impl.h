/* The local runner's state and what its two files share (exec/local.c:
 * the loop, output, timers, kills and finishing; exec/local_start.c:
 * spawning a command and watching it). Private to them: everything else
 * goes through exec/local.h. */
#ifndef SB_EXEC_LOCAL_IMPL_H
#define SB_EXEC_LOCAL_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "exec/cmdtree.h"
#include "exec/local.h"

/* Without a pidfd the exit is polled: soon at first (most commands are
 * short), backing off to REAP_POLL_MAX_MS. */
#define REAP_POLL_MAX_MS 10

typedef struct local {
  sb_runner base;
  sb_local_config cfg;
  sb_mem mem;
  uv_loop_t loop;
  uv_timer_t wait_timer; /* bounds one blocking turn of the loop */
  void *stack; /* the child stack for sb_spawn, reused */
  struct sb_zygote *zygote; /* confined commands' spawner, from the second one on (exec/zygote.h) */
  int spawned; /* confined commands started */
  signed char born_in_leaf; /* commands born in their cgroup leaf (clone3): 0 untried, 1 yes, -1 no */
  int zygote_failures; /* zygotes that could not be made or died: after 3, none */
  int devnull; /* stdin of commands given no input */
  bool loop_ready;
  /* watchers changed outside a turn of the loop (a start, a write, a
   * kill): libuv adds them to its epoll set only when it runs, so the
   * backend fd cannot show their events yet: a host's poller is told to
   * turn now (backend_timeout 0) */
  bool stirred;
  char readbuf[64 * 1024];
} local;

typedef struct lproc {
  sb_proc base;
  local *lr; /* NULL once the runner closed */
  sb_mem mem;
  int pidfd;
  uv_pipe_t in, out[2];
  uv_poll_t exit_poll;
  uv_timer_t t_timeout, t_kill, t_drain, t_reap;
  int open_handles;
  bool in_open;
  /* A full h:read queue (base.queue) stops reading its pipe (the command
   * blocks in write, as on any pipe) until the reader drains it; only while
   * someone waits for the result, or the command is ending, does output
   * that does not fit go to the result alone, counted in base.qdropped. */
  bool paused[2];
  sb_cmdtree tree; /* the cgroup leaves holding everything it starts */
  bool outside; /* counted in its file system's `outside` */
} lproc;

#define LR(r) ((local *)(r))
#define LP(p) ((lproc *)(p))

/* libuv counts in whole milliseconds of loop time: round up, and one more,
 * so a deadline never fires early. */
/* Seconds to a timer's milliseconds. The Lua options bound timeouts to a
 * year; an embedding C host may pass anything, and casting inf, NaN or 1e19
 * to an integer is undefined (it gave 0: an instant kill), so past ~30 000
 * years the answer is simply "that long". */
static inline uint64_t sb_local_ms(double s) {
  if (!(s < 1e12)) return s > 0 || s != s ? UINT64_C(1) << 50 : 0;
  return s <= 0 ? 0 : (uint64_t)(s * 1000.0 + 0.999) + 1;
}

/* The loop, at the first command (exec/local.c). */
int sb_local_loop_init(local *lr, sb_err *e);
/* The runner's start (exec/local_start.c). */
sb_proc *sb_local_start(sb_runner *r, sb_cmd *cmd, sb_err *e);

/* What a start sets watching (exec/local.c). */
void sb_lp_on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
void sb_lp_on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
void sb_lp_on_pidfd(uv_poll_t *h, int status, int events);
void sb_lp_on_reap_tick(uv_timer_t *t);
void sb_lp_on_timeout(uv_timer_t *t);
int sb_lp_write_stdin(lproc *p, const char *data, size_t len, bool close_after);

#endif
