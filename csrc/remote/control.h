/* E2B's REST control plane (SPEC §15, reference/remote.md): create a
 * sandbox, reattach to one (connect, which also resumes a paused one), keep
 * it alive, kill it, list them. The engine is any host that speaks the API
 * (E2B cloud, self-hosted E2B, CubeSandbox): its URL is configuration, and
 * envd's URL is derived from the sandbox's id and domain unless given.
 *
 * The API key and the sandbox's access token are secrets: they travel only
 * in headers, and a message from the engine that repeats one has it masked
 * before it reaches an error (sb_rreq.secret). */
#ifndef SB_REMOTE_CONTROL_H
#define SB_REMOTE_CONTROL_H

#include "remote/client.h"

typedef struct sb_remote_engine {
  const char *api_url; /* e.g. https://api.e2b.app, http://127.0.0.1:3000 */
  const char *api_key;
  const char *envd_url; /* NULL: https://49983-<id>.<domain> */
  const char *domain; /* NULL: the one the engine names, else e2b.app */
  sb_rlink t;
} sb_remote_engine;

typedef struct sb_remote_box {
  char id[128];
  char template_id[128];
  char envd_version[32];
  char token[256]; /* envd's access token (secret) */
  char envd_url[600];
  char state[32]; /* "running", "paused", ... when the engine says */
} sb_remote_box;

typedef struct sb_remote_spec {
  const char *template_id;
  int timeout; /* seconds the engine keeps it alive (its TTL) */
  const char *const *metadata; /* key, value, ..., NULL */
  const char *const *env; /* name, value, ..., NULL */
  int internet; /* -1 the engine's default, 0 no, 1 yes */
} sb_remote_spec;

sb_code sb_remote_create(const sb_mem *m, const sb_remote_engine *g, const sb_remote_spec *s, sb_remote_box *out,
                         sb_err *e);
/* Reattach by id (POST /sandboxes/{id}/connect with the TTL to keep). */
sb_code sb_remote_connect(const sb_mem *m, const sb_remote_engine *g, const char *id, int timeout, sb_remote_box *out,
                          sb_err *e);
sb_code sb_remote_set_timeout(const sb_mem *m, const sb_remote_engine *g, const char *id, int timeout, sb_err *e);
/* ENOENT when the engine no longer has it. */
sb_code sb_remote_kill(const sb_mem *m, const sb_remote_engine *g, const char *id, sb_err *e);

/* Every sandbox the engine lists for this key, to fn (which may stop the
 * walk by returning anything but SB_OK). */
typedef sb_code (*sb_remote_box_fn)(void *ud, const sb_remote_box *b, sb_err *e);
sb_code sb_remote_list(const sb_mem *m, const sb_remote_engine *g, sb_remote_box_fn fn, void *ud, sb_err *e);

#endif
