/* What a remote command's start sends and what a failed one says
 * (remote/runner_impl.h): the spec the stream thread gives envd's Start,
 * the working directory as the engine names it, the start's failures in
 * the words a local start uses. */
#include "remote/runner_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The strings of the spec in one block the thread can read: the wrapper
 * and argv (remote/tree.h), the environment as name/value pairs with the
 * tree's mark last (a mark of the caller's is not kept), the working
 * directory. deadline: the watchdog's, 0 for none; guard and helper: the
 * runner's, when live (a live helper runs the command; the wrapper's form
 * is kept beside it for a helper found gone). */
/* A name a shell's eval may take (the login list's: nothing else gets in). */
static bool shell_name(const char *s, size_t n) {
  if (!n || (s[0] >= '0' && s[0] <= '9')) return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
      return false;
  return true;
}

bool sb_rr_build_spec(rproc *p, const sb_cmd *cmd, const char *cwd, double deadline, double grace,
                      const sb_rtree_guard *guard, const sb_rhelper *helper, bool check) {
  size_t nargs = 0, nenv = 0, bytes = strlen(cwd) + 1 + sizeof guard->spec + sizeof helper->path;
  bool login = p->rr->cfg.login;
  /* the login profile is the wrapper's to read; the template's check too */
  bool use_helper = helper->live && !login && !check;
  for (char *const *a = cmd->argv; *a; a++) nargs++, bytes += strlen(*a) + 1;
  for (char *const *v = cmd->envp; v && *v; v++) nenv++, bytes += (login ? 2 : 1) * (strlen(*v) + 1);
  if (login) bytes += sizeof SB_RTREE_VAR + 1;
  size_t nall = 1 + SB_RTREE_PREFIX + nargs, nhelp = SB_RHELPER_PREFIX + nargs;
  size_t ptrs = (nall + 1 + nhelp + 1 + 2 * (nenv + 2) + 1) * sizeof(char *);
  p->specsize = ptrs + bytes;
  char *m = p->specmem = malloc(p->specsize);
  if (!m) return false;
  const char **args = (const char **)m, **hargs = args + nall + 1, **env = hargs + nhelp + 1;
  char *s = m + ptrs;
  args[0] = SB_RTREE_SHELL;
  sb_rtree_prefix(args + 1, &p->nums, deadline, grace, guard, check);
  /* the guard's words as of now: the runner's may be made again meanwhile */
  size_t gl = strlen(args[SB_RTREE_PREFIX]) + 1;
  args[SB_RTREE_PREFIX] = memcpy(s, args[SB_RTREE_PREFIX], gl);
  s += gl;
  for (size_t i = 0; i < nargs; i++) {
    size_t n = strlen(cmd->argv[i]) + 1;
    args[1 + SB_RTREE_PREFIX + i] = memcpy(s, cmd->argv[i], n);
    s += n;
  }
  args[nall] = NULL;
  if (use_helper) { /* the same argv behind the helper's words; the wrapper's form kept for a helper gone */
    size_t hl = strlen(helper->path) + 1;
    sb_rtree_helper_prefix(hargs, &p->nums, memcpy(s, helper->path, hl), deadline, grace);
    s += hl;
    for (size_t i = 0; i < nargs; i++) hargs[SB_RHELPER_PREFIX + i] = args[1 + SB_RTREE_PREFIX + i];
    hargs[nhelp] = NULL;
  }
  size_t j = 0;
  for (size_t i = 0; i < nenv; i++) {
    size_t n = strlen(cmd->envp[i]) + 1;
    char *kv = memcpy(s, cmd->envp[i], n), *eq = strchr(kv, '=');
    s += n;
    if (!eq) continue;
    *eq = '\0';
    if (strcmp(kv, SB_RTREE_VAR) == 0) continue;
    env[j++] = kv;
    env[j++] = eq + 1;
  }
  if (login) { /* the names set here, set again after the profile */
    char *names = s;
    for (size_t i = 0; i < j; i += 2) {
      size_t n = strlen(env[i]);
      if (!shell_name(env[i], n)) continue;
      memcpy(s, env[i], n);
      s += n;
      *s++ = ' ';
    }
    memcpy(s, SB_RTREE_VAR, sizeof SB_RTREE_VAR);
    s += sizeof SB_RTREE_VAR;
    env[j++] = SB_RTREE_LOGIN;
    env[j++] = names;
  }
  env[j++] = SB_RTREE_VAR;
  env[j++] = p->tree.mark;
  env[j] = NULL;
  size_t n = strlen(cwd) + 1;
  p->spec.cwd = memcpy(s, cwd, n);
  p->sh_cmd = args[0];
  p->sh_args = args + 1;
  p->spec.cmd = use_helper ? hargs[0] : args[0];
  p->spec.args = use_helper ? hargs + 1 : args + 1;
  p->spec.env = env;
  p->t_helper = use_helper;
  p->kill_helper = use_helper ? hargs[0] : NULL;
  return true;
}

/* The working directory's absolute path in the remote sandbox. */
bool sb_rr_cwd(rrunner *rr, sb_cmd *cmd, char *out, size_t cap, sb_err *e) {
  sb_fs *fs = rr->cfg.fs;
  if (cmd->cwd->len == 0) { /* the root, checked when the backend opened: no round trip */
    if (snprintf(out, cap, "%s", rr->cfg.root) >= (int)cap) return sb_fail(e, SB_ENAMETOOLONG, NULL), false;
    return true;
  }
  sb_stat st;
  sb_bytes real;
  if (fs->be->stat(fs, cmd->cwd, true, &st, e) != SB_OK) return false;
  if (st.type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL), false;
  if (fs->be->realpath(fs, cmd->cwd, true, &real, e) != SB_OK) return false;
  size_t rl = strlen(rr->cfg.root) == 1 ? 0 : strlen(rr->cfg.root);
  if (snprintf(out, cap, "%.*s/%.*s", (int)rl, rr->cfg.root, (int)real.len, real.p) >= (int)cap)
    return sb_fail(e, SB_ENAMETOOLONG, NULL), false;
  if (!real.len && rl) out[rl] = '\0'; /* the root itself: no trailing "/" */
  return true;
}

sb_code sb_rr_start_failure(const rproc *p, sb_code code, const char *msg, sb_err *e) {
  if (code == SB_ENOENT) return sb_failf(e, SB_ENOENT, "command not found: %s", p->prog);
  if (code == SB_EACCES) return sb_failf(e, SB_EACCES, "permission denied (not executable): %s", p->prog);
  if (code == SB_ENOTSUP) /* fail closed: never a command whose tree could not be killed */
    return sb_failf(e, SB_ENOTSUP,
                    "remote: this sandbox's template cannot have a command's whole tree killed "
                    "(it needs /proc and a grep that takes -z, as GNU grep does): no command is run; "
                    "use a template with GNU grep");
  return sb_failf(e, code, "%s", msg);
}
