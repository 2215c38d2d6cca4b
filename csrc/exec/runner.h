/* The runner interface: what the Lua binding (lua/exec.c, lua/process.c)
 * drives to run commands. A runner starts commands and pumps their I/O;
 * every runner's processes share sb_proc's fields, which are the result of
 * SPEC §5. The local runner (exec/local.c) spawns children on this host
 * over any backend that gives it a tree (sb_backend_cmd); a remote runner
 * slots in beside it by implementing these operations.
 *
 * A process ends when its leader has exited and its output is drained; then
 * whatever is left of its tree is killed. Timeouts and kills send SIGTERM to
 * the whole tree, then SIGKILL after the runner's grace period. */
#ifndef SB_EXEC_RUNNER_H
#define SB_EXEC_RUNNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/mem.h"
#include "base/path.h"
#include "exec/outbuf.h"

enum { SB_OUT = 0, SB_ERR = 1 };

typedef struct sb_runner sb_runner;
typedef struct sb_proc sb_proc;

/* Called from inside the runner's loop (never re-entered). */
typedef struct sb_runner_hooks {
  void (*on_data)(sb_proc *p, int stream, const char *buf, size_t len);
  void (*on_exit)(sb_proc *p);
  void *ud;
} sb_runner_hooks;

/* One command to start. */
typedef struct sb_cmd {
  char *const *argv; /* argv[0] is the program: with '/', as is; else searched */
  char *const *envp; /* the whole environment */
  const char *path; /* PATH to search argv[0] in */
  const sb_path *cwd; /* working directory, an agent path already checked */
  const char *stdin_data; /* written then closed; NULL = none */
  size_t stdin_len;
  bool keep_stdin; /* background: leave stdin open for writes */
  bool inherit_stdio; /* the host's fds 0-2 are the child's (no pipes, no output kept) */
  bool background;
  bool queue[2]; /* background: keep stdout / stderr for h:read */
  double timeout; /* seconds, <= 0 = none */
  /* The caller takes the start's outcome later (a host's loop must not
   * wait): a runner whose start is a round trip (remote) may return before
   * it is known; a failed start then ends the process with start_code set
   * and `error` saying why. Others start at once as always. */
  bool start_later;
  bool cwd_failed; /* out: start failed on the working directory */
} sb_cmd;

/* The result fields every runner fills, and the state the binding reads. */
struct sb_proc {
  const struct sb_runner_ops *ops; /* valid for the process's whole life */
  sb_runner *runner; /* NULL once the runner closed (the result stays readable) */
  sb_proc *next;
  unsigned id; /* small and stable: 1, 2, ... per runner */
  pid_t pid;
  bool background;
  bool queued[2]; /* stream kept for h:read (else: to a callback, or nowhere) */
  bool exited, finished, timed_out, output_incomplete, oom, pids_hit, released;
  int kill_sig; /* the strongest signal the sandbox sent (0 = none) */
  int status; /* waitpid encoding; -1 = lost (reaped by someone else, or the remote link) */
  char error[160]; /* why the runner lost it or could not run it ("" = nothing to say) */
  sb_code start_code; /* a start taken later (sb_cmd.start_later) failed: why (else SB_OK) */
  double t0, t_end; /* monotonic seconds */
  sb_outbuf cap[2]; /* what the result keeps: head and tail */
  uint64_t qdropped[2]; /* bytes that went past the h:read queue (see proc docs) */
  /* the handle core's (exec/runner.c), the same for every runner */
  sb_outq queue[2]; /* unread output of a queued stream, for h:read */
  bool eof[2]; /* the stream ended (what is queued is all there is) */
  int waiters; /* wait calls in progress */
  void *ud; /* the binding's */
};

typedef struct sb_runner_ops {
  sb_proc *(*start)(sb_runner *r, sb_cmd *cmd, sb_err *e);
  /* Run the loop until p finishes (p = NULL: one turn) or `timeout` seconds
   * pass (< 0: no limit, 0: do not block). Returns whether p finished. */
  bool (*run)(sb_runner *r, sb_proc *p, double timeout);
  /* For a host's own poller: an fd that turns readable when the loop has
   * work, and the milliseconds until its next timer (-1: none). */
  int (*backend_fd)(sb_runner *r);
  int (*backend_timeout)(sb_runner *r);
  /* Kill every process (TERM, grace, KILL), wait for them, free the runner.
   * Processes not yet released stay readable (detached). */
  void (*close)(sb_runner *r);
  void (*kill)(sb_proc *p, int sig); /* SIGKILL: at once; others: KILL after grace */
  int (*write)(sb_proc *p, const char *data, size_t len); /* 0 or -errno */
  void (*close_stdin)(sb_proc *p);
  /* The handle core (exec/runner.c) calls these; p->runner is set. */
  void (*popped)(sb_proc *p, int stream, size_t len); /* len bytes left the queue: room to read on */
  void (*hold_changed)(sb_proc *p); /* waiters or released changed: apply sb_proc_hold_back again */
  bool (*busy)(sb_proc *p); /* still holds live resources (handles, a thread): not freed yet */
  void (*detach)(sb_proc *p); /* the runner is closing: forget it */
  void (*free)(sb_proc *p); /* free p and what it owns (its queues included) */
} sb_runner_ops;

struct sb_runner {
  const sb_runner_ops *ops;
  sb_runner_hooks hooks;
  sb_proc *procs; /* newest first */
  unsigned next_id;
  int running; /* a turn of the loop is in progress: not reentrant */
  double grace; /* seconds from SIGTERM to SIGKILL */
};

/* Processes not finished yet (background ones only, when asked). */
int sb_runner_live(const sb_runner *r, bool background_only);

/* ---- the handle core: one set of rules for every runner ---------------------- */

/* A new handle of runner r for cmd: its runner, operations, background
 * queues and output caps (max_output bytes each), as every runner sets them. */
void sb_proc_init(sb_proc *p, sb_runner *r, const sb_cmd *cmd, size_t max_output);
/* Next queued chunk of a stream (false: none); valid until the loop runs. */
bool sb_proc_pop(sb_proc *p, int stream, const char **data, size_t *len);
/* EOF and nothing queued. */
bool sb_proc_stream_done(const sb_proc *p, int stream);
/* Someone waits for p's result: a full queue no longer holds it back. */
void sb_proc_wait_begin(sb_proc *p);
void sb_proc_wait_end(sb_proc *p);
/* The binding is done with p: freed once it has finished (at once when its
 * runner is gone). */
void sb_proc_release(sb_proc *p);
/* h:read's backpressure holds while the command runs and nobody waits for
 * it or can read it any more; a waiter, a kill or the leader's exit lifts
 * it (then what does not fit goes to the result alone, in qdropped). */
bool sb_proc_hold_back(const sb_proc *p);
/* Free p when it is released, finished and no longer busy (unlinked from
 * its runner first). */
void sb_proc_maybe_free(sb_proc *p);
/* The runner is closing: what the binding still holds stays readable and is
 * freed on release; released ones are freed now. */
void sb_runner_detach_all(sb_runner *r);

#endif
