/* A reader of the tar stream GNU tar writes (--format=gnu: ustar headers,
 * long names in 'L' entries), fed as it arrives in pieces of any size: how
 * the remote backend fetches many files in one exchange (remote/fs_fetch.c).
 *
 * The stream comes from inside the remote sandbox, so it is untrusted:
 * every header's checksum is checked, sizes are bounded, names are capped,
 * and anything unexpected is EIO, never a read past what arrived. Only
 * regular files are reported; every other entry is skipped. */
#ifndef SB_REMOTE_TAR_H
#define SB_REMOTE_TAR_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/mem.h"

#define SB_TAR_NAME_MAX 8192

typedef enum sb_tar_ev { SB_TAR_BEGIN, SB_TAR_DATA, SB_TAR_END } sb_tar_ev;

/* BEGIN: a regular file's name (NUL-terminated) and size; DATA: its bytes,
 * in pieces; END: it is complete. A code other than SB_OK stops the feed. */
typedef sb_code (*sb_tar_fn)(void *ud, sb_tar_ev ev, const char *p, size_t n, uint64_t size, sb_err *e);

typedef struct sb_tar {
  const sb_mem *m;
  sb_tar_fn fn;
  void *ud;
  int state;
  unsigned char hdr[512];
  size_t hlen;
  uint64_t left; /* bytes of the entry's data still to come */
  size_t pad; /* then this many bytes of padding */
  int kind; /* what the data is: a file's, a long name's, skipped */
  sb_buf longname; /* the next entry's name ('L'), as it arrives */
  bool have_long;
  bool ended; /* the end-of-archive block came */
} sb_tar;

void sb_tar_init(sb_tar *t, const sb_mem *m, sb_tar_fn fn, void *ud);
sb_code sb_tar_feed(sb_tar *t, const char *p, size_t n, sb_err *e);
/* Has the archive ended (its zero block seen)? */
bool sb_tar_done(const sb_tar *t);
void sb_tar_free(sb_tar *t);

#endif
