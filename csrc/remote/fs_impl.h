/* What the remote backend's files share (remote/fs.c: the operations,
 * remote/fs_resolve.c: paths resolved per SPEC §4 one Stat per component,
 * remote/fs_cmd.c: what only a command in the sandbox can do,
 * remote/fs_walk.c: walks from one deep listing). Not a public header. */
#ifndef SB_FS_REMOTE_IMPL_H
#define SB_FS_REMOTE_IMPL_H

#include "remote/fs.h"

/* An entry as the resolver found it: its real root-relative path and what
 * Stat said of it. */
typedef struct rnode {
  char rel[SB_PATH_MAX + 1];
  size_t rlen;
  int type; /* SB_T_* */
  uint64_t size;
  uint32_t mode;
  double mtime;
  char target[SB_PATH_MAX + 1]; /* a link's text, once read (have_text) */
  size_t tlen;
  bool have_text;
  bool followed; /* a link was followed on the way (the policy looks again) */
} rnode;

typedef struct rfs {
  sb_envd d;
  char url[600], token[256], id[128], user[64];
  char root[SB_PATH_MAX + 1];
  size_t rootlen;
  /* Working storage, here rather than on the C stack (hosts embed Lua on
   * small stacks): the backend is never re-entered. */
  rnode n[4];
  char work[SB_WORK_MAX + 1];
  char abs[2][2 * SB_PATH_MAX + 4];
  sb_buf ref; /* open_ref's transfer */
  /* want_ref's notes (remote/fs_fetch.c): the paths in wnames */
  struct rwant *want;
  size_t nwant, capwant;
  sb_buf wnames;
  bool no_tar; /* no GNU tar in the sandbox: wanted files are read one by one */
} rfs;
#define RF(fs) ((rfs *)(fs)->impl)

static inline int sb_rm_kind(int type) { return type == SB_T_DIR ? SB_KIND_DIR : SB_KIND_FILE; }

/* The absolute path in the remote sandbox of a real root-relative path, in
 * the state's buffer `slot` (0 or 1); NULL when too long. */
const char *sb_rm_abs(rfs *r, int slot, const char *rel, size_t rlen);
/* dir + "/" + name into out; false when too long. */
bool sb_rm_join(char *out, size_t *olen, const char *dir, size_t dlen, const char *name, size_t nlen);
/* The common text for the codes whose envd words would name remote paths. */
sb_code sb_rm_plain(sb_code c, sb_err *e);
int sb_rm_type(sb_rtype t);
/* At most max_read_bytes of the file at the absolute remote path into b
 * (freed first; b->p[len] = '\0'); above that, the policy's EFBIG. */
sb_code sb_rm_read_abs(sb_fs *fs, const char *path, sb_buf *b, sb_err *e);
/* Stat the entry at the real path rel (a link described, not followed). */
sb_code sb_rm_stat(sb_fs *fs, const char *rel, size_t rlen, rnode *out, sb_err *e);
/* p resolved (a trailing "/" must name a directory). */
sb_code sb_rm_lookup(sb_fs *fs, const sb_path *p, bool follow, rnode *n, sb_err *e);
/* The directory of p's components [0, k). */
sb_code sb_rm_resolve_dir(sb_fs *fs, const sb_path *p, unsigned k, rnode *n, sb_err *e);
/* The parent of p's last component; with `create`, the deepest prefix that
 * resolves and the first missing component in *miss. */
sb_code sb_rm_find_parent(sb_fs *fs, const sb_path *p, bool create, rnode *dir, unsigned *miss, sb_err *e);
/* The parent and the entry itself (ent->type 0: none), the entry not followed. */
sb_code sb_rm_find_entry(sb_fs *fs, const sb_path *p, rnode *dir, rnode *ent, sb_err *e);
/* The text of the link n (n->target), read by a command in the sandbox:
 * envd reports where a link leads, never what it says (remote/fs_cmd.c). */
sb_code sb_rm_link_text(sb_fs *fs, rnode *n, sb_err *e);
/* readlink of the absolute path abs into text (SB_PATH_MAX + 1 bytes). */
sb_code sb_rm_readlink_cmd(sb_fs *fs, const char *abs, char *text, size_t *len, sb_err *e);
/* ln -s text ./name in the directory dpath (absolute). */
sb_code sb_rm_ln(sb_fs *fs, const char *text, const char *dpath, const char *name, size_t nlen, sb_err *e);
/* chmod mode on an absolute path. */
sb_code sb_rm_chmod(sb_fs *fs, const char *path, unsigned mode, sb_err *e);
/* Every entry below the directory abs, maxdepth levels down, each once as
 * find meets it (its path below abs, SB_T_*, Lstat size), links never
 * followed; names are bytes (envd's JSON cannot carry a non-UTF-8 one).
 * GNU find's -printf: ENOTSUP without it. */
typedef sb_code (*sb_rm_found_fn)(void *ud, const char *rel, size_t len, int type, uint64_t size, sb_err *e);
sb_code sb_rm_find(sb_fs *fs, const char *abs, int maxdepth, sb_rm_found_fn fn, void *ud, sb_err *e);
/* Is a failed listing one that find may give instead: too big a reply,
 * none in time, or a name envd cannot put in JSON. */
bool sb_rm_list_failed_over(sb_code c, const sb_err *e);
/* Where a link was followed, the rules judge the real path. */
sb_code sb_rm_recheck(sb_fs *fs, const rnode *n, const char *name, size_t nlen, sb_access acc, int kind, sb_err *e);

sb_code sb_rm_walk(sb_fs *fs, const sb_path *p, unsigned flags, sb_walk_fn fn, void *ud, sb_err *e);
sb_code sb_rm_open_ref(sb_fs *fs, const void *ref, int *fd, sb_bytes *mem, sb_err *e);
/* The absolute remote path of a file met during a walk (into out; its
 * length, 0 when too long) and the size the listing gave. */
size_t sb_rm_ref_path(const void *ref, char *out, size_t cap, uint64_t *size);
bool sb_rm_want_ref(sb_fs *fs, const void *ref, void *tag);
sb_code sb_rm_fetch_wanted(sb_fs *fs, bool fetch, sb_fetch_fn fn, void *ud, sb_err *e);
/* Forget the notes (a closing backend). */
void sb_rm_want_free(sb_fs *fs);

#endif
