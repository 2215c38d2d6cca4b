/* The zygote program's bytes (csrc/zygote/, built first), carried in the
 * module so that nothing needs installing beside it: exec/zygote.c runs
 * them from a memfd. SB_ZYGOTE_PROGRAM is the built program's path (the
 * Makefile's). */
#include <stddef.h>

#ifndef SB_ZYGOTE_PROGRAM
#error "SB_ZYGOTE_PROGRAM: the path of the built zygote program (make builds it first)"
#endif

__asm__(".section .rodata\n"
        ".balign 16\n"
        ".globl sb_zygote_program\n"
        ".hidden sb_zygote_program\n"
        "sb_zygote_program:\n"
        ".incbin \"" SB_ZYGOTE_PROGRAM "\"\n"
        ".globl sb_zygote_program_end\n"
        ".hidden sb_zygote_program_end\n"
        "sb_zygote_program_end:\n"
        ".previous\n");
