/* An exposed port: a listener on the host (bind_host) in front of a port a
 * background command listens on inside the sandbox's network namespace.
 * Requests without the token are refused (401) before a byte reaches the
 * command; accepted ones are relayed to it through a socket the namespace
 * agent connects. With a TTL, a port idle that long (no connection, no
 * byte either way) gets its command killed: SIGTERM to the leader through
 * its pidfd, SIGKILL after the grace; the sandbox then kills what is left
 * of the tree when it sees the leader exit. Lives on the service thread. */
#ifndef SB_NET_GATE_H
#define SB_NET_GATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "net/agent.h"
#include "net/relay.h"

#define SB_TOKEN_MAX 256

typedef struct sb_gate {
  sb_netserver srv;
  sb_netagent *agent; /* shared with the Lua thread (it locks) */
  uint16_t inner_port; /* where the command listens (its PORT) */
  char token[SB_TOKEN_MAX + 1];
  size_t toklen; /* 0 = no token required */
  double ttl, grace; /* seconds; ttl 0 = none */
  int pidfd; /* the command's leader (ours), -1 = none */
  uv_timer_t idle, kill;
  uint64_t last; /* loop time of the last activity, ms */
  int timers; /* open timer handles */
  bool srv_done;
  atomic_bool fired; /* the TTL killed the command */
  sb_netlog *log; /* set before opening: the audit trail's, or NULL */
  void (*on_closed)(struct sb_gate *g);
  void *ud;
} sb_gate;

/* On the service thread: serve on listen_fd (ours from now on). */
int sb_gate_open(sb_gate *g, uv_loop_t *loop, const sb_mem *m, int listen_fd);
/* On the service thread: stop; g->on_closed runs when everything is closed. */
void sb_gate_close(sb_gate *g);

#endif
