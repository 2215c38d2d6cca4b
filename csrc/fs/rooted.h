/* What the backends over real directories share (container, overlay):
 * the error vocabulary of system calls, reading an open file under the
 * read limit, listing a directory fd, and atomic writes' temporary files. */
#ifndef SB_FS_ROOTED_H
#define SB_FS_ROOTED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs/backend.h"

/* A listing's entry that is an overlay whiteout (with SB_RT_WHITEOUTS):
 * the backend drops it, never shows it. */
#define SB_T_WHITEOUT 99

/* -errno as the sandbox's error (EXDEV: the path escapes). */
sb_code sb_rt_fail(sb_err *e, int neg);
sb_code sb_rt_fail_errno(sb_err *e);
/* A directory where a file was wanted, or a FIFO, socket or device. */
sb_code sb_rt_type_error(const struct stat *st, sb_err *e);
/* One of our temporary files (left out of listings). */
bool sb_rt_is_tmp(const char *name);

/* max_disk_usage of a backend over a real tree: the bytes its regular files
 * hold, counted lazily (dirty: recount with the backend's own walk before
 * the next check, e.g. after a command may have changed the tree) and kept
 * up to date by each write. */
typedef struct sb_disk {
  uint64_t max; /* SB_UNLIMITED = none */
  uint64_t used;
  bool dirty;
} sb_disk;
typedef sb_code (*sb_disk_count_fn)(sb_fs *fs, uint64_t *used, sb_err *e);
/* May dbytes more be written? ENOSPC, saying the limit, when not. */
sb_code sb_disk_check(sb_disk *d, sb_fs *fs, sb_disk_count_fn count, int64_t dbytes, sb_err *e);
/* dbytes were written (or freed, negative). */
void sb_disk_apply(sb_disk *d, int64_t dbytes);

/* Read an open regular file of about size_hint bytes into fs->scratch. */
sb_code sb_rt_read_fd(sb_fs *fs, int fd, uint64_t size_hint, sb_bytes *out, sb_err *e);
void sb_rt_fill_stat(const struct stat *st, sb_stat *out);

#define SB_RT_SIZES 1u /* stat every non-directory (sizes, exact types) */
#define SB_RT_READABLE 2u /* dirfd is open for reading, at its start */
#define SB_RT_WHITEOUTS 4u /* mark whiteouts (char device 0/0) SB_T_WHITEOUT */
/* Append the entries of dirfd to dl (names in dl->names: the caller fixes them up). */
sb_code sb_rt_list(sb_fs *fs, int dirfd, sb_dirlist *dl, unsigned flags, sb_err *e);

/* The start of a walk's level whose listing into lv returned `listed`:
 * sorted and announced (SB_WALK_ENTER). SB_WALK_CONTINUE to visit the
 * entries; SB_WALK_SKIP: nothing to visit (unreadable; lv freed);
 * SB_WALK_STOP (out of memory: lv freed, or the callback said so). */
int sb_rt_walk_begin(sb_fs *fs, sb_code listed, sb_dirlist *lv, unsigned flags, sb_walk_fn fn, void *ud, char *rel,
                     size_t rlen, sb_err *e);
/* Append "/" and ent's name to rel (rlen bytes): the new length, 0 past SB_PATH_MAX. */
size_t sb_rt_walk_name(char *rel, size_t rlen, const sb_dirent *ent);
/* One level of a walk over a listing (lv, as `listed` left it; freed
 * here): the directory's own call (sb_rt_walk_begin), then each entry's
 * name in rel and `visit` (the backend's call of fn with its reference,
 * and its descent), until SB_WALK_STOP. An SB_WALK_* answer. */
typedef int (*sb_rt_visit_fn)(void *self, const sb_dirent *ent, size_t len);
int sb_rt_walk_level(sb_fs *fs, sb_code listed, sb_dirlist *lv, unsigned flags, sb_walk_fn fn, void *ud, char *rel,
                     size_t rlen, sb_err *e, sb_rt_visit_fn visit, void *self);

/* Temporary names that are unpredictable from outside, without a system
 * call each. */
typedef struct sb_tmpnames {
  uint64_t seed, count;
} sb_tmpnames;
void sb_rt_tmp_init(sb_tmpnames *t, const void *salt);
/* Create a temporary file in dirfd (its name in tmp), write, sync, mode
 * 0644; the fd stays open (*fdout). On failure nothing is left behind. */
sb_code sb_rt_write_tmp(sb_tmpnames *t, int dirfd, char tmp[32], const char *data, size_t len, int *fdout, sb_err *e);

#endif
