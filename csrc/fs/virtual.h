/* The virtual backend: an in-memory tree, one uthash table of children per
 * directory, every byte from the Lua state's allocator. */
#ifndef SB_FS_VIRTUAL_H
#define SB_FS_VIRTUAL_H

#include "fs/backend.h"

extern const sb_backend sb_virtual_backend;

/* Attach an empty tree to fs (fs->impl). Returns SB_OK or SB_ENOSPC. */
sb_code sb_virtual_open(sb_fs *fs, sb_err *e);

/* Bytes the tree's bookkeeping takes (nodes, names, hash tables) plus
 * file contents: for the memory figure of the benchmarks. */
size_t sb_virtual_footprint(sb_fs *fs);

#endif
