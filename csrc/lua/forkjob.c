/* Work in a forked copy of the process, or on a thread (lua/forkjob.h). */
#include "lua/forkjob.h"
#include "plat/fd.h"
#include "plat/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The sandbox's part that knows its running jobs: dispose stops them. */
typedef struct jobs {
  sb_forkjob *first;
} jobs;

static void unlink_job(sb_forkjob *j) {
  jobs *js = j->owner;
  if (!js) return;
  for (sb_forkjob **at = &js->first; *at; at = &(*at)->next)
    if (*at == j) {
      *at = j->next;
      break;
    }
  j->owner = NULL;
}

/* The copy is gone: what it did to the tree is done (backend.h). */
static void uncount(sb_forkjob *j) {
  if (!j->fs) return;
  j->fs->outside--;
  if (j->fs->be->cmd) j->fs->be->cmd->changed(j->fs);
  j->fs = NULL;
}

/* The thread has ended or will soon: nobody reads, its write fails (EPIPE,
 * its SIGPIPE blocked) and its walk stops at the next entry. */
static void join_thread(sb_forkjob *j) {
  if (!j->joinable) return;
  atomic_store(&j->cancel, true);
  if (j->fd >= 0) close(j->fd);
  j->fd = -1;
  pthread_join(j->thread, NULL);
  j->joinable = false;
}

void sb_forkjob_stop(sb_forkjob *j) {
  unlink_job(j);
  join_thread(j);
  if (j->pid > 0) {
    kill(j->pid, SIGKILL);
    while (waitpid(j->pid, &j->status, 0) < 0 && errno == EINTR) {}
    j->pid = 0;
  }
  uncount(j);
  if (j->fd >= 0) close(j->fd);
  j->fd = -1;
}

void sb_forkjob_free(sb_forkjob *j) {
  sb_forkjob_stop(j);
  if (j->mem.f) sb_buf_free(&j->mem, &j->got);
}

static void jobs_close(lua_State *L, sb_sandbox *sb, void *state) {
  (void)L;
  jobs *js = state;
  while (js->first) sb_forkjob_stop(js->first); /* unlinks it */
  sb_free(&sb->fs.mem, js, sizeof *js);
}

static const sb_part_class JOBS = {"jobs in forked copies", jobs_close};

static void join(lua_State *L, sb_sandbox *sb, sb_forkjob *j) {
  jobs *js = sb_part_get(sb, &JOBS);
  if (!js) {
    js = sb_malloc(&sb->fs.mem, sizeof *js);
    if (!js) {
      sb_forkjob_stop(j);
      luaL_error(L, "not enough memory");
    }
    js->first = NULL;
    sb_part_add(L, sb, &JOBS, js);
  }
  j->owner = js;
  j->next = js->first;
  js->first = j;
}

void *sb_forkjob_new(lua_State *L, size_t size, const char *mt) {
  sb_forkjob *j = lua_newuserdatauv(L, size, 1);
  memset(j, 0, size);
  j->fd = -1;
  luaL_setmetatable(L, mt);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  return j;
}

bool sb_forkjob_write(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

/* The answer's pipe for j; 0, or -1 with e set. */
static int open_pipe(sb_sandbox *sb, sb_forkjob *j, int p[2], sb_err *e) {
  j->fd = -1;
  j->mem = sb->fs.mem;
  if (sb_pipe_cloexec(p) == 0) return 0;
  sb_failf(e, SB_EAGAIN, "cannot make a pipe for the work: %s", strerror(errno));
  return -1;
}

/* The work runs: its answer is read from rfd on the host's turns. */
static void begin(lua_State *L, sb_sandbox *sb, sb_forkjob *j, int rfd) {
  fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_NONBLOCK);
  j->fd = rfd;
  join(L, sb, j);
}

int sb_forkjob_start(lua_State *L, sb_sandbox *sb, sb_forkjob *j, sb_forkjob_fn fn, void *arg, sb_err *e) {
  int p[2];
  if (open_pipe(sb, j, p, e) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    sb_die_with_parent(); /* the host went away: nobody wants the answer */
    if (sb->fs.be->forked) sb->fs.be->forked(&sb->fs);
    fn(arg, p[1]);
    _exit(0); /* nothing of the host's runs here: no atexit, no buffered stdio */
  }
  int err = errno;
  close(p[1]);
  if (pid < 0) {
    close(p[0]);
    sb_failf(e, SB_EAGAIN, "cannot start a process for the work: %s", strerror(err));
    return -1;
  }
  /* the copy may change the tree (a write of a local sandbox's): counted
   * until it is reaped (the host calls nothing in between) */
  j->fs = &sb->fs;
  j->fs->outside++;
  if (j->fs->be->cmd) j->fs->be->cmd->changed(j->fs);
  j->pid = pid;
  begin(L, sb, j, p[0]);
  return 0;
}

static void *thread_main(void *ud) {
  sb_forkjob *j = ud;
  j->fn(j->arg, j->wfd);
  close(j->wfd); /* the end of the answer */
  j->release(j->arg);
  return NULL;
}

int sb_forkjob_start_thread(lua_State *L, sb_sandbox *sb, sb_forkjob *j, sb_forkjob_fn fn, void *arg,
                            void (*release)(void *arg), sb_err *e) {
  int p[2];
  if (open_pipe(sb, j, p, e) != 0) {
    release(arg);
    return -1;
  }
  atomic_init(&j->cancel, false);
  j->fn = fn;
  j->release = release;
  j->arg = arg;
  j->wfd = p[1];
  /* every signal blocked there: the host's handlers run on its own threads,
   * and a write after the host stopped reading fails with EPIPE instead of
   * raising SIGPIPE */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int r = pthread_create(&j->thread, NULL, thread_main, j);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r != 0) {
    close(p[0]);
    close(p[1]);
    release(arg);
    sb_failf(e, SB_EAGAIN, "cannot start a thread for the work: %s", strerror(r));
    return -1;
  }
  j->joinable = true;
  begin(L, sb, j, p[0]);
  return 0;
}

bool sb_forkjob_poll(lua_State *L, sb_forkjob *j) {
  while (j->fd >= 0) {
    if (sb_buf_reserve(&j->mem, &j->got, 64 * 1024) != 0) luaL_error(L, "not enough memory");
    ssize_t r = read(j->fd, j->got.p + j->got.len, j->got.cap - j->got.len);
    if (r > 0) {
      j->got.len += (size_t)r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    break; /* the end (or an error): the copy has finished */
  }
  if (j->pid > 0) { /* it closed its end by exiting: reaping takes no time */
    while (waitpid(j->pid, &j->status, 0) < 0 && errno == EINTR) {}
    j->pid = 0;
  }
  sb_forkjob_stop(j); /* a thread's end closed: it only frees what it had left before the join */
  return true;
}
