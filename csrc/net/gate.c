#include "net/gate.h"
#include "plat/proc.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Same time whatever the first difference: the token is not guessable by
 * timing. */
static bool token_equal(const sb_gate *g, const char *s) {
  size_t n = strlen(s);
  unsigned char diff = (unsigned char)(n != g->toklen);
  for (size_t i = 0; i < g->toklen; i++) diff |= (unsigned char)(g->token[i] ^ (i < n ? s[i] : 0));
  return diff == 0;
}

/* Does a header `name` of the request (any of them: a name may repeat)
 * carry the token, as itself or (bearer) as "Bearer <t>"? */
static bool carries(const sb_gate *g, const char *head, size_t len, const char *name, bool bearer) {
  char v[SB_TOKEN_MAX + 32];
  for (unsigned i = 0; i < 64 && sb_http_header_nth(head, len, name, i, v, sizeof v); i++) {
    if (!bearer && token_equal(g, v)) return true;
    if (bearer && strncasecmp(v, "Bearer ", 7) == 0 && token_equal(g, v + 7)) return true;
  }
  return false;
}

static void signal_leader(sb_gate *g, int sig) {
  if (g->pidfd >= 0) sb_pidfd_signal(g->pidfd, sig);
}

static void on_kill_timer(uv_timer_t *t) { signal_leader(t->data, SIGKILL); }

static void on_idle_timer(uv_timer_t *t) {
  sb_gate *g = t->data;
  uint64_t now = uv_now(t->loop), ttl = (uint64_t)(g->ttl * 1000);
  if (now - g->last < ttl) { /* there was activity: wait out the rest */
    uv_timer_start(t, on_idle_timer, g->last + ttl - now, 0);
    return;
  }
  atomic_store(&g->fired, true);
  signal_leader(g, SIGTERM);
  uv_timer_start(&g->kill, on_kill_timer, (uint64_t)(g->grace * 1000), 0);
}

static void on_activity(sb_netserver *s) {
  sb_gate *g = s->ud;
  g->last = uv_now(s->loop);
}

static void on_head(sb_netconn *c, const char *head, size_t len) {
  sb_gate *g = c->srv->ud;
  if (atomic_load(&g->fired)) {
    sb_netconn_refuse(c, 503, "port-expired",
                      "sandbox: the command behind this port was stopped "
                      "after being idle for port_ttl");
    return;
  }
  bool bearer = g->toklen && carries(g, head, len, "Authorization", true);
  if (g->toklen && !bearer && !carries(g, head, len, "X-Sandbox-Token", false)) {
    sb_netconn_refuse(c, 401, "token-required",
                      "sandbox: this port needs its token "
                      "(header 'Authorization: Bearer <token>' or 'X-Sandbox-Token: <token>')");
    return;
  }
  /* the token stops here, in every form it was accepted in: the command
   * never sees it (an Authorization header bearing it goes, whichever form
   * let the request in) */
  static const char *const drop_token[] = {"X-Sandbox-Token", NULL};
  static const char *const drop_both[] = {"X-Sandbox-Token", "Authorization", NULL};
  size_t cap = len + 8;
  char *out = sb_malloc(c->srv->mem, cap);
  size_t n = out ? sb_http_rewrite(head, len, NULL, bearer ? drop_both : drop_token, NULL, out, cap) : 0;
  int fd = n ? sb_netagent_connect(g->agent, g->inner_port) : -1;
  if (fd < 0) {
    char why[200];
    snprintf(why, sizeof why,
             "sandbox: nothing listens on port %u inside the sandbox, the port the "
             "command was given in $PORT (still starting, or listening on another port?)",
             g->inner_port);
    sb_netconn_refuse(c, 502, "upstream-unreachable", n ? why : "sandbox: request head too large");
  } else {
    sb_netconn_attach(c, fd, out, n);
  }
  if (out) sb_free(c->srv->mem, out, cap);
}

static void maybe_closed(sb_gate *g) {
  if (g->srv_done && g->timers == 0 && g->on_closed) g->on_closed(g);
}

static void on_timer_closed(uv_handle_t *h) {
  sb_gate *g = h->data;
  g->timers--;
  maybe_closed(g);
}

static void on_srv_closed(sb_netserver *s) {
  sb_gate *g = s->ud;
  g->srv_done = true;
  maybe_closed(g);
}

int sb_gate_open(sb_gate *g, uv_loop_t *loop, const sb_mem *m, int listen_fd) {
  memset(&g->srv, 0, sizeof g->srv);
  g->srv.on_head = on_head;
  g->srv.on_activity = on_activity;
  g->srv.on_closed = on_srv_closed;
  g->srv.ud = g;
  g->srv.name = "port";
  g->srv.log = g->log;
  g->srv_done = false;
  g->timers = 0;
  atomic_store(&g->fired, false);
  uv_timer_init(loop, &g->idle);
  uv_timer_init(loop, &g->kill);
  g->idle.data = g->kill.data = g;
  g->timers = 2;
  g->last = uv_now(loop);
  int r = sb_netserver_open(&g->srv, loop, m, listen_fd);
  if (r == 0 && g->ttl > 0) uv_timer_start(&g->idle, on_idle_timer, (uint64_t)(g->ttl * 1000), 0);
  return r; /* on failure the server is closing: sb_gate_close finishes */
}

void sb_gate_close(sb_gate *g) {
  sb_netserver_close(&g->srv);
  uv_close((uv_handle_t *)&g->idle, on_timer_closed);
  uv_close((uv_handle_t *)&g->kill, on_timer_closed);
}
