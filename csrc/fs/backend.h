/* The interface every backend implements, and the sandbox object they share.
 *
 *   front door (sb_path) -> policy (sb_policy) -> backend (vfs | rootfs)
 *
 * The Lua binding (sb_lua.c) is the only caller: it parses paths, applies
 * the policy, calls one of these, pushes the result and audits. A backend
 * sees only clean relative paths and never touches the Lua stack, so it
 * cannot raise while it holds a resource. */
#ifndef SB_BACKEND_H
#define SB_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/mem.h"
#include "base/path.h"
#include "base/policy.h"

enum { SB_T_FILE = 1, SB_T_DIR, SB_T_SYMLINK, SB_T_OTHER };

typedef struct sb_stat {
  int type;
  uint64_t size; /* 0 for directories on every backend */
  double mtime;  /* seconds since the epoch */
  uint32_t mode; /* permission bits */
} sb_stat;

typedef struct sb_dirent {
  const char *name;
  size_t namelen;
  int type;
  uint64_t size;
} sb_dirent;

/* Entries of one directory; names may borrow backend memory until the next
 * call, or live in `names`. */
typedef struct sb_dirlist {
  sb_dirent *v;
  size_t n, cap;
  sb_buf names;
} sb_dirlist;

/* File contents a backend hands out; p[len] is always '\0', so code that
 * treats the bytes as a C string (regexec) never reads past the end. */
typedef struct sb_view {
  const char *p;
  size_t len;
} sb_view;

typedef struct sb_write_opts {
  bool overwrite; /* replace an existing file */
  bool parents;   /* create missing parent directories */
} sb_write_opts;

/* Walk callback: rel is the entry's root-relative path. */
enum { SB_WALK_CONTINUE, SB_WALK_SKIP, SB_WALK_STOP };
typedef int (*sb_walk_fn)(void *ud, const char *rel, size_t rlen,
                          const sb_dirent *ent, const void *ref);

typedef struct sb_sandbox sb_sandbox;

typedef struct sb_backend {
  const char *kind; /* "virtual" | "container" */
  sb_code (*read)(sb_sandbox *sb, const sb_path *p, sb_view *out, sb_err *e);
  sb_code (*write)(sb_sandbox *sb, const sb_path *p, const char *data, size_t len,
                   const sb_write_opts *o, sb_err *e);
  sb_code (*stat)(sb_sandbox *sb, const sb_path *p, sb_stat *st, sb_err *e);
  sb_code (*readdir)(sb_sandbox *sb, const sb_path *p, sb_dirlist *out, sb_err *e);
  sb_code (*mkdir)(sb_sandbox *sb, const sb_path *p, bool parents, sb_err *e);
  sb_code (*remove)(sb_sandbox *sb, const sb_path *p, bool recursive, sb_err *e);
  sb_code (*rename)(sb_sandbox *sb, const sb_path *from, const sb_path *to,
                    bool overwrite, sb_err *e);
  /* Depth-first below p in name order; entries not followed through links. */
  sb_code (*walk)(sb_sandbox *sb, const sb_path *p, sb_walk_fn fn, void *ud, sb_err *e);
  /* Contents of a file met during walk (ref as passed to the callback). */
  sb_code (*read_ref)(sb_sandbox *sb, const void *ref, sb_view *out, sb_err *e);
  /* Release everything; the sandbox is unusable afterwards. Idempotent. */
  void (*close)(sb_sandbox *sb);
} sb_backend;

struct sb_sandbox {
  const sb_backend *be; /* set at creation, before the backend opens */
  void *impl;           /* backend state, NULL until opened */
  void *exec;           /* command runner state; NULL = no exec */
  void *net;            /* host policy, proxy, ports (sb_lua_net.c) */
  bool closed;          /* disposed: every method but close raises */
  sb_mem mem;
  sb_policy policy;
  sb_quota quota;
  sb_buf scratch; /* reused for file contents a backend reads */
  sb_buf results; /* search records, and their sorted index */
  sb_buf index;
  sb_dirlist dl;  /* reused listing storage */
  char *cwd;      /* what the agent sees as the root, absolute */
  size_t cwdlen;
  int audit_ref;  /* registry ref of the audit function, or LUA_NOREF */
};

/* Keep a listing's storage bounded between calls. */
void sb_dirlist_reset(sb_sandbox *sb, sb_dirlist *dl);
int sb_dirlist_push(sb_sandbox *sb, sb_dirlist *dl, const sb_dirent *ent);
void sb_dirlist_free(sb_sandbox *sb, sb_dirlist *dl);
void sb_dirlist_sort(sb_dirlist *dl);
/* Stable sort by name, then keep the first of equal names. 0 or -1 (OOM). */
int sb_dirlist_unique(sb_sandbox *sb, sb_dirlist *dl);

#endif
