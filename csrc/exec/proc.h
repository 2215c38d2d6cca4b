/* Running commands: one libuv loop per sandbox drives the pipes, timers and
 * exit notifications of its processes. No Lua here: the binding installs
 * hooks (called from inside the loop) and reads the results.
 *
 * A process ends when its leader has exited and its output is drained (EOF
 * on both pipes, or the drain deadline passed: a grandchild holding a pipe
 * cannot hang it). Then whatever is left of its tree is killed, so no
 * descendant outlives the command. Timeouts and kills send SIGTERM to the
 * whole tree, then SIGKILL after a grace period. */
#ifndef SB_EXEC_PROC_H
#define SB_EXEC_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "exec/cgroup.h"
#include "exec/outbuf.h"
#include "exec/spawn.h"
#include "base/err.h"
#include "base/mem.h"

enum { SB_OUT = 0, SB_ERR = 1 };

typedef struct sb_exec sb_exec;
typedef struct sb_proc sb_proc;

typedef struct sb_exec_config {
  double grace;      /* seconds from SIGTERM to SIGKILL */
  double drain;      /* seconds to drain output after the leader exits */
  size_t max_output; /* bytes kept per stream (head + tail) */
} sb_exec_config;

/* Resource limits per command, enforced through cgroups. */
enum { SB_LIM_MEMORY, SB_LIM_PIDS, SB_LIM_CPU, SB_NLIM };

typedef struct sb_exec_limits {
  uint64_t memory; /* bytes, 0 = none */
  uint64_t pids;   /* 0 = none */
  double cpu;      /* cores, 0 = none */
} sb_exec_limits;

typedef struct sb_exec_hooks {
  void (*on_data)(sb_proc *p, int stream, const char *buf, size_t len);
  void (*on_exit)(sb_proc *p);
} sb_exec_hooks;

struct sb_exec {
  uv_loop_t loop;
  uv_timer_t wait_timer; /* bounds one blocking turn of the loop */
  sb_mem mem;
  sb_exec_config cfg;
  sb_exec_hooks hooks;
  void *hook_ud;
  sb_proc *procs;
  unsigned next_id;
  void *stack; /* the child stack for sb_spawn, reused */
  int devnull; /* stdin of commands given no input */
  char readbuf[64 * 1024];
  bool loop_ready;
  sb_cgroup_base cg;            /* v2: tree kill, and delegated controllers */
  sb_cgroup_base lim[SB_NLIM];  /* v1 hierarchies holding limits */
  int lim_where[SB_NLIM];       /* 0 none, 1 v1 (lim[i]), 2 v2 (cg) */
  bool no_pidfd; /* test switch: watch exits by polling */
  int running;   /* nesting guard: the loop is not reentrant */
};

struct sb_proc {
  sb_exec *ex; /* NULL once the sandbox closed its loop */
  sb_mem mem;
  sb_proc *next;
  unsigned id;
  pid_t pid;
  int pidfd;
  bool background;
  uv_pipe_t in, out[2];
  uv_poll_t exit_poll;
  uv_timer_t t_timeout, t_kill, t_drain, t_reap;
  int open_handles;
  bool in_open, eof[2], exited, finished, timed_out, output_incomplete, released;
  int kill_sig; /* the strongest signal the sandbox sent (0 = none) */
  int status;   /* waitpid encoding */
  double t0, t_end, timeout;
  sb_outbuf cap[2];
  /* Unread output for h:read (background streams without a callback). A
   * full queue stops reading its pipe (the command blocks in write, as on
   * any pipe) until the reader drains it; only while someone waits for
   * the result, or the command is ending, does output that does not fit
   * go to the result alone, counted in qdropped. */
  bool queued[2], paused[2];
  sb_buf queue[2];
  size_t qoff[2];
  uint64_t qdropped[2];
  int waiters; /* h:wait calls in progress */
  sb_cgroup cg;
  sb_cgroup lim[SB_NLIM];
  uint64_t cnt0[SB_NLIM]; /* oom kills, pids refusals at the start */
  bool oom, pids_hit;
  void *ud; /* the binding's */
};

typedef struct sb_exec_start {
  sb_spawn_req spawn;      /* argv, envp, file, path, cwd_fd, steps */
  const char *stdin_data;  /* written then closed; NULL = none */
  size_t stdin_len;
  bool keep_stdin;         /* background: leave stdin open for writes */
  bool background;
  bool queue[2];           /* background: keep stdout / stderr for h:read */
  double timeout;          /* seconds, <= 0 = none */
  bool cgroup;             /* put the command in its own cgroup leaf */
} sb_exec_start;

/* Prepare the runner (no loop yet; that comes with the first command). */
void sb_exec_prepare(sb_exec *ex, const sb_mem *m, const sb_exec_config *cfg);
/* cgroups: v2 leaves for tree kill when `kill`, and the limits. via[i]
 * tells how limit i is enforced ("cgroup v2", "cgroup v1") or NULL when no
 * cgroup can (then the caller falls back or fails closed). */
void sb_exec_setup_cgroups(sb_exec *ex, bool kill, const sb_exec_limits *lim,
                           const char *via[SB_NLIM]);
/* The loop, at the first command. */
int sb_exec_init(sb_exec *ex, sb_err *e);
/* Kill every process (TERM, grace, KILL), wait for them, close the loop.
 * Processes not yet released stay readable (detached). */
void sb_exec_close(sb_exec *ex);

sb_proc *sb_exec_spawn(sb_exec *ex, sb_exec_start *st, sb_err *e);
/* Run the loop until p finishes (p = NULL: one turn) or `timeout` seconds
 * pass (< 0: no limit, 0: do not block). Returns whether p finished. */
bool sb_exec_run(sb_exec *ex, sb_proc *p, double timeout);
int sb_exec_live(sb_exec *ex, bool background_only);
/* For a host's own poller: an fd that turns readable when the loop has work,
 * and the milliseconds until its next timer (-1: none, 0: work is due). */
int sb_exec_backend_fd(sb_exec *ex);
int sb_exec_backend_timeout(sb_exec *ex);

void sb_proc_kill(sb_proc *p, int sig); /* SIGKILL: at once; others: then KILL after grace */
int sb_proc_write(sb_proc *p, const char *data, size_t len); /* 0 or -errno */
void sb_proc_close_stdin(sb_proc *p);
/* Next queued chunk of a stream into out (false when empty); reading the
 * pipe resumes if a full queue had stopped it. The chunk stays valid until
 * the loop runs again. */
bool sb_proc_pop(sb_proc *p, int stream, const char **data, size_t *len);
/* Someone waits for p's result: while they do, a full queue no longer
 * holds the command back (calls nest; end each begin). */
void sb_proc_wait_begin(sb_proc *p);
void sb_proc_wait_end(sb_proc *p);
bool sb_proc_stream_done(sb_proc *p, int stream); /* EOF and nothing queued */
/* The binding is done with p: freed once it has finished and closed. */
void sb_proc_release(sb_proc *p);

#endif
