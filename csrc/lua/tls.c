#include "lua/tls.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "lua/net.h"

typedef struct tls_part {
  sb_tlsca *ca;
  char dir[PATH_MAX - 32], bundle[PATH_MAX];
  const char *seen; /* where commands find it: the view's path, or the host's */
} tls_part;

static void tls_close(lua_State *L, sb_sandbox *sb, void *state);
static const sb_part_class tls_part_class = {"tls", tls_close};

static void tls_close(lua_State *L, sb_sandbox *sb, void *state) {
  (void)L;
  tls_part *t = state;
  if (t->bundle[0]) unlink(t->bundle);
  if (t->dir[0]) rmdir(t->dir);
  sb_tlsca_free(t->ca);
  sb_free(&sb->fs.mem, t, sizeof *t);
}

/* the hosts the authority may vouch for: the secrets' */
typedef struct hosts {
  sb_hostrule v[64];
  size_t n;
} hosts;

static bool add_host(void *ud, size_t i, const sb_hostrule *rule, const char *header, size_t hlen, const char *value,
                     size_t vlen) {
  (void)i, (void)header, (void)hlen, (void)value, (void)vlen;
  hosts *h = ud;
  if (h->n == sizeof h->v / sizeof *h->v) return false;
  h->v[h->n++] = *rule;
  return true;
}

int sb_lua_tls_attach(lua_State *L, sb_sandbox *sb, int opts, sb_err *e) {
  opts = lua_absindex(L, opts);
  hosts h = {.n = 0};
  long total = sb_lua_net_secrets(L, opts, add_host, &h, e);
  if (total <= 0) return (int)total; /* none, or a bad one (-1, e set) */
  tls_part *t = sb_malloc(&sb->fs.mem, sizeof *t);
  if (!t) luaL_error(L, "not enough memory");
  memset(t, 0, sizeof *t);
  sb_part_add(L, sb, &tls_part_class, t); /* from here the sandbox's release frees it */
  lua_getfield(L, opts, "upstream_ca");
  const char *upstream = lua_tostring(L, -1);
  char why[400];
  /* more secrets than the list holds: no constraints rather than too few hosts */
  t->ca = sb_tlsca_new(upstream, h.v, h.n == (size_t)total ? h.n : 0, why, sizeof why);
  lua_pop(L, 1);
  if (!t->ca) {
    sb_failf(e, SB_EIO, "secrets: the proxy's TLS authority: %s", why);
    return -1;
  }
  const char *tmp = getenv("TMPDIR");
  int dn = snprintf(t->dir, sizeof t->dir, "%s/sandbox-ca.XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
  if (dn < 0 || (size_t)dn >= sizeof t->dir) snprintf(t->dir, sizeof t->dir, "/tmp/sandbox-ca.XXXXXX");
  if (!mkdtemp(t->dir)) {
    int err = errno;
    t->dir[0] = '\0';
    sb_failf(e, SB_EIO, "secrets: cannot make a directory for the proxy's CA bundle: %s", strerror(err));
    return -1;
  }
  chmod(t->dir, 0755); /* commands under another user (user = {...}) read it too */
  snprintf(t->bundle, sizeof t->bundle, "%s/ca-bundle.pem", t->dir);
  int err = sb_tlsca_write_bundle(t->ca, t->bundle);
  if (err) {
    t->bundle[0] = '\0';
    sb_failf(e, SB_EIO, "secrets: cannot write the proxy's CA bundle: %s", strerror(err));
    return -1;
  }
  t->seen = t->bundle;
  return 0;
}

static tls_part *part(const sb_sandbox *sb) { return sb_part_get(sb, &tls_part_class); }

sb_tlsca *sb_lua_tls_ca(const sb_sandbox *sb) {
  tls_part *t = part(sb);
  return t ? t->ca : NULL;
}

const char *sb_lua_tls_bundle(const sb_sandbox *sb) {
  tls_part *t = part(sb);
  return t && t->bundle[0] ? t->bundle : NULL;
}

void sb_lua_tls_seen_at(sb_sandbox *sb, const char *path) {
  tls_part *t = part(sb);
  if (t) t->seen = path;
}

static int l_tls_bundle(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  tls_part *t = part(sb);
  if (t && t->bundle[0]) lua_pushstring(L, t->seen);
  else lua_pushnil(L);
  return 1;
}

void sb_lua_tls_open(lua_State *L) {
  static const luaL_Reg fns[] = {{"tls_bundle", l_tls_bundle}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
