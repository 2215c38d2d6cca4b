/* The confinement part of a sandbox (lua/confine.c): reads the confinement
 * options, sets the layers up once (confine/confine.c; a ContainerSandbox's
 * at first need) and publishes sb.confinement, one field per layer. The
 * command and network parts find it with sb_lua_confine. */
#ifndef SB_LUA_CONFINE_H
#define SB_LUA_CONFINE_H

#include "confine/confine.h"
#include "lua/object.h"
#include "lua/overlay.h"

/* Set up from the normalised options at opts and publish sb.confinement
 * on the userdata at ud; `layers` (or NULL) are an OverlaySandbox's, for
 * the view to mount. 0, or -1 with e: the sandbox must not be made. */
int sb_lua_confine_attach(lua_State *L, sb_sandbox *sb, int ud, int opts, const sb_lua_layers *layers, sb_err *e);
/* Make what the confinement left for first need (before a command or the
 * network helper; the first read of sb.confinement does it too). */
void sb_lua_confine_ready(sb_sandbox *sb);
/* The sandbox's confinement, or NULL (it has no commands). */
sb_confine *sb_lua_confine(const sb_sandbox *sb);
/* An OverlaySandbox's merged root (a new fd), or -1 with *why. */
int sb_lua_confine_merged_fd(const sb_sandbox *sb, const char **why);
/* Its upper layer, when the view made it in memory (a new fd), or -1. */
int sb_lua_confine_upper_fd(const sb_sandbox *sb);

#endif
