/* grep and glob that do not make the caller wait: core.grep_start(sb,
 * pattern, opts) and core.glob_start check everything grep and glob check,
 * then search in a forked copy of this process (lua/forkjob.c), which sends
 * the records back; the host's loop asks job:result() on its turns. The
 * copy sees the tree as it was when the call was made (a VirtualSandbox's
 * included) and shares no memory, so the caller may go on changing the
 * sandbox meanwhile. A RemoteSandbox's copy opens connections of its own
 * (fs/backend.h: forked). A ContainerSandbox searches on a thread instead,
 * over a second handle of its own (fs/backend.h: open_copy), sharing only
 * the read-only policy: its tree is the kernel's, so a fork would copy the
 * host for nothing. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/err.h"
#include "lua/forkjob.h"
#include "lua/search.h"

/* What the copy sends: the outcome, then msglen bytes of message and reslen
 * bytes of records (search/search.c's own layout). */
typedef struct answer {
  int32_t code;
  uint8_t bad_pattern, truncated;
  uint64_t count, matches, reslen;
  uint32_t msglen;
} answer;

typedef struct job {
  sb_forkjob fj;
  bool grep; /* else glob */
  bool done; /* the result was handed out */
  bool empty; /* answered without a copy: nothing to search */
  sb_search s;
  sb_op op;
  char raw[SB_PATH_MAX + 1]; /* op.raw's copy */
  /* for the copy: grep's pattern (the call's string, alive while it forks) */
  const char *pattern;
  size_t plen;
} job;

#define JOB_MT "sandbox.SearchJob"

/* In the copy: search and answer. */
static void run_copy(void *arg, int wfd) {
  job *j = arg;
  sb_search *s = &j->s;
  sb_code c = j->grep ? sb_search_grep(s, j->pattern, j->plen, &j->op.p) : sb_search_glob(s, &j->op.p);
  const char *msg = c == SB_OK ? "" : s->e->msg ? s->e->msg : sb_code_text(c);
  answer a;
  memset(&a, 0, sizeof a); /* its padding goes down the pipe too */
  a.code = c;
  a.bad_pattern = s->bad_pattern;
  a.truncated = s->truncated;
  a.count = s->count;
  a.matches = s->matches;
  a.reslen = c == SB_OK ? s->results.len : 0;
  a.msglen = (uint32_t)strlen(msg);
  if (sb_forkjob_write(wfd, &a, sizeof a) && sb_forkjob_write(wfd, msg, a.msglen) && a.reslen)
    sb_forkjob_write(wfd, s->results.p, a.reslen);
}

static int job_gc(lua_State *L) {
  job *j = luaL_checkudata(L, 1, JOB_MT);
  sb_forkjob_free(&j->fj);
  if (j->s.fs) sb_search_free(&j->s);
  return 0;
}

/* A job on the stack for sb (its uservalue), its search set up. */
static job *new_job(lua_State *L, sb_sandbox *sb, const char *name, bool grep) {
  job *j = sb_forkjob_new(L, sizeof *j, JOB_MT);
  j->grep = grep;
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

/* What a search on a thread owns: the job as prepared, moved onto a
 * second handle of the backend's and copies of every string it points to
 * (the call's strings and buffers may be gone before it ends). */
typedef struct thread_copy {
  job j; /* first: run_copy's argument */
  sb_fs fs;
  sb_err e;
  char fpat[SB_PATH_MAX + 1];
  char *pattern, *tpat;
} thread_copy;

static void release_copy(void *arg) {
  thread_copy *t = arg;
  sb_mem m = t->fs.mem;
  if (t->pattern) sb_free(&m, t->pattern, t->j.plen + 1);
  if (t->tpat) sb_free(&m, t->tpat, t->j.s.tplen + 1);
  sb_search_free(&t->j.s);
  sb_fs_close(&t->fs);
  free(t);
}

/* The job's search moved into a thread_copy on a handle of its own, or
 * NULL with j->op.e set. */
static thread_copy *copy_for_thread(sb_sandbox *sb, job *j) {
  thread_copy *t = calloc(1, sizeof *t);
  if (!t) return sb_fail_oom(&j->op.e), NULL;
  sb_mem plain;
  sb_mem_init_plain(&plain);
  sb_fs_init(&t->fs, sb->fs.be, &plain, sb->fs.policy);
  if (sb->fs.be->open_copy(&t->fs, &sb->fs, &j->op.e) != SB_OK) {
    free(t);
    return NULL;
  }
  t->j = *j;
  t->j.op.raw = NULL;
  sb_search *s = &t->j.s;
  s->fs = &t->fs;
  s->e = &t->e;
  s->cancel = &j->fj.cancel;
  s->results = s->index = (sb_buf){0};
  sb_ignore_init(&s->ig, &t->fs.mem);
  if (s->pat) {
    memcpy(t->fpat, s->pat, s->plen);
    s->pat = t->fpat;
  }
  if (s->tpat && !(s->tpat = t->tpat = sb_memdup(&t->fs.mem, s->tpat, s->tplen))) goto oom;
  if (j->grep && !(t->j.pattern = t->pattern = sb_memdup(&t->fs.mem, j->pattern, j->plen))) goto oom;
  return t;
oom:
  release_copy(t);
  sb_fail_oom(&j->op.e);
  return NULL;
}

/* The copy that searches; the job on the stack, or nil, msg, code. What the
 * search points to must be this call's: the copy runs on it as it is now.
 * A backend with a second handle searches on a thread instead (no copy of
 * the host: forkjob.h). */
static int fork_search(lua_State *L, sb_sandbox *sb, job *j) {
  keep_raw(j);
  if (sb->fs.be->open_copy) {
    thread_copy *t = copy_for_thread(sb, j);
    if (!t || sb_forkjob_start_thread(L, sb, &j->fj, run_copy, t, release_copy, &j->op.e) != 0)
      return sb_lua_fail(L, sb, &j->op);
    return 1;
  }
  if (sb_forkjob_start(L, sb, &j->fj, run_copy, j, &j->op.e) != 0) return sb_lua_fail(L, sb, &j->op);
  return 1;
}

/* core.grep_start(sb, pattern, opts) -> job | nil, msg, code. */
static int l_grep_start(lua_State *L) {
  sb_sandbox *sb = sb_lua_check_open(L, 1);
  sb_lua_grep_check(L);
  job *j = new_job(L, sb, "grep", true);
  j->pattern = lua_tolstring(L, 2, &j->plen);
  char fpat[SB_PATH_MAX + 1];
  if (sb_lua_grep_prepare(L, sb, &j->op, &j->s, fpat) != SB_OK) return sb_lua_fail(L, sb, &j->op);
  return fork_search(L, sb, j);
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
  return fork_search(L, sb, j);
}

/* The copy's answer into j->s and j->op.e; false when it sent none. */
static bool take_answer(job *j, sb_code *code) {
  const sb_buf *got = &j->fj.got;
  answer a;
  if (got->len < sizeof a) return false;
  memcpy(&a, got->p, sizeof a);
  if (got->len != sizeof a + a.msglen + a.reslen) return false;
  const char *msg = got->p + sizeof a;
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
  if (a.reslen && sb_buf_append(&j->s.fs->mem, &j->s.results, msg + a.msglen, (size_t)a.reslen) != 0)
    *code = sb_fail_oom(&j->op.e);
  return true;
}

/* job:result() -> false while the search runs; then, once, what grep or
 * glob returns (the records, or nil, msg, code); later calls raise. */
static int m_result(lua_State *L) {
  job *j = luaL_checkudata(L, 1, JOB_MT);
  if (j->done) return luaL_error(L, "search job: the result was already taken");
  lua_getiuservalue(L, 1, 1);
  sb_sandbox *sb = sb_lua_check_open(L, -1);
  lua_pop(L, 1);
  if (!j->empty && !sb_forkjob_poll(L, &j->fj)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  j->done = true;
  sb_code c = SB_OK;
  if (!j->empty && !take_answer(j, &c)) {
    c = SB_EIO;
    if (WIFSIGNALED(j->fj.status))
      sb_failf(&j->op.e, SB_EIO, "the search's process ended by signal %d without an answer", WTERMSIG(j->fj.status));
    else sb_fail(&j->op.e, SB_EIO, "the search's process ended without an answer");
  }
  int n = c == SB_OK ? sb_lua_search_push(L, &j->s, j->grep) : -1;
  if (n < 0) return sb_lua_fail(L, sb, &j->op);
  sb_lua_audit_ok(L, sb, &j->op, (lua_Integer)j->s.count);
  return n;
}

/* job:cancel(): stop the search (idempotent); result() then raises. */
static int m_cancel(lua_State *L) {
  job *j = luaL_checkudata(L, 1, JOB_MT);
  sb_forkjob_stop(&j->fj);
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
