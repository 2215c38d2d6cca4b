/* The engine-side helper's bytes (csrc/rtree/, built first with musl-gcc),
 * carried in the module so that nothing needs installing beside it:
 * remote/helper.c uploads them. SB_RTREE_PROGRAM is the built program's
 * path (the Makefile's); a build without it carries none, and remote
 * commands run under the sh wrapper. */
#include "remote/helper.h"

#ifdef SB_RTREE_PROGRAM
__asm__(".section .rodata\n"
        ".balign 16\n"
        ".globl sb_rtree_program\n"
        ".hidden sb_rtree_program\n"
        "sb_rtree_program:\n"
        ".incbin \"" SB_RTREE_PROGRAM "\"\n"
        ".globl sb_rtree_program_end\n"
        ".hidden sb_rtree_program_end\n"
        "sb_rtree_program_end:\n"
        ".previous\n");
extern const unsigned char sb_rtree_program[], sb_rtree_program_end[];

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
