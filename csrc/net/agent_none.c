/* The network agent where there are no network namespaces (confine/none.c
 * refuses commands that would need one): published ports and the
 * allowlist proxy's way in are not available. */
#include <errno.h>

#include "net/agent.h"

void sb_netagent_init(sb_netagent *a) {
  a->sock = -1;
  a->pid = -1;
  pthread_mutex_init(&a->mu, NULL);
}

int sb_netagent_start(sb_netagent *a, const sb_netns *ns) {
  (void)a;
  (void)ns;
  return -ENOTSUP;
}

int sb_netagent_listen(sb_netagent *a, uint16_t port, uint16_t *bound) {
  (void)a;
  (void)port;
  (void)bound;
  return -ENOTSUP;
}

int sb_netagent_connect(sb_netagent *a, uint16_t port) {
  (void)a;
  (void)port;
  return -ENOTSUP;
}

int sb_netagent_free_port(sb_netagent *a, uint16_t *port) {
  (void)a;
  (void)port;
  return -ENOTSUP;
}

void sb_netagent_stop(sb_netagent *a) { (void)a; }
