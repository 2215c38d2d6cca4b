/* A sandbox's network services (the allowlist proxy, exposed-port gates)
 * run on a thread of their own with their own libuv loop, so they answer
 * while the host is busy elsewhere (waiting for a model, say) and never
 * depend on the host pumping the sandbox. The Lua side talks to the thread
 * only through sb_netsvc_call: one function run on the thread, waited for.
 * The thread allocates with malloc (a host's allocator belongs to its
 * state's thread). */
#ifndef SB_NET_SERVICE_H
#define SB_NET_SERVICE_H

#include <stdbool.h>
#include <uv.h>

#include "base/mem.h"

typedef struct sb_netsvc sb_netsvc;
/* Runs on the service thread; must call sb_netsvc_done once, now or from a
 * later callback (e.g. when the handles it closed are closed). */
typedef void (*sb_netsvc_fn)(sb_netsvc *s, void *arg);

struct sb_netsvc {
  uv_loop_t loop;
  uv_async_t wake;
  uv_thread_t thread;
  uv_mutex_t mu;
  uv_cond_t cv;
  sb_mem mem;
  sb_netsvc_fn fn; /* the call waiting to run, NULL = none */
  void *arg;
  bool busy; /* a call is running */
  bool started;
};

void sb_netsvc_init(sb_netsvc *s);
/* Start the thread (idempotent). 0 or a libuv error. */
int sb_netsvc_start(sb_netsvc *s);
/* Run fn(s, arg) on the thread and wait until it called sb_netsvc_done. */
void sb_netsvc_call(sb_netsvc *s, sb_netsvc_fn fn, void *arg);
void sb_netsvc_done(sb_netsvc *s);
/* Stop the thread: every service must have been closed through calls. */
void sb_netsvc_stop(sb_netsvc *s);

#endif
