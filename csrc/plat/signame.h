#ifndef SB_PLAT_SIGNAME_H
#define SB_PLAT_SIGNAME_H
/* A signal's name without "SIG" ("TERM"), or NULL: glibc's sigabbrev_np,
 * else the names POSIX and the BSDs share, by this system's numbers. */
#include <signal.h>
#include <stddef.h>
#include <string.h>

#include "plat/os.h"

static inline const char *sb_signame(int sig) {
#if SB_LINUX
  return sigabbrev_np(sig);
#else
  static const struct {
    int sig;
    const char *name;
  } names[] = {
      {SIGHUP, "HUP"},   {SIGINT, "INT"},     {SIGQUIT, "QUIT"}, {SIGILL, "ILL"},   {SIGTRAP, "TRAP"},
      {SIGABRT, "ABRT"}, {SIGBUS, "BUS"},     {SIGFPE, "FPE"},   {SIGKILL, "KILL"}, {SIGUSR1, "USR1"},
      {SIGSEGV, "SEGV"}, {SIGUSR2, "USR2"},   {SIGPIPE, "PIPE"}, {SIGALRM, "ALRM"}, {SIGTERM, "TERM"},
      {SIGCHLD, "CHLD"}, {SIGCONT, "CONT"},   {SIGSTOP, "STOP"}, {SIGTSTP, "TSTP"}, {SIGTTIN, "TTIN"},
      {SIGTTOU, "TTOU"}, {SIGURG, "URG"},     {SIGXCPU, "XCPU"}, {SIGXFSZ, "XFSZ"}, {SIGVTALRM, "VTALRM"},
      {SIGPROF, "PROF"}, {SIGWINCH, "WINCH"}, {SIGSYS, "SYS"},
  };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (names[i].sig == sig) return names[i].name;
  return NULL;
#endif
}

#endif
