/* envd's file operations (SPEC §15, reference/remote.md): GET/POST /files
 * for contents, the Filesystem service for the rest. Paths are absolute
 * paths inside the remote sandbox; the front door has already turned an
 * agent's path into one beneath the sandbox's root before these are called.
 * Every call carries the access token (masked in any message), the sandbox
 * id (E2B's shared domains route by it) and the user. */
#ifndef SB_REMOTE_ENVD_H
#define SB_REMOTE_ENVD_H

#include <stdint.h>

#include "remote/client.h"

typedef struct sb_envd {
  const char *url; /* https://49983-<id>.<domain>, or the test peer's */
  const char *token; /* envdAccessToken (secret) */
  const char *sandbox_id;
  const char *user; /* NULL: "user", E2B templates' default */
  unsigned version; /* the engine's envdVersion (sb_envd_version); 0: not said, taken as current */
  sb_rlink t;
} sb_envd;

/* What an older envd lacks, by the version that brought it (infra's
 * history): raw application/octet-stream uploads (92011c8af, 0.5.7; before,
 * multipart only) and CloseStdin (01da054ac, 0.5.2). */
#define SB_ENVD_VERSION(a, b, c) ((a)*1000000u + (b)*1000u + (c))
#define SB_ENVD_RAW_UPLOAD SB_ENVD_VERSION(0, 5, 7)
#define SB_ENVD_CLOSE_STDIN SB_ENVD_VERSION(0, 5, 2)
/* "0.5.7" as SB_ENVD_VERSION(0, 5, 7); 0 for anything else. */
unsigned sb_envd_version(const char *s);
static inline bool sb_envd_has(const sb_envd *d, unsigned since) { return d->version == 0 || d->version >= since; }

/* The headers every envd call carries (token, sandbox id, port, user), with
 * their storage: sb_envd_prepare puts them in rq->headers from *n on, and
 * the token as rq's secret. */
typedef struct sb_envd_headers {
  char token[320], id[200], auth[160];
} sb_envd_headers;
void sb_envd_prepare(const sb_envd *d, sb_envd_headers *h, sb_rreq *rq, int *n);
/* <url>/<service>/<method> */
sb_code sb_envd_url(const sb_envd *d, const char *service, const char *method, char *url, size_t cap, sb_err *e);
/* A unary call of a service ("filesystem.Filesystem", "process.Process")
 * with the JSON in body->b; the reply in *reply (free it in every case). */
sb_code sb_envd_call(const sb_mem *m, const sb_envd *d, const char *service, const char *method, const sb_jw *body,
                     sb_json *reply, sb_err *e);

typedef enum sb_rtype { SB_RFILE = 'f', SB_RDIR = 'd', SB_RLINK = 'l', SB_ROTHER = '?' } sb_rtype;

/* One entry as envd describes it; the strings point into the reply and live
 * until the call returns (a list) or until sb_json_free of the holder. A
 * link is SB_RLINK with its Lstat size (its text's length); envd never says
 * its text: `resolved` is where envd's EvalSymlinks took it (or NULL). */
typedef struct sb_rentry {
  const char *name, *path, *resolved;
  size_t nlen, plen, reslen;
  sb_rtype type;
  uint64_t size;
  uint32_t mode;
  double mtime; /* seconds since the epoch */
} sb_rentry;

/* At most max bytes (EFBIG beyond; EISDIR for a directory, ENOENT). */
sb_code sb_envd_read(const sb_mem *m, const sb_envd *d, const char *path, size_t max, sb_buf *out, sb_err *e);
/* Replace the file's contents; envd makes missing parents. */
sb_code sb_envd_write(const sb_mem *m, const sb_envd *d, const char *path, const char *data, size_t len, sb_err *e);
/* The entry itself (a link is described, not followed). The entry's strings
 * live in *hold until sb_json_free(hold). */
sb_code sb_envd_stat(const sb_mem *m, const sb_envd *d, const char *path, sb_rentry *out, sb_json *hold, sb_err *e);
typedef sb_code (*sb_rentry_fn)(void *ud, const sb_rentry *en, sb_err *e);
/* Entries beneath path, depth levels down (1: the directory's own). */
sb_code sb_envd_list(const sb_mem *m, const sb_envd *d, const char *path, int depth, sb_rentry_fn fn, void *ud,
                     sb_err *e);
/* EEXIST when something is there; envd makes missing parents. */
sb_code sb_envd_mkdir(const sb_mem *m, const sb_envd *d, const char *path, sb_err *e);
sb_code sb_envd_move(const sb_mem *m, const sb_envd *d, const char *from, const char *to, sb_err *e);
/* Whatever is there, directories with everything in them (envd's Remove). */
sb_code sb_envd_remove(const sb_mem *m, const sb_envd *d, const char *path, sb_err *e);

/* Seconds since the epoch of an RFC 3339 time ("2026-08-01T12:00:00.5Z",
 * offsets too), or false. */
bool sb_rfc3339(const char *s, size_t n, double *out);

#endif
