/* Many files in one exchange (sb_backend want_ref / fetch_wanted): what a
 * remote grep reads. One envd Start of GNU tar over a chunk of the noted
 * paths (--no-recursion: a path that became a directory is not descended;
 * no link followed; --hard-dereference: every name of a file carries its
 * bytes), read as it streams (remote/tar.c), instead of a /files call, one
 * round trip, per file. Files tar did not send (gone, unreadable, no longer
 * regular) are read one by one, so each comes back with the code a read
 * gives; where the sandbox has no GNU tar, all of them are. */
#include "remote/fs_impl.h"

#include <signal.h>
#include <string.h>

#include "remote/process.h"
#include "remote/tar.h"

#define CHUNK_FILES 1024 /* paths per tar */
#define CHUNK_NAMES (192u << 10) /* bytes of paths per tar (envd's request stays small) */
#define TAR_DEADLINE 600 /* seconds a tar may run on the engine */

typedef struct rwant {
  size_t off, len; /* the absolute path, in wnames */
  uint64_t size; /* as listed */
  void *tag;
  sb_code refused; /* SB_OK, or why it is not fetched (above max_read_bytes) */
} rwant;

bool sb_rm_want_ref(sb_fs *fs, const void *ref, void *tag) {
  rfs *r = RF(fs);
  char path[2 * SB_PATH_MAX + 4];
  uint64_t size;
  size_t len = sb_rm_ref_path(ref, path, sizeof path, &size);
  if (r->nwant == r->capwant) {
    size_t cap = r->capwant ? 2 * r->capwant : 64;
    rwant *v = sb_realloc(&fs->mem, r->want, r->capwant * sizeof *v, cap * sizeof *v);
    if (!v) return false;
    r->want = v;
    r->capwant = cap;
  }
  sb_err ignore;
  rwant *w = &r->want[r->nwant];
  *w = (rwant){.off = r->wnames.len, .len = len, .size = size, .tag = tag};
  w->refused = !len ? SB_ENAMETOOLONG : sb_policy_read_size(fs->policy, size, &ignore);
  if (sb_buf_append(&fs->mem, &r->wnames, path, len) != 0 || sb_buf_append(&fs->mem, &r->wnames, "", 1) != 0)
    return false;
  r->nwant++;
  return true;
}

void sb_rm_want_free(sb_fs *fs) {
  rfs *r = RF(fs);
  sb_free(&fs->mem, r->want, r->capwant * sizeof *r->want);
  r->want = NULL;
  r->nwant = r->capwant = 0;
  sb_buf_free(&fs->mem, &r->wnames);
}

/* ---- one chunk through tar ------------------------------------------------ */

typedef struct chunk {
  sb_fs *fs;
  size_t from, to, next; /* the chunk's notes; the next one tar may send */
  bool *sent; /* per note of the chunk: handed back */
  size_t cur; /* the note being received, or SIZE_MAX (an entry not asked for) */
  bool too_big;
  sb_tar tar;
  bool any; /* tar sent something */
  uint32_t pid;
  sb_fetch_fn fn;
  void *ud;
  bool stop; /* fn said stop */
} chunk;

static const char *wname(rfs *r, size_t i) { return r->wnames.p + r->want[i].off; }

static sb_code on_entry(void *ud, sb_tar_ev ev, const char *p, size_t n, uint64_t size, sb_err *e) {
  chunk *k = ud;
  rfs *r = RF(k->fs);
  if (ev == SB_TAR_BEGIN) { /* tar's names are the paths without their "/" */
    k->cur = SIZE_MAX;
    for (size_t i = k->next; i < k->to; i++)
      if (r->want[i].len == n + 1 && memcmp(wname(r, i) + 1, p, n) == 0) {
        k->cur = i;
        k->next = i + 1;
        break;
      }
    r->ref.len = 0;
    k->too_big = k->cur != SIZE_MAX && sb_policy_read_size(k->fs->policy, size, &(sb_err){.code = SB_OK}) != SB_OK;
    return SB_OK;
  }
  if (k->cur == SIZE_MAX) return SB_OK;
  if (ev == SB_TAR_DATA) {
    if (k->too_big) return SB_OK;
    return sb_buf_append(&k->fs->mem, &r->ref, p, n) == 0 ? SB_OK : sb_fail_oom(e);
  }
  size_t i = k->cur; /* SB_TAR_END */
  k->sent[i - k->from] = true;
  bool go = k->fn(k->ud, r->want[i].tag, r->ref.p ? r->ref.p : "", r->ref.len, k->too_big ? SB_EFBIG : SB_OK);
  if (!go) {
    k->stop = true;
    return sb_fail(e, SB_EAGAIN, "stopped");
  }
  return SB_OK;
}

static sb_code on_tar(void *ud, const sb_rproc_event *ev, sb_err *e) {
  chunk *k = ud;
  if (ev->kind == SB_REV_START) k->pid = ev->pid;
  if (ev->kind != SB_REV_STDOUT) return SB_OK; /* tar's warnings (a file gone) are not read */
  k->any = true;
  return sb_tar_feed(&k->tar, ev->data, ev->len, e);
}

/* Run tar over notes [from, to); k->sent says what came back. */
static sb_code tar_chunk(sb_fs *fs, chunk *k, sb_err *e) {
  rfs *r = RF(fs);
  size_t n = k->to - k->from;
  /* paths relative to the working directory "/" (an engine's filesystem root) */
  const char *fixed[] = {
      "-c", "-f", "-", "--format=gnu", "--no-recursion", "--hard-dereference", "--ignore-failed-read", "--"};
  size_t nf = sizeof fixed / sizeof *fixed;
  const char **args = sb_malloc(&fs->mem, (nf + n + 1) * sizeof *args);
  if (!args) return sb_fail_oom(e);
  memcpy(args, fixed, sizeof fixed);
  for (size_t i = 0; i < n; i++) args[nf + i] = wname(r, k->from + i) + 1;
  args[nf + n] = NULL;
  sb_rproc_spec s = {.cmd = "tar", .args = args, .cwd = "/", .deadline = TAR_DEADLINE, .keepalive = 1};
  sb_tar_init(&k->tar, &fs->mem, on_entry, k);
  sb_code c = sb_envd_start(&fs->mem, &r->d, &s, on_tar, k, e);
  if (k->stop && k->pid) sb_envd_signal(&fs->mem, &r->d, k->pid, 9, &(sb_err){.code = SB_OK}); /* let go of it */
  if (c == SB_OK && k->any && !sb_tar_done(&k->tar)) c = sb_fail(e, SB_EIO, "remote: tar's stream ended early");
  sb_tar_free(&k->tar);
  sb_free(&fs->mem, args, (nf + n + 1) * sizeof *args);
  /* nothing came, and not for the link's sake: no (GNU) tar there (even an
   * archive of files all gone has its end blocks) */
  if (!k->any && !k->stop && c != SB_EIO) r->no_tar = true;
  return k->stop ? SB_OK : c;
}

/* One note read alone, as open_ref reads it. A link or engine that fails
 * (EIO) is the fetch's own failure, said in e: never a file quietly left out. */
static bool one(sb_fs *fs, size_t i, sb_fetch_fn fn, void *ud, sb_code *fail, sb_err *e) {
  rfs *r = RF(fs);
  sb_err fe = {.code = SB_OK};
  sb_code c = sb_rm_read_abs(fs, wname(r, i), &r->ref, &fe);
  if (c == SB_EIO && *fail == SB_OK) {
    *e = fe;
    *fail = c;
  }
  return fn(ud, r->want[i].tag, r->ref.p ? r->ref.p : "", c == SB_OK ? r->ref.len : 0, c) && c != SB_EIO;
}

sb_code sb_rm_fetch_wanted(sb_fs *fs, bool fetch, sb_fetch_fn fn, void *ud, sb_err *e) {
  rfs *r = RF(fs);
  sb_code c = SB_OK;
  size_t i = 0;
  bool go = fetch;
  while (go && i < r->nwant) {
    if (r->want[i].refused != SB_OK) {
      go = fn(ud, r->want[i].tag, NULL, 0, r->want[i].refused);
      i++;
      continue;
    }
    size_t to = i, bytes = 0; /* the chunk: notes that can be fetched */
    while (to < r->nwant && to - i < CHUNK_FILES && r->want[to].refused == SB_OK && bytes < CHUNK_NAMES)
      bytes += r->want[to++].len + 1;
    bool *sent = sb_malloc(&fs->mem, to - i);
    if (!sent) {
      c = sb_fail_oom(e);
      break;
    }
    memset(sent, 0, to - i);
    chunk k = {.fs = fs, .from = i, .to = to, .next = i, .sent = sent, .fn = fn, .ud = ud};
    if (!r->no_tar) { /* a broken stream: what it did not bring is read below */
      sb_err te = {.code = SB_OK};
      if (tar_chunk(fs, &k, &te) != SB_OK && te.code == SB_ENOSPC && c == SB_OK) *e = te, c = te.code;
    }
    go = !k.stop && c == SB_OK;
    for (size_t j = i; j < to; j++) { /* what tar did not send: read alone, or handed back */
      if (sent[j - i]) continue;
      if (go) go = one(fs, j, fn, ud, &c, e);
      else fn(ud, r->want[j].tag, NULL, 0, SB_EAGAIN);
    }
    i = to;
    sb_free(&fs->mem, sent, to - k.from);
  }
  for (; i < r->nwant; i++) fn(ud, r->want[i].tag, NULL, 0, SB_EAGAIN);
  r->nwant = 0;
  r->wnames.len = 0;
  sb_buf_trim(&fs->mem, &r->ref, 1 << 20);
  return c;
}
