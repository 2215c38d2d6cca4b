/* The file operations envd has no call for, made by a command in the
 * remote sandbox, as its user: a link's text (readlink), a new link (ln -s),
 * a mode kept across an atomic write (chmod), and a listing where envd's
 * cannot be had (find). Each is one Start, run to its end; paths reach the
 * command as arguments, never through a shell. */
#include "remote/fs_impl.h"

#include <stdio.h>
#include <string.h>

#include "remote/process.h"

typedef struct runout {
  char err[200]; /* the first bytes of stderr */
  size_t elen;
  char *out; /* stdout, up to cap bytes (NULL: not kept) */
  size_t olen, cap;
  bool over; /* stdout had more than cap */
  int code;
  bool exited;
} runout;

static sb_code run_cb(void *ud, const sb_rproc_event *ev, sb_err *e) {
  (void)e;
  runout *o = ud;
  if (ev->kind == SB_REV_STDERR && o->elen < sizeof o->err - 1) {
    size_t n = ev->len < sizeof o->err - 1 - o->elen ? ev->len : sizeof o->err - 1 - o->elen;
    memcpy(o->err + o->elen, ev->data, n);
    o->elen += n;
  } else if (ev->kind == SB_REV_STDOUT && o->out) {
    size_t n = ev->len < o->cap - o->olen ? ev->len : o->cap - o->olen;
    memcpy(o->out + o->olen, ev->data, n);
    o->olen += n;
    o->over |= n < ev->len;
  } else if (ev->kind == SB_REV_END) {
    o->code = ev->exit_code;
    o->exited = ev->exited;
  }
  return SB_OK;
}

/* Run cmd to its end; SB_OK with o filled whatever its status (the caller
 * judges it); o->err ends at its first line. */
static sb_code run(sb_fs *fs, const char *cmd, const char *const *args, const char *cwd, runout *o, sb_err *e) {
  sb_rproc_spec s = {.cmd = cmd, .args = args, .cwd = cwd, .deadline = 30, .keepalive = 1};
  o->code = -1;
  sb_code c = sb_envd_start(&fs->mem, &RF(fs)->d, &s, run_cb, o, e);
  o->err[o->elen] = '\0';
  o->err[strcspn(o->err, "\n")] = '\0';
  return c;
}

sb_code sb_rm_readlink_cmd(sb_fs *fs, const char *abs, char *text, size_t *len, sb_err *e) {
  const char *args[] = {"-n", "--", abs + 1, NULL}; /* from "/", as chmod's */
  runout o = {.out = text, .cap = SB_PATH_MAX};
  sb_code c = run(fs, "readlink", args, "/", &o, e);
  if (c != SB_OK) return c;
  if (!o.exited || o.code != 0)
    return sb_failf(e, o.code == 127 ? SB_ENOTSUP : SB_EIO, "remote: readlink: %s",
                    o.elen              ? o.err
                        : o.code == 127 ? "not found in the sandbox"
                                        : "failed");
  if (o.over) return sb_fail(e, SB_ENAMETOOLONG, "remote: a link's text is longer than a path may be");
  if (o.olen == 0) return sb_fail(e, SB_EIO, "remote: readlink: the link changed while it was read");
  text[o.olen] = '\0';
  *len = o.olen;
  return SB_OK;
}

sb_code sb_rm_ln(sb_fs *fs, const char *text, const char *dpath, const char *name, size_t nlen, sb_err *e) {
  char lname[SB_NAME_MAX + 3] = "./"; /* in the link's directory: no path of ours reaches ln but that one */
  memcpy(lname + 2, name, nlen);
  lname[nlen + 2] = '\0';
  const char *args[] = {"-s", "--", text, lname, NULL};
  runout o = {0};
  sb_code c = run(fs, "ln", args, dpath, &o, e);
  if (c != SB_OK || (o.exited && o.code == 0)) return c;
  return sb_failf(e, strstr(o.err, "File exists") ? SB_EEXIST : SB_EIO, "remote: ln -s: %s", o.elen ? o.err : "failed");
}

sb_code sb_rm_chmod(sb_fs *fs, const char *path, unsigned mode, sb_err *e) {
  char m[8];
  snprintf(m, sizeof m, "%04o", mode);
  const char *args[] = {m, "--", path + 1, NULL}; /* from "/": the engine's filesystem root */
  runout o = {0};
  sb_code c = run(fs, "chmod", args, "/", &o, e);
  if (c == SB_OK && (!o.exited || o.code != 0))
    c = sb_failf(e, SB_EIO, "remote: the file's mode (%s) could not be kept: chmod ended with %d; nothing written", m,
                 o.code);
  return c;
}

/* ---- find: a listing streamed as it is made ------------------------------ */

#define FIND_MAX_BYTES ((size_t)256 << 20) /* a walk's names, at most */

typedef struct finding {
  sb_fs *fs;
  sb_rm_found_fn fn;
  void *ud;
  sb_buf carry; /* a record not complete yet */
  size_t total;
  sb_code failed; /* fn's, or EFBIG */
  runout o;
} finding;

/* One record: "<type letter> <size> <path below the start>" (find's %y %s %P). */
static sb_code found(finding *f, const char *r, size_t len, sb_err *e) {
  const char *sp = len > 2 && r[1] == ' ' ? memchr(r + 2, ' ', len - 2) : NULL;
  if (!sp) return sb_fail(e, SB_EIO, "remote: find: a record it should not print");
  uint64_t size = 0;
  for (const char *q = r + 2; q < sp; q++) size = size * 10 + (uint64_t)(*q >= '0' && *q <= '9' ? *q - '0' : 0);
  int type = r[0] == 'f' ? SB_T_FILE : r[0] == 'd' ? SB_T_DIR : r[0] == 'l' ? SB_T_SYMLINK : SB_T_OTHER;
  size_t plen = len - (size_t)(sp + 1 - r);
  if (!plen) return SB_OK; /* the start itself */
  return f->fn(f->ud, sp + 1, plen, type, type == SB_T_DIR ? 0 : size, e);
}

static sb_code find_cb(void *ud, const sb_rproc_event *ev, sb_err *e) {
  finding *f = ud;
  if (ev->kind != SB_REV_STDOUT) return run_cb(&f->o, ev, e);
  if (f->failed != SB_OK) return SB_OK;
  f->total += ev->len;
  if (f->total > FIND_MAX_BYTES) {
    f->failed =
        sb_failf(e, SB_EFBIG, "remote: the tree is too large to walk (over %zu MiB of names)", FIND_MAX_BYTES >> 20);
    return SB_OK;
  }
  const char *p = ev->data, *end = p + ev->len;
  while (p < end && f->failed == SB_OK) {
    const char *z = memchr(p, '\0', (size_t)(end - p));
    if (!z) {
      if (sb_buf_append(&f->fs->mem, &f->carry, p, (size_t)(end - p)) != 0) f->failed = sb_fail_oom(e);
      break;
    }
    if (f->carry.len) {
      if (sb_buf_append(&f->fs->mem, &f->carry, p, (size_t)(z - p)) != 0) f->failed = sb_fail_oom(e);
      else f->failed = found(f, f->carry.p, f->carry.len, e);
      f->carry.len = 0;
    } else {
      f->failed = found(f, p, (size_t)(z - p), e);
    }
    p = z + 1;
  }
  return SB_OK;
}

sb_code sb_rm_find(sb_fs *fs, const char *abs, int maxdepth, sb_rm_found_fn fn, void *ud, sb_err *e) {
  char depth[16], start[2 * SB_PATH_MAX + 8];
  snprintf(depth, sizeof depth, "%d", maxdepth);
  /* from "/" as readlink's; "./" so that no start reads as an option */
  if (snprintf(start, sizeof start, ".%s", abs) >= (int)sizeof start) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  const char *args[] = {"-P", start, "-mindepth", "1", "-maxdepth", depth, "-printf", "%y %s %P\\0", NULL};
  finding f = {.fs = fs, .fn = fn, .ud = ud, .failed = SB_OK};
  sb_rproc_spec s = {.cmd = "find", .args = args, .cwd = "/", .keepalive = 1};
  f.o.code = -1;
  sb_code c = sb_envd_start(&fs->mem, &RF(fs)->d, &s, find_cb, &f, e);
  sb_buf_free(&fs->mem, &f.carry);
  if (c != SB_OK) return c;
  if (f.failed != SB_OK) return f.failed;
  f.o.err[f.o.elen] = '\0';
  /* exit 1 with "Permission denied": what the user may not read is left
   * out, as a local walk leaves it */
  if (f.o.exited && (f.o.code == 0 || (f.o.code == 1 && strstr(f.o.err, "Permission denied")))) return SB_OK;
  f.o.err[strcspn(f.o.err, "\n")] = '\0';
  return sb_failf(e, f.o.code == 127 || strstr(f.o.err, "printf") ? SB_ENOTSUP : SB_EIO, "remote: find: %s",
                  f.o.elen              ? f.o.err
                      : f.o.code == 127 ? "not found in the sandbox"
                                        : "failed");
}
