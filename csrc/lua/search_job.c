/* grep and glob that do not make the caller wait: core.grep_start(sb,
 * pattern, opts) and core.glob_start check everything grep and glob
 * check, then run the search in a forked
 * copy of this process, which sends the records back through a pipe; the
 * host's loop asks job:result() on its turns. A fork, not a thread: the
 * copy sees the tree as it was when the call was made (a VirtualSandbox's
 * included) and shares no memory, so the caller may go on changing the
 * sandbox meanwhile, and the search runs in plain C (no Lua, no audit
 * callback) before _exit. Not for a RemoteSandbox, whose reads share a
 * connection with this process (the Lua layer keeps that one blocking). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/err.h"
#include "lua/search.h"

/* What the copy sends first: the outcome, then msglen bytes of message and
 * reslen bytes of records (search/search.c's own layout). */
typedef struct answer {
  int32_t code;
  uint8_t bad_pattern, truncated;
  uint64_t count, matches, reslen;
  uint32_t msglen;
} answer;

typedef struct job job;

/* The sandbox's part that knows its running searches: dispose stops them. */
typedef struct jobs {
  job *first;
} jobs;

struct job {
  jobs *owner; /* NULL once stopped, or when the sandbox was disposed */
  job *next;
  pid_t pid; /* 0 once reaped */
  int fd; /* the pipe's read end; -1 once closed */
  bool grep; /* else glob */
  bool done; /* the result was handed out */
  bool empty; /* answered without a copy: nothing to search */
  sb_search s;
  sb_op op;
  char raw[SB_PATH_MAX + 1]; /* op.raw's copy */
  sb_buf got; /* what came through the pipe */
};

#define JOB_MT "sandbox.SearchJob"

static bool write_all(int fd, const void *p, size_t n) {
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

/* In the copy: search, answer, leave without running anything of the host's. */
static _Noreturn void run_copy(int wfd, sb_search *s, const char *pattern, size_t plen, const sb_path *where) {
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* the host went away: nobody wants the answer */
  sb_code c = pattern ? sb_search_grep(s, pattern, plen, where) : sb_search_glob(s, where);
  const char *msg = c == SB_OK ? "" : s->e->msg ? s->e->msg : sb_code_text(c);
  answer a = {.code = c,
              .bad_pattern = s->bad_pattern,
              .truncated = s->truncated,
              .count = s->count,
              .matches = s->matches,
              .reslen = c == SB_OK ? s->results.len : 0,
              .msglen = (uint32_t)strlen(msg)};
  bool ok = write_all(wfd, &a, sizeof a) && write_all(wfd, msg, a.msglen) &&
      (a.reslen == 0 || write_all(wfd, s->results.p, a.reslen));
  _exit(ok ? 0 : 1);
}

static void unlink_job(job *j) {
  if (!j->owner) return;
  for (job **at = &j->owner->first; *at; at = &(*at)->next)
    if (*at == j) {
      *at = j->next;
      break;
    }
  j->owner = NULL;
}

static void job_stop(job *j) {
  unlink_job(j);
  if (j->pid > 0) {
    kill(j->pid, SIGKILL);
    while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR) {}
    j->pid = 0;
  }
  if (j->fd >= 0) close(j->fd);
  j->fd = -1;
}

static void job_release(job *j) {
  job_stop(j);
  if (j->s.fs) {
    sb_buf_free(&j->s.fs->mem, &j->got);
    sb_search_free(&j->s);
  }
}

static void jobs_close(lua_State *L, sb_sandbox *sb, void *state) {
  (void)L;
  jobs *js = state;
  while (js->first) job_stop(js->first); /* unlinks it */
  sb_free(&sb->fs.mem, js, sizeof *js);
}

static const sb_part_class JOBS = {"searches", jobs_close};

static void join(lua_State *L, sb_sandbox *sb, job *j) {
  jobs *js = sb_part_get(sb, &JOBS);
  if (!js) {
    js = sb_malloc(&sb->fs.mem, sizeof *js);
    if (!js) luaL_error(L, "not enough memory");
    js->first = NULL;
    sb_part_add(L, sb, &JOBS, js);
  }
  j->owner = js;
  j->next = js->first;
  js->first = j;
}

static int job_gc(lua_State *L) {
  job_release(luaL_checkudata(L, 1, JOB_MT));
  return 0;
}

/* A job on the stack for sb (its uservalue), its search set up. */
static job *new_job(lua_State *L, sb_sandbox *sb, const char *name, bool grep) {
  job *j = lua_newuserdatauv(L, sizeof *j, 1);
  memset(j, 0, sizeof *j);
  j->fd = -1;
  j->grep = grep;
  luaL_setmetatable(L, JOB_MT);
  lua_pushvalue(L, 1); /* the sandbox lives as long as its job */
  lua_setiuservalue(L, -2, 1);
  j->op.name = name;
  sb_search_init(&j->s, &sb->fs, &j->op.e, sb_lua_search_max(L));
  return j;
}

/* The audit entry is made when the result is taken: keep the raw path. */
static void keep_raw(job *j) {
  size_t n = j->op.rawlen < SB_PATH_MAX ? j->op.rawlen : SB_PATH_MAX;
  memcpy(j->raw, j->op.raw, n);
  j->raw[n] = '\0';
  j->op.raw = j->raw;
  j->op.rawlen = n;
}

/* Fork the copy that searches (grep with pattern, else glob); the job on
 * the stack, or nil, msg, code. `where` and everything s points to must be
 * this call's: the copy runs on them as they are now. */
static int fork_search(lua_State *L, sb_sandbox *sb, job *j, const char *pattern, size_t plen) {
  sb_op *op = &j->op;
  keep_raw(j);
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    sb_failf(&op->e, SB_EAGAIN, "cannot make a pipe for the search: %s", strerror(errno));
    return sb_lua_fail(L, sb, op);
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    run_copy(p[1], &j->s, pattern, plen, &op->p);
  }
  int err = errno;
  close(p[1]);
  if (pid < 0) {
    close(p[0]);
    sb_failf(&op->e, SB_EAGAIN, "cannot start the search's process: %s", strerror(err));
    return sb_lua_fail(L, sb, op);
  }
  fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
  j->pid = pid;
  j->fd = p[0];
  join(L, sb, j);
  return 1;
}

/* core.grep_start(sb, pattern, opts) -> job | nil, msg, code. */
static int l_grep_start(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_grep_check(L);
  size_t plen;
  const char *pattern = lua_tolstring(L, 2, &plen);
  job *j = new_job(L, sb, "grep", true);
  char fpat[SB_PATH_MAX + 1];
  if (sb_lua_grep_prepare(L, sb, &j->op, &j->s, fpat) != SB_OK) return sb_lua_fail(L, sb, &j->op);
  return fork_search(L, sb, j, pattern, plen);
}

/* core.glob_start(sb, pattern, opts) -> job | nil, msg, code. */
static int l_glob_start(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_glob_check(L);
  job *j = new_job(L, sb, "glob", false);
  char pat[SB_PATH_MAX + 1];
  bool nothing;
  if (sb_lua_glob_prepare(L, sb, &j->op, &j->s, pat, &nothing) != SB_OK) return sb_lua_fail(L, sb, &j->op);
  if (nothing) { /* the policy hides it all: the answer is empty, no copy needed */
    keep_raw(j);
    j->empty = true;
    return 1;
  }
  return fork_search(L, sb, j, NULL, 0);
}

/* Read what is there; true at the end of the stream (or a read error). */
static bool drain(lua_State *L, job *j) {
  for (;;) {
    if (sb_buf_reserve(&j->s.fs->mem, &j->got, 64 * 1024) != 0) luaL_error(L, "not enough memory");
    ssize_t r = read(j->fd, j->got.p + j->got.len, j->got.cap - j->got.len);
    if (r > 0) {
      j->got.len += (size_t)r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    return !(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
  }
}

/* The copy's answer into j->s and j->op.e; false when it sent none. */
static bool take_answer(job *j, sb_code *code) {
  answer a;
  if (j->got.len < sizeof a) return false;
  memcpy(&a, j->got.p, sizeof a);
  if (j->got.len != sizeof a + a.msglen + a.reslen) return false;
  const char *msg = j->got.p + sizeof a;
  *code = (sb_code)a.code;
  if (*code != SB_OK) {
    sb_failf(&j->op.e, *code, "%.*s", (int)a.msglen, msg);
    j->op.no_path = a.bad_pattern; /* about the pattern, not a path */
    return true;
  }
  j->s.count = (size_t)a.count;
  j->s.matches = (size_t)a.matches;
  j->s.truncated = a.truncated;
  j->s.results.len = 0;
  if (a.reslen && sb_buf_append(&j->s.fs->mem, &j->s.results, msg + a.msglen, (size_t)a.reslen) != 0) {
    *code = sb_fail_oom(&j->op.e);
  }
  return true;
}

/* job:result() -> false while the search runs; then, once, what grep or
 * glob returns (the records, or nil, msg, code); later calls raise. */
static int m_result(lua_State *L) {
  job *j = luaL_checkudata(L, 1, JOB_MT);
  if (j->done) return luaL_error(L, "grep job: the result was already taken");
  lua_getiuservalue(L, 1, 1);
  sb_sandbox *sb = sb_lua_check_open(L, -1);
  lua_pop(L, 1);
  if (j->empty) {
    j->done = true;
    if (sb_lua_search_push(L, &j->s, false) != 0) return sb_lua_fail(L, sb, &j->op);
    sb_lua_audit_ok(L, sb, &j->op, 0);
    return 1;
  }
  if (j->fd >= 0 && !drain(L, j)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  int status = 0;
  if (j->pid > 0) {
    while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR) {}
    j->pid = 0;
  }
  job_stop(j);
  j->done = true;
  sb_code c = SB_EIO;
  if (!take_answer(j, &c)) {
    if (WIFSIGNALED(status))
      sb_failf(&j->op.e, SB_EIO, "the search's process ended by signal %d without an answer", WTERMSIG(status));
    else sb_fail(&j->op.e, SB_EIO, "the search's process ended without an answer");
  }
  if (c != SB_OK || sb_lua_search_push(L, &j->s, j->grep) != 0) return sb_lua_fail(L, sb, &j->op);
  sb_lua_audit_ok(L, sb, &j->op, (lua_Integer)j->s.count);
  return 1;
}

/* job:cancel(): stop the search (idempotent); result() then raises. */
static int m_cancel(lua_State *L) {
  job *j = luaL_checkudata(L, 1, JOB_MT);
  job_stop(j);
  j->done = true;
  return 0;
}

void sb_lua_search_job_open(lua_State *L) {
  if (luaL_newmetatable(L, JOB_MT)) {
    static const luaL_Reg methods[] = {{"result", m_result}, {"cancel", m_cancel}, {NULL, NULL}};
    lua_newtable(L);
    sb_lua_search_keys(L);
    luaL_setfuncs(L, methods, SB_LUA_SEARCH_NKEYS);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, job_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_grep_start);
  lua_setfield(L, -2, "grep_start");
  lua_pushcfunction(L, l_glob_start);
  lua_setfield(L, -2, "glob_start");
}
