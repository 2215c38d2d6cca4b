/* Test host for csrc/remote/client.c against the E2B test peer: one call
 * per run, its outcome on stdout, one line per event (flushed, so a spec can
 * act between a stream's messages).
 *   remote_probe unary  URL WHAT JSON IDLE [HEADER...]   ok <reply> | err <CODE>: <msg>
 *   remote_probe stream URL WHAT JSON IDLE [HEADER...]   msg <message>... then ok | err
 *   remote_probe call METHOD URL WHAT BODY [HEADER...]   status <N> <body>
 *   remote_probe control API KEY ENVD OP [ARG...]          the control plane:
 *     create TEMPLATE TIMEOUT [k=v...]  connect ID TIMEOUT  timeout ID N  kill ID  list
 *     each box as: box <id> <template> <token?> <envd url>; then ok | err
 *   remote_probe envd URL TOKEN ID OP [ARG...]             envd's file operations:
 *     read PATH MAX (data <bytes>)  write PATH TEXT  stat PATH  list PATH DEPTH  mkdir PATH
 *     move FROM TO  remove PATH; entries as: entry <type> <name> <path> <size> <mode> <mtime> [-> where a link resolves]
 *   remote_probe proc URL TOKEN ID OP [ARG...]             envd's Process service:
 *     start DEADLINE STDIN(0|1) CMD [ARG...]  attach PID  input PID TEXT  close PID  signal PID 9|15
 *     events as: start <pid> | stdout <text> | stderr <text> | keepalive | end <code> <exited> <status>
 *     (idle limit: $REMOTE_PROBE_IDLE seconds, 5 by default)
 * Timeouts: connect 5 s, call 10 s, idle IDLE s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/client.h"
#include "remote/control.h"
#include "remote/envd.h"
#include "remote/process.h"

static void print_json(const sb_mem *m, const sb_json *d) {
  sb_jw w;
  sb_err e = {0};
  sb_jw_init(&w, m);
  sb_jw_value(&w, d, 0);
  if (sb_jw_finish(&w, &e) == SB_OK) printf("%s\n", w.b.p);
  else printf("(unwritable: %s)\n", e.msg ? e.msg : "");
  sb_buf_free(m, &w.b);
}

static sb_code on_msg(void *ud, unsigned flags, const char *msg, size_t len, sb_err *e) {
  const sb_mem *m = ud;
  sb_json d;
  (void)flags;
  if (sb_json_parse(&d, m, msg, len, e) != SB_OK) {
    sb_json_free(&d);
    return e->code;
  }
  printf("msg ");
  print_json(m, &d);
  fflush(stdout);
  sb_json_free(&d);
  return SB_OK;
}

static int outcome(sb_code c, const sb_err *e) {
  if (c == SB_OK) printf("ok\n");
  else printf("err %s: %s\n", sb_code_name(c), e->msg ? e->msg : sb_code_text(c));
  return 0;
}

static void print_box(const sb_remote_box *b) {
  printf("box %s %s %s %s\n", b->id, b->template_id, *b->token ? "token" : "no-token", b->envd_url);
}

static sb_code on_box(void *ud, const sb_remote_box *b, sb_err *e) {
  (void)ud, (void)e;
  print_box(b);
  return SB_OK;
}

static int control(const sb_mem *m, int argc, char **argv) {
  sb_remote_engine g = {.api_url = argv[2], .api_key = argv[3], .envd_url = *argv[4] ? argv[4] : NULL,
                        .t = {.connect = 5, .call = 10, .idle = 5}};
  const char *op = argv[5];
  sb_err e = {0};
  sb_remote_box b;
  sb_code c = SB_EINVAL;
  if (strcmp(op, "create") == 0 && argc >= 8) {
    const char *meta[16] = {0};
    int k = 0;
    for (int i = 8; i < argc && k < 14; i++) { /* k=v pairs as metadata */
      char *eq = strchr(argv[i], '=');
      if (!eq) continue;
      *eq = '\0';
      meta[k++] = argv[i], meta[k++] = eq + 1;
    }
    sb_remote_spec s = {.template_id = argv[6], .timeout = atoi(argv[7]), .metadata = meta, .internet = -1};
    if ((c = sb_remote_create(m, &g, &s, &b, &e)) == SB_OK) print_box(&b);
  } else if (strcmp(op, "connect") == 0 && argc >= 8) {
    if ((c = sb_remote_connect(m, &g, argv[6], atoi(argv[7]), &b, &e)) == SB_OK) print_box(&b);
  } else if (strcmp(op, "timeout") == 0 && argc >= 8) {
    c = sb_remote_set_timeout(m, &g, argv[6], atoi(argv[7]), &e);
  } else if (strcmp(op, "kill") == 0 && argc >= 7) {
    c = sb_remote_kill(m, &g, argv[6], &e);
  } else if (strcmp(op, "list") == 0) {
    c = sb_remote_list(m, &g, on_box, NULL, &e);
  } else sb_fail(&e, c, "unknown control operation");
  return outcome(c, &e);
}

static sb_code print_entry(void *ud, const sb_rentry *en, sb_err *e) {
  (void)ud, (void)e;
  printf("entry %c %s %s %llu %o %.0f", (char)en->type, en->name, en->path, (unsigned long long)en->size, en->mode,
         en->mtime);
  if (en->resolved) printf(" -> %s", en->resolved);
  printf("\n");
  return SB_OK;
}

static int envd(const sb_mem *m, int argc, char **argv) {
  sb_envd d = {.url = argv[2], .token = argv[3], .sandbox_id = argv[4], .t = {.connect = 5, .call = 10, .idle = 5}};
  const char *op = argv[5];
  sb_err e = {0};
  sb_code c = SB_EINVAL;
  if (strcmp(op, "read") == 0 && argc >= 8) {
    sb_buf out = {0};
    if ((c = sb_envd_read(m, &d, argv[6], (size_t)atol(argv[7]), &out, &e)) == SB_OK)
      printf("data %.*s\n", (int)out.len, out.p ? out.p : "");
    sb_buf_free(m, &out);
  } else if (strcmp(op, "write") == 0 && argc >= 8) {
    c = sb_envd_write(m, &d, argv[6], argv[7], strlen(argv[7]), &e);
  } else if (strcmp(op, "stat") == 0 && argc >= 7) {
    sb_rentry en;
    sb_json hold;
    if ((c = sb_envd_stat(m, &d, argv[6], &en, &hold, &e)) == SB_OK) print_entry(NULL, &en, &e);
    sb_json_free(&hold);
  } else if (strcmp(op, "list") == 0 && argc >= 8) {
    c = sb_envd_list(m, &d, argv[6], atoi(argv[7]), print_entry, NULL, &e);
  } else if (strcmp(op, "mkdir") == 0 && argc >= 7) {
    c = sb_envd_mkdir(m, &d, argv[6], &e);
  } else if (strcmp(op, "move") == 0 && argc >= 8) {
    c = sb_envd_move(m, &d, argv[6], argv[7], &e);
  } else if (strcmp(op, "remove") == 0 && argc >= 7) {
    c = sb_envd_remove(m, &d, argv[6], &e);
  } else sb_fail(&e, c, "unknown envd operation");
  return outcome(c, &e);
}

static sb_code print_event(void *ud, const sb_rproc_event *ev, sb_err *e) {
  (void)ud, (void)e;
  switch (ev->kind) {
  case SB_REV_START: printf("start %u\n", ev->pid); break;
  case SB_REV_STDOUT: printf("stdout %.*s\n", (int)ev->len, ev->data); break;
  case SB_REV_STDERR: printf("stderr %.*s\n", (int)ev->len, ev->data); break;
  case SB_REV_KEEPALIVE: printf("keepalive\n"); break;
  case SB_REV_END:
    printf("end %d %s %s%s%s%s\n", ev->exit_code, ev->exited ? "exited" : "not-exited", ev->status ? ev->status : "-",
           ev->timed_out ? " timed-out" : "", ev->error ? " error=" : "", ev->error ? ev->error : "");
  }
  fflush(stdout);
  return SB_OK;
}

static int proc(const sb_mem *m, int argc, char **argv) {
  const char *idle = getenv("REMOTE_PROBE_IDLE");
  sb_envd d = {.url = argv[2], .token = argv[3], .sandbox_id = argv[4],
               .t = {.connect = 5, .call = 10, .idle = idle ? atof(idle) : 5}};
  const char *op = argv[5];
  sb_err e = {0};
  sb_code c = SB_EINVAL;
  uint32_t pid = argc >= 7 ? (uint32_t)strtoul(argv[6], NULL, 10) : 0;
  if (strcmp(op, "start") == 0 && argc >= 9) {
    sb_rproc_spec s = {.cmd = argv[8], .args = (const char *const *)argv + 9, .deadline = atof(argv[6]),
                       .stdin_open = argv[7][0] == '1'};
    c = sb_envd_start(m, &d, &s, print_event, NULL, &e);
  } else if (strcmp(op, "attach") == 0 && argc >= 7) {
    c = sb_envd_attach(m, &d, pid, 1, print_event, NULL, &e);
  } else if (strcmp(op, "input") == 0 && argc >= 8) {
    c = sb_envd_input(m, &d, pid, argv[7], strlen(argv[7]), &e);
  } else if (strcmp(op, "close") == 0 && argc >= 7) {
    c = sb_envd_close_stdin(m, &d, pid, &e);
  } else if (strcmp(op, "signal") == 0 && argc >= 8) {
    c = sb_envd_signal(m, &d, pid, atoi(argv[7]), &e);
  } else sb_fail(&e, c, "unknown process operation");
  return outcome(c, &e);
}

int main(int argc, char **argv) {
  if (argc >= 6 && strcmp(argv[1], "proc") == 0) {
    sb_mem m;
    sb_mem_init_plain(&m);
    return proc(&m, argc, argv);
  }
  if (argc >= 6 && strcmp(argv[1], "envd") == 0) {
    sb_mem m;
    sb_mem_init_plain(&m);
    return envd(&m, argc, argv);
  }
  if (argc >= 6 && strcmp(argv[1], "control") == 0) {
    sb_mem m;
    sb_mem_init_plain(&m);
    return control(&m, argc, argv);
  }
  if (argc < 6) return fprintf(stderr, "usage: see the comment in spec/c/remote_probe.c\n"), 2;
  sb_mem m;
  sb_mem_init_plain(&m);
  sb_err e = {0};
  sb_rlink t = {.connect = 5, .call = 10, .idle = atof(argv[5])};
  sb_rreq rq = {.method = "POST", .url = argv[2], .what = argv[3], .body = argv[4], .blen = strlen(argv[4])};
  int h = 0;
  const char *mode = argv[1];
  if (strcmp(mode, "call") == 0) {
    rq.method = argv[2], rq.url = argv[3], rq.what = argv[4], rq.body = *argv[5] ? argv[5] : NULL;
    rq.blen = strlen(argv[5]);
  } else {
    rq.headers[h++] = "Connect-Protocol-Version: 1";
    rq.headers[h++] = strcmp(mode, "stream") == 0 ? "Content-Type: application/connect+json" : "Content-Type: application/json";
  }
  for (int i = 6; i < argc && h < SB_RHEADERS_MAX - 1; i++) rq.headers[h++] = argv[i];
  if (strcmp(mode, "call") == 0) {
    sb_rresp rs;
    sb_code c = sb_remote_call(&m, &t, &rq, &rs, &e);
    if (c == SB_OK) printf("status %ld %.*s\n", rs.status, (int)rs.body.len, rs.body.p ? rs.body.p : "");
    else outcome(c, &e);
    sb_buf_free(&m, &rs.body);
    return 0;
  }
  if (strcmp(mode, "unary") == 0) {
    sb_json d;
    sb_code c = sb_remote_unary(&m, &t, &rq, &d, &e);
    if (c == SB_OK) {
      printf("ok ");
      print_json(&m, &d);
    } else outcome(c, &e);
    sb_json_free(&d);
    return 0;
  }
  return outcome(sb_remote_stream(&m, &t, &rq, on_msg, &m, &e), &e);
}
