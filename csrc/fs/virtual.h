/* VirtualSandbox backend: an in-memory tree, one uthash table of children
 * per directory, every byte from the Lua state's allocator. */
#ifndef SB_VFS_H
#define SB_VFS_H

#include "fs/backend.h"

extern const sb_backend sb_vfs_backend;

/* Attach an empty tree to sb (sb->impl). Returns SB_OK or SB_ENOSPC. */
sb_code sb_vfs_open(sb_sandbox *sb, sb_err *e);

/* Bytes the tree's bookkeeping takes (nodes, names, hash tables) plus
 * file contents: for the memory figure of the benchmarks. */
size_t sb_vfs_footprint(sb_sandbox *sb);

#endif
