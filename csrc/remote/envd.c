#include "remote/envd.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void sb_envd_prepare(const sb_envd *d, sb_envd_headers *h, sb_rreq *rq, int *n) {
  const char *user = d->user ? d->user : "user";
  snprintf(h->token, sizeof h->token, "X-Access-Token: %s", d->token ? d->token : "");
  snprintf(h->id, sizeof h->id, "E2b-Sandbox-Id: %s", d->sandbox_id ? d->sandbox_id : "");
  /* envd picks the user from Basic auth with an empty password */
  char plain[100];
  sb_buf b64 = {0};
  int pl = snprintf(plain, sizeof plain, "%s:", user);
  sb_mem m;
  sb_mem_init_plain(&m);
  if (pl > 0 && pl < (int)sizeof plain && sb_b64_encode(&m, &b64, plain, (size_t)pl) && b64.len < 120)
    snprintf(h->auth, sizeof h->auth, "Authorization: Basic %.*s", (int)b64.len, b64.p);
  else snprintf(h->auth, sizeof h->auth, "Authorization: Basic dXNlcjo=");
  sb_buf_free(&m, &b64);
  rq->headers[(*n)++] = h->token;
  rq->headers[(*n)++] = h->id;
  rq->headers[(*n)++] = "E2b-Sandbox-Port: 49983";
  rq->headers[(*n)++] = h->auth;
  rq->secret = d->token;
}

unsigned sb_envd_version(const char *s) {
  unsigned v[3] = {0, 0, 0};
  int used = 0;
  if (!s || sscanf(s, "%3u.%3u.%3u%n", &v[0], &v[1], &v[2], &used) != 3 || v[0] > 999 || v[1] > 999 || v[2] > 999)
    return 0;
  if (s[used] && s[used] != '-' && s[used] != '+') return 0; /* 0.5.7-rc1, 0.5.7+build */
  return SB_ENVD_VERSION(v[0], v[1], v[2]);
}

sb_code sb_envd_url(const sb_envd *d, const char *service, const char *method, char *url, size_t cap, sb_err *e) {
  if (snprintf(url, cap, "%s/%s/%s", d->url, service, method) >= (int)cap)
    return sb_fail(e, SB_EINVAL, "envd's URL is too long");
  return SB_OK;
}

sb_code sb_envd_call(const sb_mem *m, const sb_envd *d, const char *service, const char *method, const sb_jw *body,
                     sb_json *reply, sb_err *e) {
  char url[1024];
  memset(reply, 0, sizeof *reply);
  reply->m = m;
  sb_code c = sb_envd_url(d, service, method, url, sizeof url, e);
  if (c != SB_OK) return c;
  sb_envd_headers h;
  sb_rreq rq = {.method = "POST", .url = url, .what = method, .body = body->b.p, .blen = body->b.len};
  int n = 0;
  sb_envd_prepare(d, &h, &rq, &n);
  rq.headers[n++] = "Content-Type: application/json";
  rq.headers[n++] = "Connect-Protocol-Version: 1";
  return sb_remote_unary(m, &d->t, &rq, reply, e);
}

/* {"path": p} or {"source": a, "destination": b}, then the call. */
static sb_code path_call(const sb_mem *m, const sb_envd *d, const char *method, const char *k1, const char *v1,
                         const char *k2, const char *v2, int depth, sb_json *reply, sb_err *e) {
  sb_jw w;
  sb_jw_init(&w, m);
  sb_jw_begin_obj(&w);
  sb_jw_key(&w, k1);
  sb_jw_cstr(&w, v1);
  if (k2) {
    sb_jw_key(&w, k2);
    sb_jw_cstr(&w, v2);
  }
  if (depth > 0) {
    sb_jw_key(&w, "depth");
    sb_jw_int(&w, depth);
  }
  sb_jw_end(&w);
  memset(reply, 0, sizeof *reply);
  reply->m = m;
  sb_code c = sb_jw_finish(&w, e);
  if (c == SB_EINVAL) return sb_fail(e, SB_EINVAL, "a remote path must be UTF-8");
  if (c != SB_OK) return c;
  c = sb_envd_call(m, d, "filesystem.Filesystem", method, &w, reply, e);
  sb_buf_free(m, &w.b);
  return c;
}

bool sb_rfc3339(const char *s, size_t n, double *out) {
  int Y, M, D, h, mi, sec, used = 0;
  char buf[64];
  if (n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (sscanf(buf, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &mi, &sec, &used) != 6 || used != 19) return false;
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || mi > 59 || sec > 60) return false;
  struct tm tm = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h, .tm_min = mi, .tm_sec = sec};
  double t = (double)timegm(&tm);
  const char *p = buf + 19;
  if (*p == '.') {
    double scale = 0.1;
    for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10) t += (*p - '0') * scale;
  }
  if (*p == 'Z' || *p == 'z') p++;
  else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
    int oh = atoi(p + 1), om = atoi(p + 4);
    double off = oh * 3600.0 + om * 60.0;
    t += *p == '+' ? -off : off;
    p += 6;
  } else return false;
  if (*p) return false;
  *out = t;
  return true;
}

/* The EntryInfo at token i of j. */
static bool entry_from(const sb_json *j, size_t i, sb_rentry *en) {
  memset(en, 0, sizeof *en);
  en->name = sb_json_str(j, sb_json_field(j, i, "name"), &en->nlen);
  en->path = sb_json_str(j, sb_json_field(j, i, "path"), &en->plen);
  if (!en->name || !en->path) return false;
  en->resolved = sb_json_str(j, sb_json_field(j, i, "symlinkTarget"), &en->reslen);
  const char *type = sb_json_str(j, sb_json_field(j, i, "type"), NULL);
  en->type = !type                               ? SB_ROTHER
      : strcmp(type, "FILE_TYPE_FILE") == 0      ? SB_RFILE
      : strcmp(type, "FILE_TYPE_DIRECTORY") == 0 ? SB_RDIR
      : strcmp(type, "FILE_TYPE_SYMLINK") == 0   ? SB_RLINK
                                                 : SB_ROTHER;
  /* envd gives a link its target's type (none when dangling) and a
   * symlinkTarget (from 0.5.4 even when dangling); its permissions are the
   * Lstat's in Go's words, "L" first for a link (shared/pkg/filesystem/
   * entry.go, GetEntryInfo): any of the three marks a link */
  const char *perm = sb_json_str(j, sb_json_field(j, i, "permissions"), NULL);
  if ((perm && perm[0] == 'L') || en->resolved) en->type = SB_RLINK;
  int64_t v;
  if (sb_json_int(j, sb_json_field(j, i, "size"), &v) && v >= 0) en->size = (uint64_t)v;
  if (sb_json_int(j, sb_json_field(j, i, "mode"), &v) && v >= 0) en->mode = (uint32_t)v;
  if (en->type == SB_RLINK) en->mode = 0777; /* a link's own, as lstat says (envd gives the target's) */
  size_t tl;
  const char *mt = sb_json_str(j, sb_json_field(j, i, "modifiedTime"), &tl);
  if (mt) (void)sb_rfc3339(mt, tl, &en->mtime);
  return true;
}

sb_code sb_envd_stat(const sb_mem *m, const sb_envd *d, const char *path, sb_rentry *out, sb_json *hold, sb_err *e) {
  sb_code c = path_call(m, d, "Stat", "path", path, NULL, NULL, 0, hold, e);
  if (c == SB_OK && !entry_from(hold, sb_json_field(hold, 0, "entry"), out))
    c = sb_fail(e, SB_EIO, "remote: Stat: the reply has no entry");
  return c;
}

sb_code sb_envd_list(const sb_mem *m, const sb_envd *d, const char *path, int depth, sb_rentry_fn fn, void *ud,
                     sb_err *e) {
  sb_json j;
  sb_code c = path_call(m, d, "ListDir", "path", path, NULL, NULL, depth < 1 ? 1 : depth, &j, e);
  size_t arr = c == SB_OK ? sb_json_field(&j, 0, "entries") : SB_JSON_NONE;
  if (c == SB_OK && arr != SB_JSON_NONE && sb_json_is(&j, arr, SB_JARR)) {
    for (size_t k = 0, i = arr + 1; c == SB_OK && k < j.t[arr].len; k++, i = j.t[i].next) {
      sb_rentry en;
      c = entry_from(&j, i, &en) ? fn(ud, &en, e) : sb_fail(e, SB_EIO, "remote: ListDir: an entry without a name");
    }
  }
  sb_json_free(&j);
  return c;
}

static sb_code simple(const sb_mem *m, const sb_envd *d, const char *method, const char *k1, const char *v1,
                      const char *k2, const char *v2, sb_err *e) {
  sb_json j;
  sb_code c = path_call(m, d, method, k1, v1, k2, v2, 0, &j, e);
  sb_json_free(&j);
  return c;
}

sb_code sb_envd_mkdir(const sb_mem *m, const sb_envd *d, const char *path, sb_err *e) {
  return simple(m, d, "MakeDir", "path", path, NULL, NULL, e);
}
sb_code sb_envd_move(const sb_mem *m, const sb_envd *d, const char *from, const char *to, sb_err *e) {
  return simple(m, d, "Move", "source", from, "destination", to, e);
}
sb_code sb_envd_remove(const sb_mem *m, const sb_envd *d, const char *path, sb_err *e) {
  return simple(m, d, "Remove", "path", path, NULL, NULL, e);
}

/* /files?path=<escaped>&username=<user> */
static sb_code files_url(const sb_envd *d, const char *path, char *url, size_t cap, sb_err *e) {
  char *ep = curl_easy_escape(NULL, path, 0);
  char *eu = curl_easy_escape(NULL, d->user ? d->user : "user", 0);
  int n = ep && eu ? snprintf(url, cap, "%s/files?path=%s&username=%s", d->url, ep, eu) : -1;
  curl_free(ep);
  curl_free(eu);
  if (n < 0) return sb_fail_oom(e);
  if ((size_t)n >= cap) return sb_fail(e, SB_ENAMETOOLONG, "the remote path is too long for a URL");
  return SB_OK;
}

/* A /files reply that is not 2xx: the JSON error's message, the status's code. */
static sb_code files_fail(const sb_mem *m, const sb_rresp *rs, const char *what, const sb_envd *d, sb_err *e) {
  sb_json j;
  sb_err ignore = {0};
  bool parsed = rs->body.len && sb_json_parse(&j, m, rs->body.p, rs->body.len, &ignore) == SB_OK;
  const char *msg = parsed ? sb_json_str(&j, sb_json_field(&j, 0, "message"), NULL) : NULL;
  sb_code c = sb_connect_http_code(rs->status);
  if (rs->status == 400 && msg && strstr(msg, "is a directory")) c = SB_EISDIR;
  if (msg && *msg) sb_failf(e, c, "remote: %s: %.300s", what, msg);
  else sb_failf(e, c, "remote: %s: HTTP status %ld", what, rs->status);
  if (rs->body.len) sb_json_free(&j);
  sb_remote_mask(e, d->token);
  return c;
}

sb_code sb_envd_read(const sb_mem *m, const sb_envd *d, const char *path, size_t max, sb_buf *out, sb_err *e) {
  char url[8192];
  sb_code c = files_url(d, path, url, sizeof url, e);
  if (c != SB_OK) return c;
  sb_envd_headers h;
  sb_rreq rq = {.method = "GET", .url = url, .what = "read file", .max_body = max ? max : 1};
  int n = 0;
  sb_envd_prepare(d, &h, &rq, &n);
  sb_rresp rs;
  c = sb_remote_call(m, &d->t, &rq, &rs, e);
  if (c == SB_OK && rs.status != 200) c = files_fail(m, &rs, "read file", d, e);
  if (c == SB_OK) {
    *out = rs.body;
    return SB_OK;
  }
  sb_buf_free(m, &rs.body);
  return c;
}

/* The bytes as envd before 0.5.7 takes them (api/upload.go: a
 * multipart/form-data part named "file"), with a boundary the bytes lack. */
static sb_code multipart(const sb_mem *m, const char *data, size_t len, sb_buf *body, char *type, size_t tcap,
                         sb_err *e) {
  char bnd[48];
  for (unsigned k = 0;; k++) {
    snprintf(bnd, sizeof bnd, "sandbox-upload-%08lx%08x", (unsigned long)random(), k);
    if (!len || !memmem(data, len, bnd, strlen(bnd))) break;
  }
  snprintf(type, tcap, "Content-Type: multipart/form-data; boundary=%s", bnd);
  char head[200];
  int hl = snprintf(head, sizeof head,
                    "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"file\"\r\n"
                    "Content-Type: application/octet-stream\r\n\r\n",
                    bnd);
  char tail[64];
  int tl = snprintf(tail, sizeof tail, "\r\n--%s--\r\n", bnd);
  if (sb_buf_append(m, body, head, (size_t)hl) != 0 || (len && sb_buf_append(m, body, data, len) != 0) ||
      sb_buf_append(m, body, tail, (size_t)tl) != 0)
    return sb_fail_oom(e);
  return SB_OK;
}

sb_code sb_envd_write(const sb_mem *m, const sb_envd *d, const char *path, const char *data, size_t len, sb_err *e) {
  char url[8192];
  sb_code c = files_url(d, path, url, sizeof url, e);
  if (c != SB_OK) return c;
  sb_envd_headers h;
  /* an empty body still has to be sent as one */
  sb_rreq rq = {.method = "POST", .url = url, .what = "write file", .body = data ? data : "", .blen = len};
  int n = 0;
  sb_envd_prepare(d, &h, &rq, &n);
  sb_buf mp = {0};
  char type[120];
  if (sb_envd_has(d, SB_ENVD_RAW_UPLOAD)) {
    rq.headers[n++] = "Content-Type: application/octet-stream";
  } else {
    if ((c = multipart(m, data, len, &mp, type, sizeof type, e)) != SB_OK) {
      sb_buf_free(m, &mp);
      return c;
    }
    rq.body = mp.p;
    rq.blen = mp.len;
    rq.headers[n++] = type;
  }
  sb_rresp rs;
  c = sb_remote_call(m, &d->t, &rq, &rs, e);
  sb_buf_free(m, &mp);
  if (c == SB_OK && (rs.status < 200 || rs.status > 299)) c = files_fail(m, &rs, "write file", d, e);
  sb_buf_free(m, &rs.body);
  return c;
}
