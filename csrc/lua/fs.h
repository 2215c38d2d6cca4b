/* The file methods of every sandbox (lua/fs.c). */
#ifndef SB_LUA_FS_H
#define SB_LUA_FS_H

#include "lua/compat.h"

/* read_file, write_file, stat, exists, readdir, mkdir, remove, rename into
 * the table on top. */
void sb_lua_fs_methods(lua_State *L);

#endif
