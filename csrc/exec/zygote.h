/* The zygote (issue 35): one process per confined sandbox that joined the
 * sandbox's namespaces and took its layers (capabilities, no_new_privs,
 * Landlock, seccomp) once, and forks every command from that state. A
 * command then pays one vfork-style clone, its own limits and its exec;
 * not a setns, a second clone, 40-odd prctl calls and the seccomp filter's
 * installation (about 120 us a process on its own: PERFORMANCE.md).
 *
 * It is a copy of the host (a clone without CLONE_VM, as the sandbox's
 * init is), made by the thread that runs the sandbox's commands, outside
 * the PID namespace and joined to it for its children; each command is its
 * clone with CLONE_PARENT, so the host is the command's parent exactly as
 * with a direct spawn (it reaps it and watches it through a pidfd, and the
 * command dies with the host). Requests come through a mapping shared with
 * it (argv and environment, at addresses valid on both sides) and a socket
 * (the command's fds as SCM_RIGHTS; the answer). Commands cannot reach it:
 * it is outside their PID namespace and holds no fd but its socket. It ends
 * when its socket closes, or with the host.
 *
 * What it does not take (another thread, a request larger than the
 * mapping, a zygote that died) is spawned directly (exec/spawn.c). */
#ifndef SB_EXEC_ZYGOTE_H
#define SB_EXEC_ZYGOTE_H

#include "confine/child.h"
#include "exec/spawn.h"

typedef struct sb_zygote sb_zygote;

/* A zygote holding these layers, made by the calling thread; NULL when it
 * cannot be made (errno; the caller spawns directly). */
sb_zygote *sb_zygote_new(const sb_confine_steps *s);
/* As sb_spawn: 0 the command runs, -1 it failed at res->step (the child
 * already reaped); or SB_ZYGOTE_NOT_TAKEN: spawn it directly. */
#define SB_ZYGOTE_NOT_TAKEN 1
int sb_zygote_spawn(sb_zygote *z, const sb_spawn_req *req, sb_spawn_res *res);
/* Is it still there to take requests? */
bool sb_zygote_alive(const sb_zygote *z);
/* End it (its socket closes, then SIGKILL) and reap it. NULL is fine. */
void sb_zygote_free(sb_zygote *z);

#endif
