/* The engine-side helper (csrc/rtree/main.c): a static program a remote
 * runner uploads once per sandbox, then starts each command under in
 * place of the sh wrapper (remote/tree.h): one exec of a small image
 * instead of a second shell and its script, and a tree that is the
 * command's descendants (the helper is their subreaper) as well as what
 * carries the mark.
 *
 * Uploaded by one envd Start that writes it with sh's printf (no stdin,
 * no file call: envd 0.5.1 takes it, and the file lands where the
 * engine's processes see it), then asks it `check`. Where that fails — no
 * helper carried by this build (no musl-gcc, not Linux), another
 * architecture on the engine, a /tmp that takes no programs — commands
 * keep the sh wrapper. A helper a command removed is noticed at the next
 * start (nothing ran: the command is started again under the wrapper)
 * and uploaded again. */
#ifndef SB_REMOTE_HELPER_H
#define SB_REMOTE_HELPER_H

#include "remote/process.h"

typedef struct sb_rhelper {
  char path[300]; /* absolute, on the engine */
  bool live; /* (a plain struct: copied whole) */
} sb_rhelper;

/* The program's bytes this build carries (remote/rtree_program.c); 0: none. */
size_t sb_rhelper_program(const unsigned char **bytes);
/* Upload and check it (one envd Start, at most limit seconds); h->live on success. */
sb_code sb_rhelper_install(const sb_mem *m, const sb_envd *d, sb_rhelper *h, double limit, sb_err *e);
/* Remove a live one's file and directory. */
sb_code sb_rhelper_remove(const sb_mem *m, const sb_envd *d, sb_rhelper *h, double limit, sb_err *e);

#endif
