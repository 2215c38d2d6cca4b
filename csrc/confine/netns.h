/* The network of a sandbox's commands when outbound traffic is off: one
 * network namespace per sandbox, holding only a loopback interface (up), so
 * a command can reach a server another command of the same sandbox started,
 * and nothing else. Children join it with setns() (creating a namespace per
 * command costs more than the command). Without root it is owned by a user
 * namespace made with it, mapping the host's uid to itself. */
#ifndef SB_CONFINE_NETNS_H
#define SB_CONFINE_NETNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sb_netns {
  int net; /* fd of the network namespace, -1 = none */
  int user; /* fd of its user namespace (not root), -1 = none */
} sb_netns;

/* Returns 0, or -1 with why. (Used without the sandbox's own namespaces,
 * confine = {namespaces = false}; with them the init's clone makes the
 * network, or as root sb_netns_new_fd beside it, confine/ns.c.) */
int sb_netns_create(sb_netns *ns, bool with_userns, char *why, size_t whylen);
/* A new network namespace with `lo` up, as an fd (O_CLOEXEC), or -1 with
 * errno: made by a child that shares our memory (the cost does not grow
 * with the host's heap); as root, which then owns it. */
int sb_netns_new_fd(void);
/* sb_netns_new_fd on a short-lived thread: the clone that makes the
 * namespace blocks its caller 0.7-6 ms here, and the host has work of its
 * own meanwhile (confine/ns.c). Start never fails (without a thread the
 * namespace is made at once); finish joins: the fd, or -1 with errno. */
typedef struct sb_netns_job {
  pthread_t th;
  bool live;
  int fd, err;
} sb_netns_job;
void sb_netns_job_start(sb_netns_job *j);
int sb_netns_job_finish(sb_netns_job *j);
/* In a child inside a new network namespace: bring `lo` up. 0 or -1. */
int sb_netns_loopback_up(void);
void sb_netns_close(sb_netns *ns);

#endif
