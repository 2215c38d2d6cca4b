#include "exec/spawn_child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "plat/fd.h"
#include "plat/proc.h"
#include "plat/resolve.h"

static const char *const names[] = {"setsid",
                                    "cgroup",
                                    "stdio",
                                    "cwd",
                                    "pdeathsig",
                                    "exec",
                                    "entering the PID namespace",
                                    "clone",
                                    "the zygote's setup"};

const char *sb_spawn_step_name(int step) {
  if (step >= SB_SP_CONFINE && step < SB_SP_COMMAND) return sb_confine_step_name(step - SB_SP_CONFINE);
  return step >= 0 && (unsigned)step < sizeof names / sizeof *names ? names[step] : "spawn";
}

#define CHILD SB_CHILD_FN

CHILD _Noreturn void sb_spawn_child_fail(sb_spawn_child *c, int step) {
  sb_child_msg m = {errno, step, 0};
  ssize_t w = write(c->errfd, &m, sizeof m);
  (void)w;
  _exit(127);
}
#define FAIL(c, what) sb_spawn_child_fail(c, what)

CHILD static void exec_search(sb_spawn_child *c, const sb_spawn_req *r) {
  const char *file = r->file;
  if (strchr(file, '/')) {
    execve(file, r->argv, r->envp);
    return;
  }
  const char *p = r->path ? r->path : "";
  size_t flen = strlen(file);
  int seen_eacces = 0;
  while (*p) {
    const char *end = strchr(p, ':');
    size_t dlen = end ? (size_t)(end - p) : strlen(p);
    if (dlen == 0) { /* an empty entry means the current directory */
      p = end ? end + 1 : p + dlen;
      continue;
    }
    if (dlen + 1 + flen < sizeof c->pathbuf) {
      memcpy(c->pathbuf, p, dlen);
      c->pathbuf[dlen] = '/';
      memcpy(c->pathbuf + dlen + 1, file, flen + 1);
      execve(c->pathbuf, r->argv, r->envp);
      if (errno == EACCES) seen_eacces = 1;
      else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) return;
    }
    p = end ? end + 1 : p + dlen;
  }
  errno = seen_eacces ? EACCES : ENOENT;
}

/* The working directory in the command's mount view: the root's path
 * there, then the path beneath it the host resolved (still beneath). The
 * opens are O_PATH ones, which Landlock does not check: a zygote's child
 * enters it under the layers already. */
CHILD static int view_cwd(const sb_confine_steps *s, const char *rel) {
  int root = open(s->view_root, SB_O_DIR | O_CLOEXEC);
  if (root < 0) return -1;
  int fd = rel && rel[0] ? sb_openat_beneath(root, rel, SB_O_DIR) : root;
  int r = fd < 0 ? -1 : fchdir(fd);
  if (fd >= 0 && fd != root) close(fd);
  close(root);
  return r;
}

CHILD int sb_spawn_command(void *arg) {
  sb_spawn_child *c = arg;
  const sb_spawn_req *r = c->req;
  const sb_confine_steps *s = r->steps;

  /* Handlers of the host must never run here; ignored signals are reset. */
  if (c->reset_signals) sb_child_default_signals();
  if (setsid() < 0) FAIL(c, SB_SP_SETSID);
  for (int i = c->born_in_cgroup; c->join_cgroups && i < SB_MAX_CGROUPS; i++)
    if (r->cgroup_procs_fds[i] >= 0 && write(r->cgroup_procs_fds[i], "0", 1) != 1) FAIL(c, SB_SP_CGROUP);
  if (dup2(r->stdin_fd, 0) < 0 || dup2(r->stdout_fd, 1) < 0 || dup2(r->stderr_fd, 2) < 0) FAIL(c, SB_SP_STDIO);
  int step;
  if (c->join && s && (step = sb_confine_join(s)) != 0) FAIL(c, SB_SP_CONFINE + step);
  if (s && s->view_root[0]) {
    if (view_cwd(s, r->cwd_rel) != 0) FAIL(c, SB_SP_CWD);
  } else if (r->cwd_fd >= 0 && fchdir(r->cwd_fd) != 0) {
    FAIL(c, SB_SP_CWD);
  }
  if (s && (step = sb_confine_limit(s)) != 0) FAIL(c, SB_SP_CONFINE + step);
  if (c->layers && s && (step = sb_confine_enter(s)) != 0) FAIL(c, SB_SP_CONFINE + step);
  /* a host that dies without disposing (SIGKILL, a crash) takes the leader
   * with it; the rest of its tree then has no parent to hold on to. After
   * the identity change, which would clear it; checked against the host
   * having died already (in a PID namespace the parent outside shows as 0,
   * and the namespace's init dies with the host anyway). */
  if (sb_die_with_parent() != 0 || getppid() != c->ppid) FAIL(c, SB_SP_PDEATHSIG);
  if (c->layers && s && (step = sb_confine_restrict(s)) != 0) FAIL(c, SB_SP_CONFINE + step);
  /* No descriptor of the host survives: Landlock does not cover files
   * opened before it, so this is part of the confinement too. Only the
   * error pipe stays, and it closes itself at exec. */
  sb_child_close_fds_as(c->errfd, -1, r->no_close_range);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  exec_search(c, r);
  FAIL(c, SB_SP_EXEC);
}
