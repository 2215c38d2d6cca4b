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
/* An overlay's layers, which the confinement's view mounts. */
typedef struct sb_lua_layers {
  int upper_fd, work_fd; /* borrowed: the overlay part keeps them */
  bool temporary; /* a state of this sandbox alone (its upper layer may live in memory) */
} sb_lua_layers;
/* The layers, for the confinement's view; false when sb is no overlay. */
bool sb_lua_overlay_layers(const sb_sandbox *sb, sb_lua_layers *out);
/* After the confinement part (lua/module.c hands over what it made): point
 * the backend at the kernel's merged view `merged_fd` (taken), or where no
 * namespace could hold the mount (merged_fd < 0, `why`), switch to the
 * userspace overlay (file operations only); `mem_upper_fd` (taken, or -1)
 * is an upper layer the view made in memory. Sets sb.overlay_view
 * ("kernel" | "userspace") and sb.overlay_why. 0, or -1 with e. */
int sb_lua_overlay_mount(lua_State *L, sb_sandbox *sb, int ud, int opts, int merged_fd, const char *why,
                         int mem_upper_fd, sb_err *e);

#endif
