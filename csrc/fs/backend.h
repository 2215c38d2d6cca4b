/* The interface every file-system backend implements, and the narrow part
 * of the sandbox a backend receives.
 *
 *   front door (base/path) -> policy (base/policy) -> backend (fs/<kind>.c)
 *
 * The binding (lua/fs.c, lua/search.c) parses paths, checks the policy on
 * the lexical path, calls one of these and pushes the result; the search
 * part walks through them too. A backend sees clean root-relative paths
 * (".." kept: it resolves them as its tree does) and never touches Lua, so
 * it cannot raise while it holds a resource. Backends re-check the policy
 * where the lexical path is not where an object really is (a symlink).
 *
 * A new backend: fs/<kind>.c + fs/<kind>.h implementing sb_backend (with
 * `cmd` when commands can run over it), and its constructor in
 * lua/module.c. */
#ifndef SB_FS_BACKEND_H
#define SB_FS_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/mem.h"
#include "base/path.h"
#include "base/policy.h"

enum { SB_T_FILE = 1, SB_T_DIR, SB_T_SYMLINK, SB_T_OTHER, SB_T_ENTER };

typedef struct sb_stat {
  int type;
  uint64_t size; /* 0 for directories on every backend */
  double mtime; /* seconds since the epoch */
  uint32_t mode; /* permission bits */
} sb_stat;

typedef struct sb_dirent {
  const char *name; /* set once the listing is complete (see name_off) */
  size_t name_off; /* while listing: offset of the name in sb_dirlist.names */
  size_t namelen;
  int type;
  uint64_t size;
  int layer; /* which of the backend's trees holds it (the backend's own use) */
} sb_dirent;

/* Entries of one directory; names borrow backend memory until the next
 * call, or live in `names`. */
typedef struct sb_dirlist {
  sb_dirent *v;
  size_t n, cap;
  sb_buf names;
} sb_dirlist;

/* Bytes a backend hands out; p[len] is always '\0', so code that treats
 * them as a C string never reads past the end. */
typedef struct sb_bytes {
  const char *p;
  size_t len;
} sb_bytes;

typedef struct sb_write_opts {
  bool overwrite; /* replace an existing file */
  bool parents; /* create missing parent directories */
} sb_write_opts;

/* Walk callback: rel is the entry's root-relative path. */
enum { SB_WALK_CONTINUE, SB_WALK_SKIP, SB_WALK_STOP };
#define SB_WALK_SIZES 1u
#define SB_WALK_DEPTH_MAX 256 /* directory levels a walk descends, on every backend */
/* Before the entries of a directory (the start too): fn(rel = the directory,
 * ent->type = SB_T_ENTER, ref = the const sb_dirlist of its entries). */
#define SB_WALK_ENTER 2u
typedef int (*sb_walk_fn)(void *ud, const char *rel, size_t rlen, const sb_dirent *ent, const void *ref);
/* A file noted with want_ref, handed back by fetch_wanted (sb_backend). */
typedef bool (*sb_fetch_fn)(void *ud, void *tag, const char *data, size_t len, sb_code c);

typedef struct sb_backend sb_backend;

/* The file-system part of a sandbox: what a backend may use. */
typedef struct sb_fs {
  const sb_backend *be;
  void *impl; /* the backend's state, NULL until opened */
  sb_mem mem; /* the Lua state's allocator */
  const sb_policy *policy; /* the sandbox's; read-only here */
  sb_quota quota; /* byte and entry budgets the backend keeps */
  sb_buf scratch; /* file contents a backend reads */
  sb_buf search_buf; /* the last search's results block, kept warm for the next (search/search.c) */
  bool closed; /* sb_fs_close ran: a search ending later frees its block */
  /* Commands and forked copies running now: whatever they do to the tree
   * is told to no one, so while any runs a backend caches nothing about it
   * (exec/local.c and lua/forkjob.c count them). */
  unsigned outside;
} sb_fs;

/* What a command needs from the file system it runs over (the local
 * runner asks the backend through this; NULL = commands cannot run here). */
typedef struct sb_cmd_tree {
  int root_fd; /* the tree commands work in, read-write */
  const int *ro_fds; /* trees they may read (read roots), in order */
  size_t nro;
} sb_cmd_tree;

typedef struct sb_backend_cmd {
  /* An O_PATH directory fd for a command's working directory p (a final
   * symlink followed while it stays inside), and in `rel` where it really
   * is beneath the root (for a command in a mount view). */
  int (*open_cwd)(sb_fs *fs, const sb_path *p, char *rel, size_t cap, sb_err *e);
  /* The trees a command sees (fds stay owned by the backend). */
  void (*tree)(sb_fs *fs, sb_cmd_tree *out);
  /* A command or a forked copy started or ended, or the review changed an
   * overlay: whatever the backend caches about the tree is stale. */
  void (*changed)(sb_fs *fs);
} sb_backend_cmd;

/* Symlinks (SPEC §4), the same on every backend: reads (read, readdir,
 * walk's start, stat with follow) follow links while they stay inside the
 * root, a final one included, and a trailing "/" follows one as the kernel
 * does; anything leading out is EESCAPE, ELOOP is a real loop. Everything
 * else acts on a final link itself (stat without follow, remove, rename,
 * readlink) or refuses it (write: ELOOP; mkdir, symlink: EEXIST). Links met
 * by walk are reported, never descended into. Where a link was followed,
 * the policy is checked again on the real path. */
struct sb_backend {
  const char *kind; /* "virtual" | "container": the word of fs/<kind>.c */
  sb_code (*read)(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e);
  sb_code (*write)(sb_fs *fs, const sb_path *p, const char *data, size_t len, const sb_write_opts *o, sb_err *e);
  sb_code (*stat)(sb_fs *fs, const sb_path *p, bool follow, sb_stat *st, sb_err *e);
  /* Make p a link to target (any bytes but NUL; the caller checked where it
   * leads, see sb_link_join); EEXIST when p exists, a link included. */
  sb_code (*symlink)(sb_fs *fs, const char *target, size_t tlen, const sb_path *p, sb_err *e);
  /* The text of the link p (in out, valid until the next call); EINVAL when
   * p is not a link. */
  sb_code (*readlink)(sb_fs *fs, const sb_path *p, sb_bytes *out, sb_err *e);
  /* The clean root-relative path p really names, links followed (the
   * final one too when `follow`); a missing final component is allowed
   * (its parent must exist). In out, valid until the next call. */
  sb_code (*realpath)(sb_fs *fs, const sb_path *p, bool follow, sb_bytes *out, sb_err *e);
  sb_code (*readdir)(sb_fs *fs, const sb_path *p, sb_dirlist *out, sb_err *e);
  sb_code (*mkdir)(sb_fs *fs, const sb_path *p, bool parents, sb_err *e);
  sb_code (*remove)(sb_fs *fs, const sb_path *p, bool recursive, sb_err *e);
  sb_code (*rename)(sb_fs *fs, const sb_path *from, const sb_path *to, bool overwrite, sb_err *e);
  /* Depth-first below p in name order; entries not followed through links.
   * Entries carry sizes only with SB_WALK_SIZES (listing is cheaper
   * without: no stat per entry). */
  sb_code (*walk)(sb_fs *fs, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e);
  /* The contents of a file met during walk (ref as passed to the callback),
   * for reading on any thread: an fd the caller closes (*fd >= 0), or bytes
   * that stay put until the backend is next called (*fd = -1, in *mem). */
  sb_code (*open_ref)(sb_fs *fs, const void *ref, int *fd, sb_bytes *mem, sb_err *e);
  /* Optional, where a file costs a round trip (remote): many files met
   * during a walk fetched together instead of open_ref one by one. During
   * the walk, want_ref(ref, tag) notes a file (false: out of memory);
   * afterwards fetch_wanted hands every noted tag back to fn exactly once,
   * in the order noted: with the file's bytes (valid during the call) and
   * SB_OK, or with the code that kept it from being read. Once fn returns
   * false, or when `fetch` is false, the rest come back with SB_EAGAIN and
   * no request is made. Its own failures are e's; tags are handed back
   * either way. */
  bool (*want_ref)(sb_fs *fs, const void *ref, void *tag);
  sb_code (*fetch_wanted)(sb_fs *fs, bool fetch, sb_fetch_fn fn, void *ud, sb_err *e);
  /* Release everything; the part is unusable afterwards. Idempotent. */
  void (*close)(sb_fs *fs);
  /* Optional: in a forked copy of the process about to make calls of its
   * own (lua/forkjob.c), let go of what it must not share with the host,
   * without closing it (the host still uses it): a remote backend's kept
   * connections, whose streams two processes cannot both write. */
  void (*forked)(sb_fs *fs);
  /* Optional: a second handle on the same trees in `to` (its be and mem
   * set by the caller, the policy shared read-only), for reads on another
   * thread while this one goes on: its own fds and caches, nothing shared
   * but the kernel's tree. NULL where the tree is this process's memory or
   * connections (virtual, the userspace overlay, remote). */
  sb_code (*open_copy)(sb_fs *to, sb_fs *from, sb_err *e);
  const sb_backend_cmd *cmd; /* NULL: no commands over this backend */
};

/* Set up the part for backend `be` (nothing opened yet; unlimited quota). */
void sb_fs_init(sb_fs *fs, const sb_backend *be, const sb_mem *m, const sb_policy *pol);
/* Close the backend and free the scratch buffer; idempotent. */
void sb_fs_close(sb_fs *fs);

#endif
