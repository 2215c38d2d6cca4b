/* A file's bytes in the module's read-only data, between the hidden
 * symbols sym and sym_end: the programs the module runs (the zygote, the
 * init, the remote helper) travel inside it, so nothing is installed
 * beside it. */
#ifndef SB_PLAT_INCBIN_H
#define SB_PLAT_INCBIN_H

#define SB_INCBIN(sym, path) \
  __asm__(".section .rodata\n" \
          ".balign 16\n" \
          ".globl " #sym "\n" \
          ".hidden " #sym "\n" #sym ":\n" \
          ".incbin \"" path "\"\n" \
          ".globl " #sym "_end\n" \
          ".hidden " #sym "_end\n" #sym "_end:\n" \
          ".previous\n"); \
  extern const unsigned char sym[], sym##_end[]

#endif
