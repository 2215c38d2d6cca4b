/* Spawning a local command and watching it (exec/local_impl.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "exec/local_impl.h"
#include "exec/spawn.h"
#include "exec/zygote.h"
#include "plat/fd.h"

static void close_fds(int *fds, int n) {
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0) close(fds[i]);
}

/* Child ends must not be 0-2 (dup2 onto themselves would keep CLOEXEC). */
static int high_fd(int fd) {
  if (fd >= 3) return fd;
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return h;
}

static sb_code spawn_error(sb_err *e, const sb_spawn_res *res, const char *file) {
  int err = res->err;
  const char *step = res->step ? res->step : "spawn";
  if (strcmp(step, "exec") == 0) {
    if (err == ENOENT) return sb_failf(e, SB_ENOENT, "command not found: %.200s", file);
    if (err == EACCES)
      return sb_failf(e, SB_EACCES, "permission denied (not executable, or outside what the sandbox allows): %.200s",
                      file);
    if (err == ENOEXEC) return sb_failf(e, SB_EACCES, "not an executable format: %.200s", file);
  }
  if (strcmp(step, "cwd") == 0)
    return sb_failf(e, sb_code_from_errno(err), "cannot enter the working directory (%s)", strerror(err));
  if (strcmp(step, "clone") == 0 && (err == EAGAIN || err == ENOMEM))
    return sb_failf(e, SB_EAGAIN, "cannot create a process (%s)", strerror(err));
  return sb_failf(e, sb_code_from_errno(err) == SB_EIO ? SB_EIO : sb_code_from_errno(err),
                  "starting the command failed at %s: %s", step, strerror(err));
}

/* A sandbox's confined commands go through its zygote from the second on:
 * one that runs a single command does not pay for making it. One that
 * died is made again, up to three times. */
static struct sb_zygote *zygote_for(local *lr) {
  if (lr->cfg.no_zygote || !sb_confine_has_layers(lr->cfg.steps)) return NULL;
  if (lr->zygote && !sb_zygote_alive(lr->zygote)) {
    sb_zygote_free(lr->zygote);
    lr->zygote = NULL;
    lr->zygote_failures++;
  }
  if (!lr->zygote && lr->spawned++ > 0 && lr->zygote_failures < 3) {
    lr->zygote = sb_zygote_new(lr->cfg.steps);
    if (!lr->zygote) lr->zygote_failures++;
  }
  return lr->zygote;
}

sb_proc *sb_local_start(sb_runner *r, sb_cmd *cmd, sb_err *e) {
  local *lr = LR(r);
  sb_fs *fs = lr->cfg.fs;
  if (!fs || !fs->be->cmd) {
    sb_fail(e, SB_ENOTSUP, "this sandbox's files cannot be given to a local command");
    return NULL;
  }
  if (sb_local_loop_init(lr, e) != 0) return NULL;
  char rel[SB_PATH_MAX + 1];
  int cwdfd = fs->be->cmd->open_cwd(fs, cmd->cwd, rel, sizeof rel, e);
  if (cwdfd < 0) {
    cmd->cwd_failed = true;
    return NULL;
  }
  const sb_mem *m = &lr->mem;
  lproc *p = sb_malloc(m, sizeof *p);
  if (!p) {
    close(cwdfd);
    sb_fail_oom(e);
    return NULL;
  }
  memset(p, 0, sizeof *p);
  sb_proc *b = &p->base;
  p->lr = lr;
  p->mem = *m;
  p->pidfd = -1;
  sb_cmdtree_init(&p->tree, lr->cfg.limits);
  sb_proc_init(b, r, cmd, lr->cfg.max_output);

  /* stdin: a pipe when there is input to give, /dev/null otherwise; or
   * the host's own three (agent-sandbox run), copied above 2 so the child's
   * dup2 clears their close-on-exec */
  bool inherit = cmd->inherit_stdio;
  bool want_in = !inherit && ((cmd->stdin_data && cmd->stdin_len) || cmd->keep_stdin);
  int fds[6] = {-1, -1, -1, -1, -1, -1}; /* in r/w, out r/w, err r/w */
  sb_spawn_req req = {.file = cmd->argv[0],
                      .argv = cmd->argv,
                      .envp = cmd->envp,
                      .path = cmd->path,
                      .cwd_fd = cwdfd,
                      .cwd_rel = rel,
                      .steps = lr->cfg.steps,
                      .stack = lr->stack,
                      .no_pidfd = lr->cfg.no_pidfd,
                      .no_close_range = lr->cfg.no_close_range,
                      .no_clone3 = lr->cfg.no_clone3,
                      .zygote = zygote_for(lr)};
  if (inherit) {
    fds[0] = fcntl(0, F_DUPFD_CLOEXEC, 3);
    fds[3] = fcntl(1, F_DUPFD_CLOEXEC, 3);
    fds[5] = fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (fds[0] < 0 || fds[3] < 0 || fds[5] < 0) {
      sb_failf(e, SB_EINVAL, "the host's standard input, output and error must be open (%s)", strerror(errno));
      goto fail;
    }
  } else if ((want_in && sb_pipe_cloexec(fds)) || sb_pipe_cloexec(fds + 2) || sb_pipe_cloexec(fds + 4)) {
    sb_fail_errno(e, errno);
    goto fail;
  } else {
    if (want_in) fds[0] = high_fd(fds[0]);
    fds[3] = high_fd(fds[3]);
    fds[5] = high_fd(fds[5]);
  }
  if (!sb_cmdtree_create(&p->tree, req.cgroup_procs_fds, &req.cgroup_into_fd, e)) goto fail;
  req.no_clone3 |= lr->born_in_leaf < 0;
  req.born_unverified = lr->born_in_leaf == 0;
  req.stdin_fd = want_in || inherit ? fds[0] : lr->devnull;
  req.stdout_fd = fds[3];
  req.stderr_fd = fds[5];
  sb_spawn_res res;
  int spawned = sb_spawn(&req, &res);
  if (res.born_in) lr->born_in_leaf = (signed char)res.born_in; /* once per sandbox */
  if (spawned != 0) {
    sb_cmdtree_remove(&p->tree);
    spawn_error(e, &res, req.file);
    goto fail;
  }
  close(cwdfd);
  int child_ends[] = {0, 3, 5};
  for (int i = 0; i < 3; i++)
    if (fds[child_ends[i]] >= 0) close(fds[child_ends[i]]);
  b->id = ++r->next_id;
  b->pid = res.pid;
  p->pidfd = res.pidfd;
  b->t0 = sb_now();

  uv_loop_t *loop = &lr->loop;
  uv_timer_init(loop, &p->t_timeout);
  uv_timer_init(loop, &p->t_kill);
  uv_timer_init(loop, &p->t_drain);
  void *handles[] = {&p->t_timeout, &p->t_kill, &p->t_drain, &p->out[0], &p->out[1]};
  int nh = inherit ? 3 : 5;
  if (!inherit) {
    uv_pipe_init(loop, &p->out[0], 0);
    uv_pipe_init(loop, &p->out[1], 0);
    uv_pipe_open(&p->out[0], fds[2]);
    uv_pipe_open(&p->out[1], fds[4]);
  }
  p->base.eof[0] = p->base.eof[1] = inherit; /* nothing to drain */
  for (int i = 0; i < nh; i++) ((uv_handle_t *)handles[i])->data = p;
  p->open_handles = nh;
  if (want_in) {
    uv_pipe_init(loop, &p->in, 0);
    uv_pipe_open(&p->in, fds[1]);
    p->in.data = p;
    p->open_handles++;
  }
  if (p->pidfd >= 0) {
    uv_poll_init(loop, &p->exit_poll, p->pidfd);
    p->exit_poll.data = p;
    p->open_handles++;
    uv_poll_start(&p->exit_poll, UV_READABLE, sb_lp_on_pidfd);
  } else { /* no pidfd: poll for the exit */
    uv_timer_init(loop, &p->t_reap);
    p->t_reap.data = p;
    p->open_handles++;
    uv_timer_start(&p->t_reap, sb_lp_on_reap_tick, 1, 1);
  }
  if (!inherit) {
    uv_read_start((uv_stream_t *)&p->out[0], sb_lp_on_alloc, sb_lp_on_read);
    uv_read_start((uv_stream_t *)&p->out[1], sb_lp_on_alloc, sb_lp_on_read);
  }
  uv_update_time(loop); /* timers count from now, not from the last turn */
  if (cmd->timeout > 0) uv_timer_start(&p->t_timeout, sb_lp_on_timeout, sb_local_ms(cmd->timeout), 0);
  p->in_open = want_in;
  if (cmd->stdin_data && cmd->stdin_len) sb_lp_write_stdin(p, cmd->stdin_data, cmd->stdin_len, !cmd->keep_stdin);
  b->next = r->procs;
  r->procs = b;
  fs->outside++;
  p->outside = true;
  fs->be->cmd->changed(fs); /* the command may change the tree from now on */
  lr->stirred = true;
  return b;
fail:
  close(cwdfd);
  close_fds(fds, 6);
  sb_free(m, p, sizeof *p);
  return NULL;
}
