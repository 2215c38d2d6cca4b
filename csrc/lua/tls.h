/* A sandbox's TLS authority for secrets over HTTPS (net/tlsca.c), as a
 * part: made at construction when the sandbox has secrets, before the
 * confinement part (whose view shows its bundle) and the net part (whose
 * proxy intercepts with it); released after both. Its bundle file (the
 * host's trusted roots plus the authority's certificate, never its key)
 * lives in a private directory of the host's temporary directory. */
#ifndef SB_LUA_TLS_H
#define SB_LUA_TLS_H

#include "lua/object.h"
#include "net/tlsca.h"

/* Nothing without secrets; -1 with e when the authority or its bundle
 * cannot be made (construction fails closed, saying why). */
int sb_lua_tls_attach(lua_State *L, sb_sandbox *sb, int opts, sb_err *e);
sb_tlsca *sb_lua_tls_ca(const sb_sandbox *sb); /* NULL: none */
const char *sb_lua_tls_bundle(const sb_sandbox *sb); /* its host path, or NULL */
/* The confinement part shows the bundle at `path` to commands. */
void sb_lua_tls_seen_at(sb_sandbox *sb, const char *path);
/* core.tls_bundle(sb): the path commands find the bundle at, or nil. */
void sb_lua_tls_open(lua_State *L);

#endif
