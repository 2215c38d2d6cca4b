/* The init program's bytes (csrc/init/, built first), carried in the
 * module so that nothing needs installing beside it: confine/ns.c runs
 * them from a memfd. SB_INIT_PROGRAM is the built program's path (the
 * Makefile's). */
#include "plat/incbin.h"

#ifndef SB_INIT_PROGRAM
#error "SB_INIT_PROGRAM: the path of the built init program (make builds it first)"
#endif

SB_INCBIN(sb_init_program, SB_INIT_PROGRAM);
