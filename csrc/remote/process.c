#include "remote/process.h"
#include "base/clock.h"

#include <stdio.h>
#include <string.h>

#define SERVICE "process.Process"

/* An event message of a Start or Connect stream, decoded for the caller. */
typedef struct follow {
  const sb_mem *m;
  sb_rproc_fn fn;
  void *ud;
  sb_buf bytes; /* decoded output, reused */
  bool ended; /* the END event came */
} follow;

static sb_code on_event(void *ud, unsigned flags, const char *msg, size_t len, sb_err *e) {
  (void)flags;
  follow *f = ud;
  sb_json j;
  if (sb_json_parse(&j, f->m, msg, len, e) != SB_OK) {
    sb_json_free(&j);
    return sb_fail(e, SB_EIO, "remote: a process event is not JSON");
  }
  size_t ev = sb_json_field(&j, sb_json_field(&j, 0, "event"), "event");
  if (ev == SB_JSON_NONE) ev = sb_json_field(&j, 0, "event"); /* Start/Connect wrap it once more */
  sb_rproc_event out = {.exit_code = 0};
  sb_code c = SB_OK;
  size_t at;
  int64_t v;
  if ((at = sb_json_field(&j, ev, "start")) != SB_JSON_NONE) {
    out.kind = SB_REV_START;
    if (sb_json_int(&j, sb_json_field(&j, at, "pid"), &v) && v >= 0 && v <= UINT32_MAX) out.pid = (uint32_t)v;
  } else if ((at = sb_json_field(&j, ev, "data")) != SB_JSON_NONE) {
    size_t so = sb_json_field(&j, at, "stdout"), se = sb_json_field(&j, at, "stderr"), sl;
    size_t which = so != SB_JSON_NONE ? so : se;
    const char *b64 = sb_json_str(&j, which, &sl);
    out.kind = so != SB_JSON_NONE ? SB_REV_STDOUT : SB_REV_STDERR;
    f->bytes.len = 0;
    if (!b64) c = sb_fail(e, SB_EIO, "remote: a data event without output");
    else if ((c = sb_b64_decode(f->m, &f->bytes, b64, sl)) != SB_OK)
      c = c == SB_ENOSPC ? sb_fail(e, c, "out of memory") : sb_fail(e, SB_EIO, "remote: output that is not base64");
    out.data = f->bytes.p ? f->bytes.p : "";
    out.len = f->bytes.len;
  } else if ((at = sb_json_field(&j, ev, "end")) != SB_JSON_NONE) {
    out.kind = SB_REV_END;
    /* proto3 JSON leaves out default values: no exitCode is 0 */
    out.exit_code = sb_json_int(&j, sb_json_field(&j, at, "exitCode"), &v) ? (int)v : 0;
    out.exited = sb_json_bool(&j, sb_json_field(&j, at, "exited"), false);
    out.status = sb_json_str(&j, sb_json_field(&j, at, "status"), NULL);
    out.error = sb_json_str(&j, sb_json_field(&j, at, "error"), NULL);
    if (!out.exited && out.exit_code == 0) out.exit_code = -1;
    f->ended = true;
  } else if (sb_json_field(&j, ev, "keepalive") != SB_JSON_NONE) {
    out.kind = SB_REV_KEEPALIVE;
  } else {
    sb_json_free(&j);
    return SB_OK; /* an event this client does not know: newer envd */
  }
  if (c == SB_OK) c = f->fn(f->ud, &out, e);
  sb_json_free(&j);
  return c;
}

/* Start or Connect: body in w, streamed. */
static sb_code stream(const sb_mem *m, const sb_envd *d, const char *method, sb_jw *w, double deadline,
                      double keepalive, sb_rproc_fn fn, void *ud, sb_err *e) {
  sb_code c = sb_jw_finish(w, e);
  if (c == SB_EINVAL) return sb_fail(e, SB_EINVAL, "a command, its arguments and environment must be UTF-8");
  if (c != SB_OK) return c;
  char url[1024], ka[64], dl[64];
  if ((c = sb_envd_url(d, SERVICE, method, url, sizeof url, e)) != SB_OK) {
    sb_buf_free(m, &w->b);
    return c;
  }
  sb_envd_headers h;
  sb_rreq rq = {.method = "POST", .url = url, .what = method, .body = w->b.p, .blen = w->b.len};
  int n = 0;
  sb_envd_prepare(d, &h, &rq, &n);
  rq.headers[n++] = "Content-Type: application/connect+json";
  rq.headers[n++] = "Connect-Protocol-Version: 1";
  /* keepalives well inside the idle limit, so only a dead link goes quiet */
  snprintf(ka, sizeof ka, "Keepalive-Ping-Interval: %d", keepalive >= 1 ? (int)keepalive : 1);
  rq.headers[n++] = ka;
  if (deadline > 0) { /* only when asked: it is the process's lifetime */
    snprintf(dl, sizeof dl, "Connect-Timeout-Ms: %.0f", deadline * 1000);
    rq.headers[n++] = dl;
  }
  follow f = {.m = m, .fn = fn, .ud = ud};
  double t0 = sb_now();
  c = sb_remote_stream(m, &d->t, &rq, on_event, &f, e);
  if (!f.ended && deadline > 0 && sb_now() - t0 >= deadline - 0.05 && (c == SB_OK || c == SB_EIO)) {
    sb_rproc_event end = {.kind = SB_REV_END, .exit_code = -1, .status = "deadline exceeded", .timed_out = true};
    *e = (sb_err){0};
    c = fn(ud, &end, e);
  } else if (c == SB_OK && !f.ended)
    c = sb_failf(e, SB_EIO, "remote: %s: the stream ended before the process did", method);
  sb_buf_free(m, &f.bytes);
  sb_buf_free(m, &w->b);
  return c;
}

static void strings(sb_jw *w, const char *key, const char *const *v) {
  sb_jw_key(w, key);
  sb_jw_begin_arr(w);
  for (size_t i = 0; v && v[i]; i++) sb_jw_cstr(w, v[i]);
  sb_jw_end(w);
}

sb_code sb_envd_start(const sb_mem *m, const sb_envd *d, const sb_rproc_spec *s, sb_rproc_fn fn, void *ud, sb_err *e) {
  sb_jw w;
  sb_jw_init(&w, m);
  sb_jw_begin_obj(&w);
  sb_jw_key(&w, "process");
  sb_jw_begin_obj(&w);
  sb_jw_key(&w, "cmd");
  sb_jw_cstr(&w, s->cmd);
  strings(&w, "args", s->args);
  if (s->env && s->env[0]) {
    sb_jw_key(&w, "envs");
    sb_jw_begin_obj(&w);
    for (size_t i = 0; s->env[i] && s->env[i + 1]; i += 2) {
      sb_jw_key(&w, s->env[i]);
      sb_jw_cstr(&w, s->env[i + 1]);
    }
    sb_jw_end(&w);
  }
  if (s->cwd) {
    sb_jw_key(&w, "cwd");
    sb_jw_cstr(&w, s->cwd);
  }
  sb_jw_end(&w);
  if (s->tag) {
    sb_jw_key(&w, "tag");
    sb_jw_cstr(&w, s->tag);
  }
  /* without "stdin": false envd leaves a pipe open the command may wait on */
  sb_jw_key(&w, "stdin");
  sb_jw_bool(&w, s->stdin_open);
  sb_jw_end(&w);
  return stream(m, d, "Start", &w, s->deadline, s->keepalive, fn, ud, e);
}

/* {"process": {"pid": N}, ...the rest by the caller} */
static void selector(sb_jw *w, uint32_t pid) {
  sb_jw_begin_obj(w);
  sb_jw_key(w, "process");
  sb_jw_begin_obj(w);
  sb_jw_key(w, "pid");
  sb_jw_int(w, pid);
  sb_jw_end(w);
}

sb_code sb_envd_attach(const sb_mem *m, const sb_envd *d, uint32_t pid, double keepalive, sb_rproc_fn fn, void *ud,
                       sb_err *e) {
  sb_jw w;
  sb_jw_init(&w, m);
  selector(&w, pid);
  sb_jw_end(&w);
  return stream(m, d, "Connect", &w, 0, keepalive, fn, ud, e);
}

static sb_code act(const sb_mem *m, const sb_envd *d, const char *method, sb_jw *w, sb_err *e) {
  sb_jw_end(w);
  sb_code c = sb_jw_finish(w, e);
  if (c != SB_OK) return c;
  sb_json reply;
  c = sb_envd_call(m, d, SERVICE, method, w, &reply, e);
  sb_json_free(&reply);
  sb_buf_free(m, &w->b);
  return c;
}

sb_code sb_envd_input(const sb_mem *m, const sb_envd *d, uint32_t pid, const char *data, size_t len, sb_err *e) {
  sb_jw w;
  sb_jw_init(&w, m);
  selector(&w, pid);
  sb_jw_key(&w, "input");
  sb_jw_begin_obj(&w);
  sb_jw_key(&w, "stdin");
  sb_jw_b64(&w, data, len);
  sb_jw_end(&w);
  return act(m, d, "SendInput", &w, e);
}

sb_code sb_envd_close_stdin(const sb_mem *m, const sb_envd *d, uint32_t pid, sb_err *e) {
  sb_jw w;
  sb_jw_init(&w, m);
  selector(&w, pid);
  return act(m, d, "CloseStdin", &w, e);
}

sb_code sb_envd_signal(const sb_mem *m, const sb_envd *d, uint32_t pid, int sig, sb_err *e) {
  if (sig != 9 && sig != 15) return sb_fail(e, SB_EINVAL, "envd sends only SIGTERM and SIGKILL");
  sb_jw w;
  sb_jw_init(&w, m);
  selector(&w, pid);
  sb_jw_key(&w, "signal");
  sb_jw_cstr(&w, sig == 9 ? "SIGNAL_SIGKILL" : "SIGNAL_SIGTERM");
  return act(m, d, "SendSignal", &w, e);
}
