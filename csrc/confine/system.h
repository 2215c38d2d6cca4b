/* What of the host system commands see (SPEC §6), one list for every
 * layer that needs it: the mount view builds itself from it
 * (confine/ns.c), Landlock allows it (confine/landlock.c).
 *
 * System directories are read and executed; an /etc allowlist is read:
 * certificates yes; /etc/ssl/private, shadow files, sudoers, ssh host keys
 * no (they are simply not in the list). Devices are the harmless ones. */
#ifndef SB_CONFINE_SYSTEM_H
#define SB_CONFINE_SYSTEM_H

/* Read + execute: the system directories (on a merged-/usr system the top
 * level ones are symlinks into /usr). NULL-terminated. */
extern const char *const sb_system_rx[];
/* Read only: files and directories of /etc and a few more. */
extern const char *const sb_system_ro[];
/* Read + write: device nodes every program may open. */
extern const char *const sb_system_dev[];

#endif
