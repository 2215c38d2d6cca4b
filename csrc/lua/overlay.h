/* The overlay part of an OverlaySandbox (SPEC §11): its state directory
 * (upper and work layers, checkpoints) and the switch of the file
 * operations to the merged view the sandbox's mount namespace shows. The
 * review (changes, diff, commit, discard, checkpoints) is Lua:
 * lua/sandbox/overlay.lua. */
#ifndef SB_LUA_OVERLAY_H
#define SB_LUA_OVERLAY_H

#include <stdbool.h>

#include "lua/object.h"

/* Prepare the state directory from opts (state_dir, or a temporary one)
 * and publish sb.state_dir. Before the confinement part: its mount uses
 * the layers. 0, or -1 with e. */
int sb_lua_overlay_attach(lua_State *L, sb_sandbox *sb, int ud, int opts, sb_err *e);
/* The layers, for the confinement's view; false when sb is no overlay. */
bool sb_lua_overlay_layers(const sb_sandbox *sb, int *upper_fd, int *work_fd, bool *temporary);
/* After the confinement part: point the backend at the kernel's merged
 * view, or where no namespace could hold the mount, switch to the
 * userspace overlay (file operations only); sets sb.overlay_view
 * ("kernel" | "userspace") and sb.overlay_why. 0, or -1 with e. */
int sb_lua_overlay_mount(lua_State *L, sb_sandbox *sb, int ud, int opts, sb_err *e);

#endif
