/* Work done in a forked copy of this process, or on a thread of its own,
 * its answer read through a pipe on the host's turns (lua/forkjob.c): what
 * lets a search or an http_get finish later. The copy shares no memory
 * with the host, runs plain C (no Lua, no callback of the host's) and
 * _exits; it dies with the host. A fork copies the host's page tables (23
 * ms for a 1 GiB heap, and a copy-on-write fault at each page the host
 * writes while it runs), so work that needs none of the host's memory (a
 * ContainerSandbox's search, over fds of its own) runs on a thread
 * instead, on data it owns; stopping one asks it to end and joins it. A
 * running job belongs to its sandbox: dispose stops it, as does freeing
 * it. */
#ifndef SB_LUA_FORKJOB_H
#define SB_LUA_FORKJOB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "lua/object.h"

typedef struct sb_forkjob sb_forkjob;
struct sb_forkjob {
  sb_forkjob *next; /* in its sandbox's list */
  void *owner; /* that list; NULL once stopped or the sandbox disposed */
  pid_t pid; /* 0 once reaped */
  int fd; /* the pipe's read end; -1 once closed */
  int status; /* the copy's wait status, once reaped */
  bool joinable; /* a thread's job whose thread is not joined yet */
  pthread_t thread;
  atomic_bool cancel; /* a thread's: set when nobody wants the answer */
  void (*fn)(void *arg, int wfd); /* a thread's work, */
  void (*release)(void *arg); /* what frees arg on the thread at its end, */
  void *arg; /* and what the thread owns */
  int wfd; /* the pipe's write end, the thread's */
  sb_fs *fs; /* the sandbox's, while the copy is counted in its `outside` */
  sb_mem mem;
  sb_buf got; /* what came through the pipe */
};

/* A job's userdata of `size` bytes (zeroed; an sb_forkjob first) with the
 * metatable `mt`, holding the sandbox at stack index 1 as its uservalue 1
 * (the sandbox lives as long as its job); pushed. */
void *sb_forkjob_new(lua_State *L, size_t size, const char *mt);

/* In the copy: do the work, write the answer to wfd (sb_forkjob_write). */
typedef void (*sb_forkjob_fn)(void *arg, int wfd);

/* Fork the copy running fn(arg, wfd) on this process's memory as it is now.
 * j must be zeroed and live at a fixed address until freed. 0, or -1 with
 * e set (EAGAIN: no pipe or no process). */
int sb_forkjob_start(lua_State *L, sb_sandbox *sb, sb_forkjob *j, sb_forkjob_fn fn, void *arg, sb_err *e);
/* The same on a thread: fn(arg, wfd) runs there on what arg holds (its
 * own, allocated with the C library: the host's allocator belongs to its
 * thread), then release(arg); fn should stop early once j->cancel is set.
 * Nothing is counted as changing the tree: such work only reads. */
int sb_forkjob_start_thread(lua_State *L, sb_sandbox *sb, sb_forkjob *j, sb_forkjob_fn fn, void *arg,
                            void (*release)(void *arg), sb_err *e);
/* Read what arrived: false while the copy runs; true once its whole answer
 * is in j->got (the copy reaped, j->status set). Raises when out of memory. */
bool sb_forkjob_poll(lua_State *L, sb_forkjob *j);
/* Kill, reap, close (idempotent); what arrived stays in j->got. */
void sb_forkjob_stop(sb_forkjob *j);
void sb_forkjob_free(sb_forkjob *j);
/* All of n bytes to fd (in the copy); false on an error. */
bool sb_forkjob_write(int fd, const void *p, size_t n);

/* core.call_start and its job (lua/call_job.c), into the table on top. */
void sb_lua_call_job_open(lua_State *L);

#endif
