/* What the host and the zygote program (csrc/zygote/main.c) say to each
 * other over the zygote's socket (its fd 3), one SOCK_SEQPACKET message
 * each way at a time (exec/zygote.h). */
#ifndef SB_EXEC_ZYGOTE_PROTO_H
#define SB_EXEC_ZYGOTE_PROTO_H

#include <stdint.h>
#include <sys/types.h>

#include "confine/child.h"
#include "confine/seccomp.h"
#include "exec/spawn.h"

#define SB_ZYGOTE_SOCK 3 /* the zygote's end of the socket, as it starts */
/* The request area shared through a memfd: a command's argv and
 * environment as execve takes them (ARG_MAX's default is a quarter of an
 * 8 MiB stack); its pages cost only once touched. */
#define SB_ZYGOTE_REGION (2u << 20)

/* The first message: the layers to take. Every fd field of `steps` is an
 * index into the fds the message carries (-1: none), the first of which is
 * the request area's memfd; `steps.seccomp` is replaced by `filter`. */
typedef struct sb_zygote_setup {
  sb_confine_steps steps;
  pid_t host; /* the parent it must have (or it ends) */
  uint32_t nfilter;
  struct sock_filter filter[SB_SECCOMP_MAX];
} sb_zygote_setup;

/* The fds of a request, in this order (those present: the mask). */
enum {
  SB_ZFD_STDIN,
  SB_ZFD_STDOUT,
  SB_ZFD_STDERR,
  SB_ZFD_CWD,
  SB_ZFD_CGROUP,
  SB_ZFD_COUNT = SB_ZFD_CGROUP + SB_MAX_CGROUPS
};

/* A request. In the area: argc + envc uint32_t offsets of the strings,
 * then the strings; file, path and cwd_rel are offsets too (0: none). */
typedef struct sb_zygote_req {
  uint32_t mask;
  uint32_t argc, envc;
  uint32_t file, path, cwd_rel;
} sb_zygote_req;

/* Every answer is an sb_child_msg (exec/spawn_child.h): the first says the
 * zygote is ready (step SB_SP_COMMAND) or which layer failed; then one per
 * request, the command's pid or the step it failed at. */

#endif
