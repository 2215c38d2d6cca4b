#ifndef SB_PLAT_SIGWATCH_H
#define SB_PLAT_SIGWATCH_H
/* Signals taken as events by a thread that blocks them: Linux's signalfd
 * (an fd to poll); elsewhere the pending set, looked at between polls of
 * at most SB_SIGWATCH_SLICE_MS (POSIX has no fd for it). */
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

#include "plat/os.h"
#if SB_LINUX
#include <errno.h>
#include <sys/signalfd.h>
#endif

#define SB_SIGWATCH_SLICE_MS 50

typedef struct sb_sigwatch {
  bool on;
  int fd; /* to poll, or -1: poll in slices */
  sigset_t set;
} sb_sigwatch;

/* Watch `set` (already blocked by the caller). 0 or -1 (errno). */
static inline int sb_sigwatch_open(sb_sigwatch *w, const sigset_t *set) {
  w->set = *set;
  w->fd = -1;
#if SB_LINUX
  w->fd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (w->fd < 0) return -1;
#endif
  w->on = true;
  return 0;
}

/* A pending watched signal, taken; 0 when none. Never waits. */
static inline int sb_sigwatch_take(sb_sigwatch *w) {
  if (!w->on) return 0;
#if SB_LINUX
  struct signalfd_siginfo si;
  ssize_t n;
  while ((n = read(w->fd, &si, sizeof si)) < 0 && errno == EINTR) {}
  return n == (ssize_t)sizeof si ? (int)si.ssi_signo : 0;
#else
  sigset_t pend;
  if (sigpending(&pend) != 0) return 0;
  for (int sig = 1; sig < NSIG; sig++) {
    if (!sigismember(&w->set, sig) || !sigismember(&pend, sig)) continue;
    sigset_t one;
    int got = 0;
    sigemptyset(&one);
    sigaddset(&one, sig);
    if (sigwait(&one, &got) == 0) return got; /* pending: returns at once */
  }
  return 0;
#endif
}

static inline void sb_sigwatch_close(sb_sigwatch *w) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  w->on = false;
}

#endif
