/* Landlock for commands: one ruleset per sandbox, built here in the host and
 * applied by each child (exec_spawn) after no_new_privs, before execve. The
 * ABI is detected at run time and rights are degraded per ABI; the
 * constants past Debian 12's headers (which stop at ABI 2) are ours. */
#ifndef SB_CONFINE_LANDLOCK_H
#define SB_CONFINE_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>

/* What commands may do in the root (SPEC §6.1): everything but device
 * nodes; read (read_only, mode "r"); write and list, never read or run a
 * file's contents (mode "w"). */
enum { SB_LL_ROOT_RW, SB_LL_ROOT_RO, SB_LL_ROOT_WO };

typedef struct sb_landlock_policy {
  int abi; /* from sb_landlock_abi() */
  bool deny_tcp; /* handle TCP bind/connect (ABI 4+) */
  int root_fd; /* the root, with root_access; -1 = none (its rule added apart) */
  int root_access; /* SB_LL_ROOT_* */
  const int *view_fds; /* trees as a skeleton shows them: [0] the root (root_access), */
  size_t nview; /* then read roots (read only); -1 entries skipped */
  const int *ro_fds; /* read roots: read only */
  size_t nro;
  const char *const *rx_paths; /* read + execute, NULL-terminated; missing skipped */
  const char *const *ro_paths; /* read only, NULL-terminated; missing skipped */
  const char *const *dev_paths; /* devices read + write (no ioctl), NULL-terminated */
  const char *rw_dir; /* a private temporary directory (no mount view), may be NULL */
  const int *rw_fds; /* the mount view's private trees (/tmp, /dev/shm): read, write */
  size_t nrw;
  int tty_fd; /* the view's /dev/pts: read, write, ioctl; -1 = none */
  int proc_fd; /* the view's /proc: read, write files; -1 = none */
  int list_fd; /* the view's root: directories below may be listed; -1 = none */
} sb_landlock_policy;

/* 0 when Landlock is missing (not built in, or disabled at boot). */
int sb_landlock_abi(void);

/* Build the ruleset; returns its fd (O_CLOEXEC) or -1 with why. */
int sb_landlock_build(const sb_landlock_policy *pol, char *why, size_t whylen);
/* Add pol's rules to the ruleset rs (one sb_landlock_build made with
 * pol's abi and deny_tcp): rs, or -1 with why (rs closed). */
int sb_landlock_add(int rs, const sb_landlock_policy *pol, char *why, size_t whylen);

#endif
