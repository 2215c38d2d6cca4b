/* The C module sandbox.core (lua/module.c): constructors, helpers for the
 * Lua layer, and the method table of every sandbox. Its entry point,
 * luaopen_sandbox_core, is declared in the public header (sandbox.h). */
#ifndef SB_LUA_MODULE_H
#define SB_LUA_MODULE_H

#include "lua/compat.h"

/* read_roots a container may have (each holds an fd). */
#define SB_MAX_READ_ROOTS 64

#endif
