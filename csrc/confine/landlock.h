/* Landlock for commands: one ruleset per sandbox, built here in the host and
 * applied by each child (exec_spawn) after no_new_privs, before execve. The
 * ABI is detected at run time and rights are degraded per ABI; the
 * constants past Debian 12's headers (which stop at ABI 2) are ours. */
#ifndef SB_CONFINE_LANDLOCK_H
#define SB_CONFINE_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sb_landlock_policy {
  int abi;                     /* from sb_landlock_abi() */
  bool deny_tcp;               /* handle TCP bind/connect (ABI 4+) */
  int root_fd;                 /* read, write, execute (no device nodes) */
  const int *ro_fds;           /* read roots: read only */
  size_t nro;
  const char *const *rx_paths; /* read + execute, NULL-terminated; missing skipped */
  const char *const *ro_paths; /* read only, NULL-terminated; missing skipped */
  const char *const *dev_paths; /* devices read + write (no ioctl), NULL-terminated */
  const char *rw_dir;          /* a private temporary directory (no mount view), may be NULL */
  const int *rw_fds;           /* the mount view's private trees (/tmp, /dev/shm): read, write */
  size_t nrw;
  int tty_fd;                  /* the view's /dev/pts: read, write, ioctl; -1 = none */
  int proc_fd;                 /* the view's /proc: read, write files; -1 = none */
  int list_fd;                 /* the view's root: directories below may be listed; -1 = none */
} sb_landlock_policy;

/* 0 when Landlock is missing (not built in, or disabled at boot). */
int sb_landlock_abi(void);

/* Build the ruleset; returns its fd (O_CLOEXEC) or -1 with why. */
int sb_landlock_build(const sb_landlock_policy *pol, char *why, size_t whylen);

#endif
