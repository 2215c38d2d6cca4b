/* Reading a tree as it lies on disk, for review: an overlay's upper layer
 * (whiteouts, opaque directories) or the base it lies over. Every level is
 * opened O_NOFOLLOW from its parent's fd: a symbolic link is reported,
 * never followed. Entries come in name order, parents before children. */
#ifndef SB_REVIEW_SCAN_H
#define SB_REVIEW_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { SB_SCAN_FILE, SB_SCAN_DIR, SB_SCAN_LINK, SB_SCAN_WHITEOUT, SB_SCAN_OTHER };

typedef struct sb_scan_entry {
  const char *path; /* relative to the scanned directory, '/'-separated */
  size_t plen;
  int type;
  bool opaque; /* a directory marked opaque (trusted. or user.overlay.opaque = "y") */
  uint64_t size;
  int64_t mtime_sec;
  long mtime_nsec;
} sb_scan_entry;

/* Return nonzero to stop. */
typedef int (*sb_scan_fn)(void *ud, const sb_scan_entry *e);

/* Visit everything below dirfd (an O_RDONLY directory fd). 0, or an errno
 * (ENOMEM, or the first directory that could not be read). */
int sb_scan_tree(int dirfd, sb_scan_fn fn, void *ud);
/* One path below rootfd, no link followed on the way: 0, or an errno
 * (ENOENT when it is not there). */
int sb_scan_one(int rootfd, const char *rel, sb_scan_entry *out);

#endif
