#include "remote/client.h"
#include "base/clock.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#define DEFAULT_MAX_BODY (16u << 20)

void sb_remote_mask(sb_err *e, const char *secret) {
  /* a secret shorter than 8 bytes is no real key and would mask words */
  size_t sl = secret ? strlen(secret) : 0;
  if (sl < 8 || !e->msg) return;
  char out[sizeof e->dyn];
  size_t o = 0;
  for (const char *p = e->msg; *p && o + 4 < sizeof out;) {
    if (strncmp(p, secret, sl) == 0) {
      memcpy(out + o, "***", 3);
      o += 3, p += sl;
    } else out[o++] = *p++;
  }
  out[o] = '\0';
  memcpy(e->dyn, out, o + 1);
  e->msg = e->dyn;
}

typedef struct body_sink {
  const sb_mem *m;
  sb_buf *b;
  size_t max;
  bool over, oom;
  CURL *c;
  long status;
} body_sink;

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  body_sink *s = ud;
  size_t len = size * n;
  if (!s->status) curl_easy_getinfo(s->c, CURLINFO_RESPONSE_CODE, &s->status);
  /* the cap is for what was asked for; an error's document is kept up to
   * 64 KiB whatever the cap (its message says why) */
  if (s->status < 200 || s->status > 299) {
    if (s->b->len + len > 64u << 10) return len;
  } else if (s->b->len + len > s->max) return s->over = true, 0;
  if (sb_buf_append(s->m, s->b, p, len) != 0) return s->oom = true, 0;
  return len;
}

typedef struct stream_sink {
  sb_connect_reader r;
  sb_connect_msg_fn fn;
  void *ud;
  sb_err *e;
  sb_code code; /* the first failure of the reader or the callback */
  long status;
  CURL *c;
  sb_buf error_body; /* a non-200 reply is a unary-style error document */
  double idle, last; /* the idle limit; when the last byte came */
  bool quiet; /* stopped for going quiet */
} stream_sink;

/* Called by curl about once a second, bytes or not: a stream quiet for its
 * idle limit is stopped (curl's own low-speed check averages over seconds
 * of history, so one early message would hide a dead link for a while). */
static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  (void)dt, (void)dn, (void)ut, (void)un;
  stream_sink *s = ud;
  if (s->idle > 0 && sb_now() - s->last > s->idle) return s->quiet = true, 1;
  return 0;
}

static size_t on_stream(char *p, size_t size, size_t n, void *ud) {
  stream_sink *s = ud;
  size_t len = size * n;
  s->last = sb_now();
  if (!s->status) curl_easy_getinfo(s->c, CURLINFO_RESPONSE_CODE, &s->status);
  if (s->status != 200) {
    if (s->error_body.len + len > 64u << 10) return len; /* enough of an error */
    return sb_buf_append(s->r.m, &s->error_body, p, len) == 0 ? len : 0;
  }
  s->code = sb_connect_feed(&s->r, p, len, s->fn, s->ud, s->e);
  /* the callee may have waited (a reader's backpressure): that time was not
   * the link's to be quiet in */
  s->last = sb_now();
  return s->code == SB_OK ? len : 0;
}

static long ms(double seconds) { return seconds > 0 ? (long)ceil(seconds * 1000) : 0; }

/* ---- the connection pool: a libcurl share of its connection cache --------- */

struct sb_rpool {
  CURLSH *sh;
  pthread_mutex_t mu[CURL_LOCK_DATA_LAST];
};

static void pool_lock(CURL *c, curl_lock_data d, curl_lock_access a, void *ud) {
  (void)c;
  (void)a;
  pthread_mutex_lock(&((sb_rpool *)ud)->mu[d]);
}

static void pool_unlock(CURL *c, curl_lock_data d, void *ud) {
  (void)c;
  pthread_mutex_unlock(&((sb_rpool *)ud)->mu[d]);
}

sb_rpool *sb_rpool_new(void) {
  sb_rpool *p = calloc(1, sizeof *p);
  if (!p || !(p->sh = curl_share_init())) {
    free(p);
    return NULL;
  }
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&p->mu[i], NULL);
  curl_share_setopt(p->sh, CURLSHOPT_LOCKFUNC, pool_lock);
  curl_share_setopt(p->sh, CURLSHOPT_UNLOCKFUNC, pool_unlock);
  curl_share_setopt(p->sh, CURLSHOPT_USERDATA, p);
  curl_share_setopt(p->sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
  curl_share_setopt(p->sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(p->sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  return p;
}

void sb_rpool_free(sb_rpool *p) {
  if (!p) return;
  curl_share_cleanup(p->sh); /* closes the connections it kept */
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&p->mu[i]);
  free(p);
}

/* The easy handle for one request, or NULL (ENOSPC). */
static CURL *prepare(const sb_rlink *t, const sb_rreq *rq, struct curl_slist **hl, bool stream, sb_err *e) {
  CURL *c = curl_easy_init();
  if (!c) return sb_fail(e, SB_ENOSPC, "cannot start an HTTP call (libcurl)"), NULL;
  *hl = NULL;
  for (int i = 0; i < SB_RHEADERS_MAX && rq->headers[i]; i++) {
    struct curl_slist *n = curl_slist_append(*hl, rq->headers[i]);
    if (!n) {
      curl_slist_free_all(*hl);
      curl_easy_cleanup(c);
      return sb_fail_oom(e), NULL;
    }
    *hl = n;
  }
  curl_easy_setopt(c, CURLOPT_URL, rq->url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROXY, ""); /* not from the environment */
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hl);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
  if (rq->body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->blen);
  } else if (strcmp(rq->method, "GET") == 0) {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms(t->connect));
  if (t->pool) curl_easy_setopt(c, CURLOPT_SHARE, t->pool->sh);
  if (!stream) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms(t->call));
  return c;
}

static sb_code transport_fail(CURLcode rc, const sb_rlink *t, const char *what, sb_err *e) {
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    sb_failf(e, SB_EIO, "remote: %s: no answer within %g s", what, t->call);
    e->cause = SB_CAUSE_TIMEOUT;
    return SB_EIO;
  }
  return sb_failf(e, SB_EIO, "remote: %s: %s", what, curl_easy_strerror(rc));
}

sb_code sb_remote_call(const sb_mem *m, const sb_rlink *t, const sb_rreq *rq, sb_rresp *rs, sb_err *e) {
  memset(rs, 0, sizeof *rs);
  struct curl_slist *hl;
  CURL *c = prepare(t, rq, &hl, false, e);
  if (!c) return e->code;
  body_sink s = {.m = m, .b = &rs->body, .max = rq->max_body ? rq->max_body : DEFAULT_MAX_BODY, .c = c};
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &rs->status);
  struct curl_header *h;
  if (rc == CURLE_OK && curl_easy_header(c, "X-Next-Token", 0, CURLH_HEADER, -1, &h) == CURLHE_OK &&
      strlen(h->value) < sizeof rs->next_token)
    snprintf(rs->next_token, sizeof rs->next_token, "%s", h->value);
  curl_easy_cleanup(c);
  curl_slist_free_all(hl);
  if (s.oom) return sb_fail_oom(e);
  if (s.over) return sb_failf(e, SB_EFBIG, "remote: %s: the reply is over %zu bytes", rq->what, s.max);
  if (rc != CURLE_OK) return transport_fail(rc, t, rq->what, e);
  return SB_OK;
}

/* A failure's message never carries the call's secret (a server may echo it). */
static sb_code masked(sb_code c, const sb_rreq *rq, sb_err *e) {
  if (c != SB_OK) sb_remote_mask(e, rq->secret);
  return c;
}

/* A Connect error document in buf, or only the HTTP status. */
static sb_code error_reply(const sb_mem *m, const sb_buf *b, long status, const char *what, sb_err *e) {
  sb_json d;
  sb_err ignore = {0};
  bool parsed = b->len && sb_json_parse(&d, m, b->p, b->len, &ignore) == SB_OK;
  sb_code c = sb_connect_fail(parsed ? &d : NULL, 0, status, what, e);
  if (b->len) sb_json_free(&d);
  return c;
}

sb_code sb_remote_unary(const sb_mem *m, const sb_rlink *t, const sb_rreq *rq, sb_json *reply, sb_err *e) {
  sb_rresp rs;
  memset(reply, 0, sizeof *reply);
  reply->m = m;
  sb_code c = sb_remote_call(m, t, rq, &rs, e);
  if (c == SB_OK && (rs.status < 200 || rs.status > 299)) c = error_reply(m, &rs.body, rs.status, rq->what, e);
  else if (c == SB_OK) {
    c = sb_json_parse(reply, m, rs.body.p ? rs.body.p : "{}", rs.body.len ? rs.body.len : 2, e);
    if (c == SB_EINVAL) c = sb_failf(e, SB_EIO, "remote: %s: the reply is not JSON", rq->what);
  }
  sb_buf_free(m, &rs.body);
  return masked(c, rq, e);
}

/* The end-of-stream message: {"error": {...}} fails the stream. */
typedef struct end_check {
  sb_connect_msg_fn fn;
  void *ud;
  const char *what;
  const sb_mem *m;
} end_check;

static sb_code on_message(void *ud, unsigned flags, const char *msg, size_t len, sb_err *e) {
  end_check *k = ud;
  if (!(flags & SB_CONNECT_FLAG_END)) return k->fn(k->ud, flags, msg, len, e);
  sb_json d;
  sb_err ignore = {0};
  if (sb_json_parse(&d, k->m, msg, len, &ignore) != SB_OK) {
    sb_json_free(&d);
    return sb_failf(e, SB_EIO, "remote: %s: the end of the stream is not JSON", k->what);
  }
  size_t err = sb_json_field(&d, 0, "error");
  sb_code c = err == SB_JSON_NONE ? SB_OK : sb_connect_fail(&d, err, 200, k->what, e);
  sb_json_free(&d);
  return c;
}

sb_code sb_remote_stream(const sb_mem *m, const sb_rlink *t, const sb_rreq *rq, sb_connect_msg_fn fn, void *ud,
                         sb_err *e) {
  sb_buf env = {0};
  if (sb_connect_envelope(m, &env, 0, rq->body ? rq->body : "{}", rq->body ? rq->blen : 2) != 0) return sb_fail_oom(e);
  sb_rreq framed = *rq;
  framed.body = env.p;
  framed.blen = env.len;
  struct curl_slist *hl;
  CURL *c = prepare(t, &framed, &hl, true, e);
  if (!c) {
    sb_buf_free(m, &env);
    return e->code;
  }
  end_check k = {.fn = fn, .ud = ud, .what = rq->what, .m = m};
  stream_sink s = {.fn = on_message, .ud = &k, .e = e, .c = c, .idle = t->idle, .last = sb_now()};
  sb_connect_reader_init(&s.r, m, 0);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &s);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  CURLcode rc = curl_easy_perform(c);
  if (!s.status) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &s.status);
  curl_easy_cleanup(c);
  curl_slist_free_all(hl);
  sb_buf_free(m, &env);
  sb_code code;
  if (s.code != SB_OK) code = s.code; /* the reader or the caller stopped it; e is set */
  else if (s.quiet)
    code = sb_failf(e, SB_EIO, "remote: %s: no data for %g s (the link or the sandbox is gone)", rq->what, t->idle);
  else if (rc != CURLE_OK) code = transport_fail(rc, t, rq->what, e);
  else if (s.status != 200) code = error_reply(m, &s.error_body, s.status, rq->what, e);
  else if ((code = sb_connect_done(&s.r, e)) != SB_OK)
    code = sb_failf(e, SB_EIO, "remote: %s: the connection ended before the stream did", rq->what);
  sb_buf_free(m, &s.error_body);
  sb_connect_reader_free(&s.r);
  return masked(code, rq, e);
}
