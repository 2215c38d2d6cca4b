/* A helper process living in a sandbox's network namespace for as long as
 * the sandbox needs it: it opens sockets there and hands them to the host
 * over a socketpair (SCM_RIGHTS). The host accepts and connects through them
 * without ever leaving its own namespace. Started on first use (the proxy
 * for allowed_hosts, an exposed port); exits when the socketpair closes,
 * host death included. */
#ifndef SB_NET_AGENT_H
#define SB_NET_AGENT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "confine/netns.h"

typedef struct sb_netagent {
  int sock; /* our end of the socketpair, -1 = not running */
  pid_t pid;
  pthread_mutex_t mu; /* requests come from the Lua and the service thread */
} sb_netagent;

void sb_netagent_init(sb_netagent *a);
/* Returns 0, or -errno. */
int sb_netagent_start(sb_netagent *a, const sb_netns *ns);
/* A listening TCP socket on 127.0.0.1:port (0 = any) inside the namespace;
 * returns the fd (non-blocking, close-on-exec) and its port, or -errno. */
int sb_netagent_listen(sb_netagent *a, uint16_t port, uint16_t *bound);
/* A socket connected to 127.0.0.1:port inside the namespace, or -errno. */
int sb_netagent_connect(sb_netagent *a, uint16_t port);
/* A port free inside the namespace right now (for a command to listen on). */
int sb_netagent_free_port(sb_netagent *a, uint16_t *port);
void sb_netagent_stop(sb_netagent *a);

#endif
