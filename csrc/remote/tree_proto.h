/* What a remote command's keeper says, shared by the runner (remote/tree.h)
 * and the engine-side helper program (csrc/rtree/main.c): the mark every
 * process of a command inherits, and the first byte of stdout that tells
 * the runner how the start went. Plain constants: the helper is built
 * apart, with nothing of the module. */
#ifndef SB_REMOTE_TREE_PROTO_H
#define SB_REMOTE_TREE_PROTO_H

#define SB_RTREE_VAR "AGENT_SANDBOX_TREE"
#define SB_RTREE_GO '\001' /* the command runs */
#define SB_RTREE_ENOENT '\002' /* not found: nothing ran */
#define SB_RTREE_EACCES '\003' /* found, not executable: nothing ran */
#define SB_RTREE_NOTREE '\004' /* check: no /proc (or no grep -z for the sh wrapper), so no tree kill: nothing ran */
#define SB_RTREE_ALONE '\005' /* the command runs, under a watchdog of its own: the guard given is gone */

/* The helper's answer to `check`, one line: a runner takes a helper only
 * when it answers exactly this (the program and its protocol's version). */
#define SB_RHELPER_HELLO "sandbox-rtree 1"
/* Where it lives on the engine: ${TMPDIR:-/tmp}/<DIR_PREFIX><mark>/<NAME>. */
#define SB_RHELPER_DIR_PREFIX "agent-sandbox-rtree."
#define SB_RHELPER_NAME "sandbox-rtree"

#endif
