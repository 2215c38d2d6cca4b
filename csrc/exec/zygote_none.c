/* Without Linux's layers there is nothing to take once: every command is
 * spawned directly (exec/zygote.h). */
#include <errno.h>

#include "exec/zygote.h"

sb_zygote *sb_zygote_new(const sb_confine_steps *s) {
  (void)s;
  errno = ENOTSUP;
  return NULL;
}

int sb_zygote_spawn(sb_zygote *z, const sb_spawn_req *req, sb_spawn_res *res) {
  (void)z;
  (void)req;
  (void)res;
  return SB_ZYGOTE_NOT_TAKEN;
}

bool sb_zygote_alive(const sb_zygote *z) {
  (void)z;
  return false;
}

void sb_zygote_free(sb_zygote *z) { (void)z; }
