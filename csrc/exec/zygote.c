/* The zygote, the host's side (see zygote.h): it starts the zygote program
 * (csrc/zygote/main.c, carried in the module as bytes: sb_zygote_program)
 * from a memfd, hands it the layers, and sends it requests. Linux only:
 * elsewhere there are no layers to take once (exec/zygote_none.c). */
#include "exec/zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/child.h"
#include "exec/spawn_child.h"
#include "exec/zygote_proto.h"
#include "plat/fd.h"
#include "plat/proc.h"

/* The program's bytes (exec/zygote_program.c). */
extern const unsigned char sb_zygote_program[], sb_zygote_program_end[];

/* An answer comes once the command has exec'd; a zygote silent this long
 * is broken. */
#define ANSWER_MS 30000
#define STACK (16 * 1024)

struct sb_zygote {
  pid_t pid;
  int sock;
  long tid; /* the thread that started it: its commands' parent */
  bool dead;
  char *area; /* the request area, shared with it */
};

/* ---- starting it -------------------------------------------------------------- */

typedef struct start_arg {
  int prog, sock;
} start_arg;

/* The vfork-style child that becomes the zygote: the socket on fd 3,
 * nothing else of ours, the program run from its memfd. */
SB_CHILD_FN static int start_main(void *arg) {
  start_arg *a = arg;
  sb_child_default_signals(); /* no handler of the host's may run here */
  _Static_assert(SB_ZYGOTE_SOCK == 3, "the socket is the program's first fd");
  /* under valgrind 3.19 the exec fails: commands are then spawned directly */
  sb_child_exec_program(a->prog, &a->sock, 1, "sandbox-spawn");
  _exit(127);
}

/* Wait for the zygote's word (one sb_child_msg). */
static int await(sb_zygote *z, sb_child_msg *m) {
  struct pollfd p = {.fd = z->sock, .events = POLLIN};
  int r;
  while ((r = poll(&p, 1, ANSWER_MS)) < 0 && errno == EINTR) {}
  if (r != 1) return errno = r == 0 ? ETIMEDOUT : errno, -1;
  ssize_t n;
  while ((n = recv(z->sock, m, sizeof *m, 0)) < 0 && errno == EINTR) {}
  if (n != (ssize_t)sizeof *m) return errno = n < 0 ? errno : EPIPE, -1;
  return 0;
}

/* The layers as the first message: fd fields become indexes into the fds
 * sent with it (the area's memfd first), the filter goes by value. */
static int send_setup(sb_zygote *z, const sb_confine_steps *s, int area_fd) {
  sb_zygote_setup *m = calloc(1, sizeof *m);
  if (!m) return errno = ENOMEM, -1;
  int fds[SB_NS_COUNT + 4], n = 0;
  fds[n++] = area_fd;
  m->steps = *s;
  m->host = getpid();
  for (int i = 0; i < SB_NS_COUNT; i++)
    if (s->ns_fds[i] >= 0) {
      m->steps.ns_fds[i] = n;
      fds[n++] = s->ns_fds[i];
    }
  if (s->ns_pidfd >= 0) {
    m->steps.ns_pidfd = n;
    fds[n++] = s->ns_pidfd;
  }
  if (s->landlock_ruleset_fd >= 0) {
    m->steps.landlock_ruleset_fd = n;
    fds[n++] = s->landlock_ruleset_fd;
  }
  m->steps.seccomp = NULL;
  if (s->seccomp) {
    m->nfilter = s->seccomp->len <= SB_SECCOMP_MAX ? s->seccomp->len : 0;
    memcpy(m->filter, s->seccomp->filter, m->nfilter * sizeof *m->filter);
  }
  int r = sb_send_fds(z->sock, m, sizeof *m, fds, n);
  free(m);
  return r;
}

static void end(sb_zygote *z) {
  if (z->sock >= 0) close(z->sock); /* it ends on EOF ... */
  z->sock = -1;
  if (z->pid > 0) { /* ... or now */
    kill(z->pid, SIGKILL);
    while (waitpid(z->pid, NULL, __WALL) < 0 && errno == EINTR) {}
    z->pid = -1;
  }
  z->dead = true;
}

sb_zygote *sb_zygote_new(const sb_confine_steps *s) {
  sb_zygote *z = calloc(1, sizeof *z);
  if (!z) return NULL;
  z->pid = -1;
  z->sock = -1;
  z->area = MAP_FAILED;
  int sv[2] = {-1, -1}, prog = -1, area_fd = -1, e = 0;
  char *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
      (prog = sb_program_file("sandbox-spawn", sb_zygote_program,
                              (size_t)(sb_zygote_program_end - sb_zygote_program))) < 0 ||
      (area_fd = (int)syscall(SYS_memfd_create, "sandbox-spawn-area", MFD_CLOEXEC)) < 0 ||
      ftruncate(area_fd, SB_ZYGOTE_REGION) != 0 ||
      (z->area = mmap(NULL, SB_ZYGOTE_REGION, PROT_READ | PROT_WRITE, MAP_SHARED, area_fd, 0)) == MAP_FAILED) {
    e = errno;
    goto out;
  }
  z->sock = sv[0];
  z->tid = (long)syscall(SYS_gettid);
  start_arg a = {prog, sv[1]};
  /* every signal blocked across the clone, as for a command */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  z->pid = sb_clone_child(start_main, &a, stack + STACK, NULL, false);
  e = z->pid < 0 ? errno : 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e) goto out;
  close(sv[1]);
  sv[1] = -1;
  sb_child_msg m = {0, SB_SP_COMMAND, 0};
  if (send_setup(z, s, area_fd) != 0 || await(z, &m) != 0) e = errno ? errno : EIO;
  else if (m.step != SB_SP_COMMAND) e = m.err ? m.err : EIO;
out:
  if (stack != MAP_FAILED) munmap(stack, STACK);
  if (sv[1] >= 0) close(sv[1]);
  if (prog >= 0) close(prog);
  if (area_fd >= 0) close(area_fd);
  if (e) {
    if (z->sock < 0 && sv[0] >= 0) close(sv[0]);
    end(z);
    if (z->area != MAP_FAILED) munmap(z->area, SB_ZYGOTE_REGION);
    free(z);
    errno = e;
    return NULL;
  }
  return z;
}

/* ---- requests ------------------------------------------------------------------ */

/* The request's strings into the area: argc + envc offsets, then the
 * bytes. -1 when it does not fit. */
static int pack(sb_zygote *z, const sb_spawn_req *r, sb_zygote_req *rq) {
  size_t na = 0, ne = 0;
  while (r->argv[na]) na++;
  while (r->envp[ne]) ne++;
  if ((na + ne) * sizeof(uint32_t) >= SB_ZYGOTE_REGION) return -1;
  uint32_t *off = (uint32_t *)(void *)z->area;
  size_t at = (na + ne) * sizeof(uint32_t);
  if (at == 0) at = sizeof(uint32_t); /* offset 0 means none */
  uint32_t fixed[3] = {0, 0, 0};
  const char *fixed_src[3] = {r->file, r->path, r->cwd_rel};
  for (size_t i = 0; i < na + ne + 3; i++) {
    const char *src = i < na ? r->argv[i] : i < na + ne ? r->envp[i - na] : fixed_src[i - na - ne];
    if (!src) continue;
    size_t l = strlen(src) + 1;
    if (SB_ZYGOTE_REGION - at < l) return -1;
    memcpy(z->area + at, src, l);
    if (i < na + ne) off[i] = (uint32_t)at;
    else fixed[i - na - ne] = (uint32_t)at;
    at += l;
  }
  rq->argc = (uint32_t)na;
  rq->envc = (uint32_t)ne;
  rq->file = fixed[0];
  rq->path = fixed[1];
  rq->cwd_rel = fixed[2];
  return 0;
}

int sb_zygote_spawn(sb_zygote *z, const sb_spawn_req *req, sb_spawn_res *res) {
  sb_zygote_req rq;
  memset(&rq, 0, sizeof rq);
  if (!z || z->dead || (long)syscall(SYS_gettid) != z->tid || pack(z, req, &rq) != 0) return SB_ZYGOTE_NOT_TAKEN;
  int all[SB_ZFD_COUNT] = {req->stdin_fd, req->stdout_fd, req->stderr_fd, req->cwd_fd};
  for (int i = 0; i < SB_MAX_CGROUPS; i++) all[SB_ZFD_CGROUP + i] = req->cgroup_procs_fds[i];
  int fds[SB_ZFD_COUNT], n = 0;
  for (int i = 0; i < SB_ZFD_COUNT; i++)
    if (all[i] >= 0) {
      rq.mask |= 1u << i;
      fds[n++] = all[i];
    }
  if (sb_send_fds(z->sock, &rq, sizeof rq, fds, n) != 0) { /* it is gone: nothing was started */
    end(z);
    return SB_ZYGOTE_NOT_TAKEN;
  }
  sb_child_msg m;
  if (await(z, &m) != 0) { /* it died or hangs with the request taken */
    res->err = errno;
    res->step = "the sandbox's zygote";
    end(z);
    return -1;
  }
  if (m.step != SB_SP_COMMAND) { /* a child failed before exec and exited */
    if (m.pid > 0)
      while (waitpid(m.pid, NULL, __WALL) < 0 && errno == EINTR) {}
    res->err = m.err;
    res->step = sb_spawn_step_name(m.step);
    return -1;
  }
  res->pid = m.pid;
  res->pidfd = req->no_pidfd ? -1 : sb_pidfd_open(m.pid); /* our child: its pid cannot be reused before we reap */
  return 0;
}

bool sb_zygote_alive(const sb_zygote *z) { return z && !z->dead; }

void sb_zygote_free(sb_zygote *z) {
  if (!z) return;
  end(z);
  if (z->area != MAP_FAILED) munmap(z->area, SB_ZYGOTE_REGION);
  free(z);
}
