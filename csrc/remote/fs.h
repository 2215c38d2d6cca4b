/* The remote backend: the file system of a sandbox on an engine that
 * speaks E2B's protocol (SPEC §15), through envd's /files and Filesystem
 * service (remote/envd.h). The tree is the directory `root` inside the
 * remote sandbox (the template user's home by default).
 *
 * envd resolves paths as the remote kernel does, links and all, so the
 * backend never hands it a path with a link in it: every path is resolved
 * here, component by component with Stat (which describes a link rather
 * than following it), by the same rules as the other backends (SPEC §4),
 * and only the real path — beneath the root, no link left — is sent. */
#ifndef SB_FS_REMOTE_H
#define SB_FS_REMOTE_H

#include "fs/backend.h"
#include "remote/envd.h"

extern const sb_backend sb_remote_backend;

/* Attach to the envd at d (its strings are copied) with the tree at root
 * (absolute, no trailing "/"); checks that root is a directory there. */
sb_code sb_remote_fs_open(sb_fs *fs, const sb_envd *d, const char *root, sb_err *e);

/* The envd the backend speaks to (for the remote runner), valid while fs is open. */
const sb_envd *sb_remote_fs_envd(sb_fs *fs);

#endif
