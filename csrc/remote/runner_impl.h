/* What the remote runner's two sides share (remote/runner.c: the loop's
 * side, remote/runner_stream.c: each command's stream thread). Not a public
 * header. */
#ifndef SB_EXEC_REMOTE_IMPL_H
#define SB_EXEC_REMOTE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "remote/helper.h"
#include "remote/runner.h"
#include "remote/tree.h"
#include "remote/process.h"
#include "plat/fd.h"

/* A dropped stream is reattached this many times, waiting RESUME_WAIT
 * seconds more before each try. */
#define RESUME_TRIES 5
#define RESUME_WAIT 0.2
#define SWEEP_LIMIT 10 /* seconds a tree signal (remote/tree.h) may take on the engine */
#define GUARD_TRIES 3
#define EV_DONE 100 /* the thread is done with the stream: the last event */
#define EV_RESUMED 101 /* the stream was followed again after a drop */

/* One event from a stream's thread to the loop. */
typedef struct rev {
  struct rev *next;
  struct rproc *p;
  int kind; /* SB_REV_* or EV_DONE */
  uint32_t pid;
  int exit_code;
  bool exited, timed_out;
  sb_code code; /* EV_DONE: how the stream ended */
  char text[160]; /* END: envd's status; EV_DONE: the failure's message; an END's error */
  size_t len;
  char data[];
} rev;

typedef struct rrunner {
  sb_runner base;
  sb_remote_runner_config cfg;
  sb_mem mem; /* the Lua state's allocator: the loop's thread only */
  pthread_mutex_t mu;
  pthread_cond_t started; /* a thread's stream has started, or failed to */
  sb_notify wake;
  rev *head, **tail; /* events not yet dispatched */
  bool tree_ok; /* a command passed the wrapper's check (remote/tree.h) */
  /* the deadline guard (remote/tree.h, remote/runner_guard.c): the live
   * one commands are given; made again when a wrapper found it gone
   * (guard_lost, from a stream's thread), up to GUARD_TRIES failed starts.
   * Started and stopped by a thread of its own (guard_th), so no call
   * waits for the round trip: the thread's job and outcome are the
   * guard_* fields below, handed over by guard_done and the join. */
  sb_rtree_guard guard;
  atomic_bool guard_lost;
  int guard_fails;
  pthread_t guard_th;
  bool guard_th_live;
  atomic_bool guard_done;
  bool guard_want;
  sb_rtree_guard guard_old, guard_next;
  sb_code guard_code;
  bool guard_tried; /* the thread started a guard (not needed when the helper came) */
  /* the engine-side helper (remote/helper.h): uploaded by the same thread
   * once a command has passed the template's check; lost (a stream's
   * thread found it gone) and made again up to GUARD_TRIES failed uploads */
  sb_rhelper helper, helper_next;
  bool helper_want;
  int helper_fails;
  atomic_bool helper_lost;
  sb_code helper_code;
} rrunner;

typedef struct rproc {
  sb_proc base;
  rrunner *rr; /* NULL once the runner closed */
  sb_mem mem;
  pthread_t th;
  bool thread_live; /* started, not joined */
  /* a signal to the command's tree is a round trip: sent from a thread of
   * its own, so the loop's turn goes on (joined before the next one, at
   * the end and at close) */
  pthread_t sig_th;
  bool sig_live;
  int sig_sig;
  pid_t sig_pid;
  atomic_bool stop; /* the loop lets go of the stream */
  sb_rproc_spec spec;
  sb_rtree tree; /* the mark of everything the command starts */
  sb_rtree_nums nums;
  char *specmem; /* the spec's strings, for the thread (malloc) */
  /* the wrapper's form of the spec (remote/tree.h), for a start under a
   * helper that is gone; kill_helper: the helper the command started
   * under (its tree's signals go through it), or NULL */
  const char *sh_cmd;
  const char *const *sh_args;
  const char *kill_helper;
  bool t_helper, t_retry; /* the thread's: the spec is the helper's; its start is to be made again */
  rev *done_ev; /* the thread's last event, allocated up front */
  size_t specsize;
  /* the thread's own view: started (envd named it), go (the wrapper runs
   * the command), failed (nothing ran), out (stdout's first byte seen) */
  bool t_started, t_go, t_failed, t_out, t_ended;
  uint32_t t_pid;
  /* the start's outcome, under rr->mu: the loop waits for it in start,
   * or (start_later) hears a failure as the EV_DONE event */
  bool start_later;
  char prog[120]; /* argv[0], for the failure's message */
  bool t_ready;
  sb_code t_code;
  char t_msg[160];
  /* h:read's backpressure, under rr->mu: bytes of a queued stream the
   * thread handed over that h:read has not taken (or the loop dropped);
   * while that reaches the cap and `hold` is on, the thread waits in its
   * callback, so the link, envd's pipe and the command wait too, as a full
   * pipe makes a local command wait */
  size_t held[2];
  bool hold;
  pthread_cond_t room;
  /* the loop's view */
  bool started, ended, done, in_open;
  uint32_t rpid;
  char *stdin_data;
  size_t stdin_len;
  bool close_after_input;
  double deadline, kill_at; /* monotonic; 0 = none */
} rproc;

#define RR(r) ((rrunner *)(r))
#define RP(p) ((rproc *)(p))

/* Bytes h:read may hold per stream (the local runner's figure). */
size_t sb_rr_queue_cap(const rrunner *rr);
/* A new event of p's (zeroed, len bytes of data), or NULL. */
rev *sb_rr_new_ev(rproc *p, int kind, size_t len);
/* remote/runner_start.c: the strings of p's spec in one block the thread
 * can read (false: out of memory); deadline is the watchdog's, 0 for none,
 * and `check` asks the wrapper to check the template first. */
bool sb_rr_build_spec(rproc *p, const sb_cmd *cmd, const char *cwd, double deadline, double grace,
                      const sb_rtree_guard *guard, const sb_rhelper *helper, bool check);
/* The working directory's absolute path in the remote sandbox (into out). */
bool sb_rr_cwd(rrunner *rr, sb_cmd *cmd, char *out, size_t cap, sb_err *e);
/* The message of a failed start (the thread's code and text) into e. */
sb_code sb_rr_start_failure(const rproc *p, sb_code code, const char *msg, sb_err *e);
/* remote/runner_guard.c: take a guard or helper the thread made, and
 * start the thread when a helper is wanted (a command has passed the
 * check), a guard is (`need`: a command with a deadline that the helper
 * does not run) or a lost guard is to be swept; never waits for the
 * engine. */
void sb_rr_guard_tick(rrunner *rr, bool need);
/* At close: wait for the thread, end the guard and remove the helper (round trips). */
void sb_rr_guard_close(rrunner *rr);
/* A command's stream thread: starts it, follows it (again after a drop),
 * hands its events to the loop. */
void *sb_rr_stream_main(void *arg);

#endif
