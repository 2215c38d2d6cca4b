/* The one resolver of the ContainerSandbox: open a root-relative path beneath
 * a root directory fd, never leaving it.
 *
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from the root fd with the
 * whole path (EAGAIN retried a bounded number of times), or, where openat2 is
 * unavailable (ENOSYS, or EPERM from a seccomp filter), a userspace walk over
 * a stack of held O_PATH directory fds: ".." pops the stack, symlinks are
 * spliced into the remaining path with a hop budget, absolute symlinks and
 * pops past the root are escapes, procfs links are refused. Both give the
 * same answers. Escapes (through ".." or a link, absolute links included)
 * are -EXDEV wherever they happen; -ELOOP is a real loop, or a final link
 * where it is not followed. */
#ifndef SB_RESOLVE_H
#define SB_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum { SB_RESOLVE_OPENAT2 = 1, SB_RESOLVE_FALLBACK = 2 };

typedef struct sb_resolver {
  int rootfd; /* O_PATH | O_DIRECTORY, owned by the caller */
  int kind; /* SB_RESOLVE_OPENAT2 | SB_RESOLVE_FALLBACK */
} sb_resolver;

/* Choose the implementation once: want = "auto", "openat2" or "fallback";
 * the environment variable SANDBOX_RESOLVER overrides "auto". Returns 0, or
 * -ENOSYS when openat2 is demanded but unavailable, -EINVAL for a bad name. */
int sb_resolver_init(sb_resolver *r, int rootfd, const char *want);
const char *sb_resolver_name(const sb_resolver *r);
bool sb_openat2_available(void);

/* Open rel (components joined by '/', may hold "..", "" = the root) with
 * flags | O_NOFOLLOW | O_CLOEXEC (mode with O_CREAT). Returns an fd or
 * -errno; -EXDEV means the path escapes the root. */
int sb_resolve(const sb_resolver *r, const char *rel, size_t len, int flags, mode_t mode);

/* The same with a final symlink followed while it stays inside the root
 * (reads: "CLAUDE.md -> AGENTS.md"); never with O_CREAT. */
int sb_resolve_follow(const sb_resolver *r, const char *rel, size_t len, int flags);

/* Open a directory as an intermediate component: a final symlink is
 * followed like any other inside the root ("link/x" writes into link's
 * target). Returns an O_PATH | O_DIRECTORY fd or -errno. */
int sb_resolve_dir(const sb_resolver *r, const char *rel, size_t len);

/* Open rel beneath another root (rootfd) with no symbolic link anywhere on
 * the way, the final component included: -ELOOP where one is. Only with
 * openat2 (-ENOSYS for the fallback resolver). */
int sb_resolve_nolinks(const sb_resolver *r, int rootfd, const char *rel, size_t len, int flags);

/* Root-relative path of an fd opened beneath this root, read from procfs:
 * for policy checks that must see through symlinks. Returns its length, or
 * -EXDEV if the object is no longer beneath the root, -errno otherwise. */
long sb_resolve_relpath(const sb_resolver *r, int fd, char *out, size_t cap);

#endif
