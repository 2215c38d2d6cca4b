/* Test host for csrc/remote/json.c: each stdin line is a case in hex, each
 * stdout line the answer in hex ("!" + the error text when refused).
 *   json_echo json  parse, then write the canonical form
 *   json_echo b64d  base64-decode the case's text
 *   json_echo b64e  base64-encode the case's bytes
 * Lines, not one process per case, so a spec checks thousands at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/json.h"

static void answer(const char *bytes, size_t n) {
  for (size_t i = 0; i < n; i++) printf("%02x", (unsigned char)bytes[i]);
  fputc('\n', stdout);
}

static int unhex(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void refuse(const char *why) { printf("!%s\n", why); }

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "json";
  sb_mem m;
  sb_mem_init_plain(&m);
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  while ((got = getline(&line, &cap, stdin)) > 0) {
    size_t n = (size_t)got;
    if (line[n - 1] == '\n') n--;
    sb_buf in = {0};
    if (n % 2 || sb_buf_reserve(&m, &in, n / 2 + 1) != 0) return 2;
    for (size_t i = 0; i < n; i += 2) {
      int hi = unhex(line[i]), lo = unhex(line[i + 1]);
      if (hi < 0 || lo < 0) return 2;
      in.p[in.len++] = (char)(hi << 4 | lo);
    }
    sb_err e = {0};
    if (strcmp(mode, "json") == 0) {
      sb_json d;
      if (sb_json_parse(&d, &m, in.p ? in.p : "", in.len, &e) != SB_OK) refuse(e.msg ? e.msg : sb_code_text(e.code));
      else {
        sb_jw w;
        sb_jw_init(&w, &m);
        sb_jw_value(&w, &d, 0);
        if (sb_jw_finish(&w, &e) != SB_OK) refuse(e.msg ? e.msg : sb_code_text(e.code));
        else answer(w.b.p, w.b.len);
        sb_buf_free(&m, &w.b);
      }
      sb_json_free(&d);
    } else if (strcmp(mode, "b64d") == 0) {
      sb_buf out = {0};
      sb_code c = sb_b64_decode(&m, &out, in.p ? in.p : "", in.len);
      if (c != SB_OK) refuse(sb_code_name(c));
      else answer(out.p ? out.p : "", out.len);
      sb_buf_free(&m, &out);
    } else {
      sb_buf out = {0};
      if (!sb_b64_encode(&m, &out, in.p ? in.p : "", in.len)) return 2;
      answer(out.p ? out.p : "", out.len);
      sb_buf_free(&m, &out);
    }
    sb_buf_free(&m, &in);
    fflush(stdout);
  }
  free(line);
  return 0;
}
