/* The zygote program's bytes (csrc/zygote/, built first), carried in the
 * module so that nothing needs installing beside it: exec/zygote.c runs
 * them from a memfd. SB_ZYGOTE_PROGRAM is the built program's path (the
 * Makefile's). */
#include "plat/incbin.h"

#ifndef SB_ZYGOTE_PROGRAM
#error "SB_ZYGOTE_PROGRAM: the path of the built zygote program (make builds it first)"
#endif

SB_INCBIN(sb_zygote_program, SB_ZYGOTE_PROGRAM);
