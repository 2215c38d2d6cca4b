/* What the network servers decided, for the audit trail (SPEC §17): the
 * service thread records each proxy decision, each refusal (proxy or
 * exposed port) and each relayed connection's end with its byte counts;
 * the sandbox's thread takes them (lua/audit.c). Bounded: beyond
 * SB_NETLOG_MAX waiting records, new ones are counted as dropped. */
#ifndef SB_NET_NETLOG_H
#define SB_NET_NETLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define SB_NETLOG_MAX 4096

enum { SB_NE_ALLOW, SB_NE_REFUSE, SB_NE_END, SB_NE_SECRET /* why: the header's name */ };

typedef struct sb_netevent {
  double time; /* wall clock */
  uint8_t what; /* SB_NE_* */
  uint16_t port, status; /* status: the refusal's HTTP status */
  const char *server; /* "proxy" or "port" (static) */
  char method[16]; /* CONNECT, GET, ... ("" before the request line) */
  char host[256];
  char why[200]; /* the rule or reason */
  uint64_t up, down; /* SB_NE_END: bytes from the command, to the command */
} sb_netevent;

typedef struct sb_netlog {
  uv_mutex_t mu;
  sb_netevent *v;
  size_t n, cap;
  uint64_t dropped;
  atomic_bool any; /* something waits: the taker's check without the lock */
} sb_netlog;

int sb_netlog_init(sb_netlog *l); /* 0 or a libuv error */
/* Any thread. */
void sb_netlog_push(sb_netlog *l, const sb_netevent *ev);
/* The sandbox's thread: take what waits (*v to free with free()), and the
 * dropped count since the last take. */
size_t sb_netlog_take(sb_netlog *l, sb_netevent **v, uint64_t *dropped);
void sb_netlog_free(sb_netlog *l);

#endif
