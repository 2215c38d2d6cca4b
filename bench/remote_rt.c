/* The remote client's round trips, for bench/remote_ops.lua: N reads of a
 * 1 KiB file, N writes of it, N commands (`true`) through envd, each timed
 * as a whole; prints {"read":s,"write":s,"exec":s} (seconds per call).
 *   remote_rt ENVD_URL TOKEN SANDBOX_ID N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "remote/process.h"

static sb_code ignore(void *ud, const sb_rproc_event *ev, sb_err *e) {
  (void)ev, (void)e;
  if (ev->kind == SB_REV_END) *(int *)ud = ev->exit_code;
  return SB_OK;
}

static void die(const sb_err *e) {
  fprintf(stderr, "remote_rt: %s\n", e->msg ? e->msg : sb_code_text(e->code));
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 5) return fprintf(stderr, "usage: remote_rt ENVD_URL TOKEN SANDBOX_ID N\n"), 2;
  sb_mem m;
  sb_mem_init_plain(&m);
  sb_envd d = {.url = argv[1], .token = argv[2], .sandbox_id = argv[3], .t = {.connect = 5, .call = 30, .idle = 30}};
  int n = atoi(argv[4]);
  char data[1024];
  memset(data, 'x', sizeof data);
  sb_err e = {0};
  double t0 = sb_now();
  for (int i = 0; i < n; i++)
    if (sb_envd_write(&m, &d, "/home/user/bench.txt", data, sizeof data, &e) != SB_OK) die(&e);
  double tw = (sb_now() - t0) / n;
  t0 = sb_now();
  for (int i = 0; i < n; i++) {
    sb_buf out = {0};
    if (sb_envd_read(&m, &d, "/home/user/bench.txt", 1 << 20, &out, &e) != SB_OK || out.len != sizeof data) die(&e);
    sb_buf_free(&m, &out);
  }
  double tr = (sb_now() - t0) / n;
  t0 = sb_now();
  for (int i = 0; i < n; i++) {
    int code = -2;
    static const char *const args[] = {"-l", "-c", "true", NULL}; /* what the SDK's commands.run("true") starts */
    sb_rproc_spec s = {.cmd = "/bin/bash", .args = args};
    if (sb_envd_start(&m, &d, &s, ignore, &code, &e) != SB_OK || code != 0) die(&e);
  }
  double tx = (sb_now() - t0) / n;
  printf("{\"read\":%.6f,\"write\":%.6f,\"exec\":%.6f}\n", tr, tw, tx);
  return 0;
}
