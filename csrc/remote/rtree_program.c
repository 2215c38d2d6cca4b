/* The engine-side helper's bytes (csrc/rtree/, built first with musl-gcc),
 * carried in the module so that nothing needs installing beside it:
 * remote/helper.c uploads them. SB_RTREE_PROGRAM is the built program's
 * path (the Makefile's); a build without it carries none, and remote
 * commands run under the sh wrapper. */
#include "plat/incbin.h"
#include "remote/helper.h"

#ifdef SB_RTREE_PROGRAM
SB_INCBIN(sb_rtree_program, SB_RTREE_PROGRAM);

size_t sb_rhelper_program(const unsigned char **bytes) {
  *bytes = sb_rtree_program;
  return (size_t)(sb_rtree_program_end - sb_rtree_program);
}
#else
size_t sb_rhelper_program(const unsigned char **bytes) {
  *bytes = NULL;
  return 0;
}
#endif
