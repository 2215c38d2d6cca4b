/* The file-system part of a sandbox: set-up and release. */
#include "fs/backend.h"

#include <string.h>

void sb_fs_init(sb_fs *fs, const sb_backend *be, const sb_mem *m, const sb_policy *pol) {
  memset(fs, 0, sizeof *fs);
  fs->be = be;
  fs->mem = *m;
  fs->policy = pol;
  fs->quota.max_bytes = fs->quota.max_nodes = SB_UNLIMITED;
}

void sb_fs_close(sb_fs *fs) {
  if (fs->be && fs->be->close && fs->impl) fs->be->close(fs);
  sb_buf_free(&fs->mem, &fs->scratch);
  sb_buf_free(&fs->mem, &fs->search_buf);
  fs->closed = true;
}
