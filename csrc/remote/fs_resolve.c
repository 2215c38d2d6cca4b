#include "remote/fs_impl.h"
#include "plat/bytes.h"

#include <string.h>

/* The absolute path in the remote sandbox of a real root-relative path. */
const char *sb_rm_abs(rfs *r, int slot, const char *rel, size_t rlen) {
  char *out = r->abs[slot];
  size_t n = r->rootlen == 1 ? 0 : r->rootlen;
  if (n + 1 + rlen >= sizeof r->abs[0]) return NULL;
  memcpy(out, r->root, n);
  if (rlen || !n) out[n++] = '/';
  memcpy(out + n, rel, rlen);
  out[n + rlen] = '\0';
  return out;
}

/* rel + "/" + name into out (an rnode's rel); false when too long. */
bool sb_rm_join(char *out, size_t *olen, const char *dir, size_t dlen, const char *name, size_t nlen) {
  size_t len = dlen + (dlen ? 1 : 0) + nlen;
  if (len > SB_PATH_MAX) return false;
  if (out != dir) memmove(out, dir, dlen);
  if (dlen) out[dlen] = '/';
  memcpy(out + len - nlen, name, nlen);
  out[len] = '\0';
  *olen = len;
  return true;
}

/* envd's words for the codes every backend has its own text for would name
 * paths inside the remote sandbox: those get the common text (the binding
 * adds the agent's path); the rest (EIO, EACCES, ...) keep envd's reason. */
sb_code sb_rm_plain(sb_code c, sb_err *e) {
  switch (c) {
  case SB_ENOENT:
  case SB_EEXIST:
  case SB_ENOTDIR:
  case SB_EISDIR:
  case SB_ENOTEMPTY: return sb_fail(e, c, NULL);
  default: return c;
  }
}

int sb_rm_type(sb_rtype t) {
  return t == SB_RDIR ? SB_T_DIR : t == SB_RLINK ? SB_T_SYMLINK : t == SB_RFILE ? SB_T_FILE : SB_T_OTHER;
}

/* Stat the entry at the real path rel (a link described, not followed). */
sb_code sb_rm_stat(sb_fs *fs, const char *rel, size_t rlen, rnode *out, sb_err *e) {
  rfs *r = RF(fs);
  const char *path = sb_rm_abs(r, 0, rel, rlen);
  if (!path) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  sb_rentry en;
  sb_json hold;
  sb_code c = sb_rm_plain(sb_envd_stat(&fs->mem, &r->d, path, &en, &hold, e), e);
  if (c == SB_OK) {
    out->type = sb_rm_type(en.type);
    out->size = out->type == SB_T_DIR ? 0 : en.size;
    out->mode = en.mode & 07777;
    out->mtime = en.mtime;
    out->tlen = 0; /* a link's text: read when the link is followed */
    out->have_text = false;
    out->target[0] = '\0';
    if (out->rel != rel) memmove(out->rel, rel, rlen);
    out->rel[rlen] = '\0';
    out->rlen = rlen;
  }
  sb_json_free(&hold);
  return c;
}

sb_code sb_rm_link_text(sb_fs *fs, rnode *n, sb_err *e) {
  if (n->have_text) return SB_OK;
  const char *path = sb_rm_abs(RF(fs), 1, n->rel, n->rlen);
  if (!path) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  sb_code c = sb_rm_readlink_cmd(fs, path, n->target, &n->tlen, e);
  n->have_text = c == SB_OK;
  return c;
}

/* Resolve a clean root-relative path as SPEC §4 says (the virtual tree's
 * rules, each component asked of envd): ".." climbs to the real parent,
 * links are spliced into what remains, an absolute target or a ".." above
 * the root is EESCAPE, more than SB_HOPS_MAX hops ELOOP; a final link is
 * followed with `follow` or when a spliced target put a "/" after it. */
static sb_code resolve(sb_fs *fs, const char *path, size_t len, bool follow, rnode *out, sb_err *e) {
  rfs *r = RF(fs);
  char *buf = r->work;
  size_t pos = 0, end = len;
  int hops = 0;
  memmove(buf, path, len);
  buf[end] = '\0';
  out->rlen = 0;
  out->rel[0] = '\0';
  out->followed = false;
  for (;;) {
    size_t clen, b = sb_path_next(buf, &pos, end, &clen);
    if (!clen) break;
    if (sb_path_is_dot(buf + b, clen)) continue;
    if (sb_path_is_dotdot(buf + b, clen)) {
      if (out->rlen == 0) return sb_fail(e, SB_EESCAPE, "path escapes the sandbox (through '..' or a symbolic link)");
      char *slash = sb_memrchr(out->rel, '/', out->rlen);
      out->rlen = slash ? (size_t)(slash - out->rel) : 0;
      out->rel[out->rlen] = '\0';
      continue;
    }
    bool final = !sb_path_more_after(buf, pos, end), slash = final && pos < end;
    size_t dlen = out->rlen, nl;
    if (!sb_rm_join(out->rel, &nl, out->rel, dlen, buf + b, clen)) return sb_fail(e, SB_ENAMETOOLONG, NULL);
    sb_code c = sb_rm_stat(fs, out->rel, nl, out, e);
    if (c != SB_OK) return c;
    if (out->type == SB_T_SYMLINK && (!final || follow || slash)) {
      if (++hops > SB_HOPS_MAX) return sb_fail(e, SB_ELOOP, NULL);
      if ((c = sb_rm_link_text(fs, out, e)) != SB_OK) return c;
      if (out->target[0] == '/')
        return sb_fail(e, SB_EESCAPE, "path escapes the sandbox (through '..' or a symbolic link)");
      size_t n = out->tlen, restlen = end - pos;
      if (n + restlen > SB_WORK_MAX) return sb_fail(e, SB_ENAMETOOLONG, NULL);
      memmove(buf + n, buf + pos, restlen);
      memcpy(buf, out->target, n);
      end = n + restlen;
      buf[end] = '\0';
      pos = 0;
      out->rlen = dlen; /* relative to the link's directory */
      out->rel[dlen] = '\0';
      out->followed = true;
      continue;
    }
    if (final) {
      if (slash && out->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
      return SB_OK;
    }
    if (out->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  }
  bool followed = out->followed;
  sb_code c = sb_rm_stat(fs, out->rel, out->rlen, out, e); /* where the path ended: the root, or after ".." */
  out->followed = followed;
  return c;
}

sb_code sb_rm_lookup(sb_fs *fs, const sb_path *p, bool follow, rnode *n, sb_err *e) {
  sb_code c = resolve(fs, p->buf, p->len, follow || p->must_dir, n, e);
  if (c == SB_OK && p->must_dir && n->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  return c;
}

/* The directory of components [0, k), followed like any intermediate one. */
sb_code sb_rm_resolve_dir(sb_fs *fs, const sb_path *p, unsigned k, rnode *n, sb_err *e) {
  if (k == 0) { /* the root: a directory, checked when the backend opened (one round trip less per call) */
    n->rel[0] = n->target[0] = '\0';
    n->rlen = n->tlen = 0;
    n->have_text = false;
    n->type = SB_T_DIR;
    n->size = 0;
    n->followed = false;
    return SB_OK;
  }
  sb_code c = resolve(fs, p->buf, k ? (size_t)p->off[k] - 1 : 0, true, n, e);
  if (c == SB_OK && n->type != SB_T_DIR) return sb_fail(e, SB_ENOTDIR, NULL);
  return c;
}

/* The parent of p's last component; with `create`, the deepest prefix that
 * resolves and in *miss the first component missing below it (created
 * later), as the other backends find it. */
sb_code sb_rm_find_parent(sb_fs *fs, const sb_path *p, bool create, rnode *dir, unsigned *miss, sb_err *e) {
  unsigned upto = p->ncomp - 1;
  *miss = upto;
  sb_code c = sb_rm_resolve_dir(fs, p, upto, dir, e);
  if (c != SB_ENOENT || !create) return c;
  unsigned k = upto;
  while (k > 0 && (c = sb_rm_resolve_dir(fs, p, --k, dir, e)) == SB_ENOENT) {}
  if (c != SB_OK) return c;
  for (unsigned i = k; i < p->ncomp; i++) {
    size_t len;
    const char *ci = sb_path_comp(p, i, &len);
    if (sb_path_is_dotdot(ci, len)) return sb_fail(e, SB_ENOENT, NULL);
  }
  size_t len, nl;
  const char *name = sb_path_comp(p, k, &len);
  rnode *probe = &RF(fs)->n[3];
  if (!sb_rm_join(probe->rel, &nl, dir->rel, dir->rlen, name, len)) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  if ((c = sb_rm_stat(fs, probe->rel, nl, probe, e)) == SB_OK) return sb_fail(e, SB_ENOENT, NULL); /* a dangling link */
  if (c != SB_ENOENT) return c;
  *miss = k;
  return SB_OK;
}

/* The parent of p's last component and that entry (ent->type 0: none),
 * links in the parent followed, the entry itself not. */
sb_code sb_rm_find_entry(sb_fs *fs, const sb_path *p, rnode *dir, rnode *ent, sb_err *e) {
  unsigned miss;
  sb_code c = sb_rm_find_parent(fs, p, false, dir, &miss, e);
  if (c != SB_OK) return c;
  size_t nlen, rl;
  const char *name = sb_path_comp(p, p->ncomp - 1, &nlen);
  if (!sb_rm_join(ent->rel, &rl, dir->rel, dir->rlen, name, nlen)) return sb_fail(e, SB_ENAMETOOLONG, NULL);
  c = sb_rm_stat(fs, ent->rel, rl, ent, e);
  if (c == SB_ENOENT) {
    ent->type = 0;
    ent->rlen = rl;
    return SB_OK;
  }
  return c;
}

/* Where a link was followed, the rules judge the real path (n's, plus a
 * name when given), as the container judges every path. */
sb_code sb_rm_recheck(sb_fs *fs, const rnode *n, const char *name, size_t nlen, sb_access acc, int kind, sb_err *e) {
  if (!n->followed || !sb_policy_judges_entries(fs->policy)) return SB_OK;
  char real[SB_PATH_MAX + SB_NAME_MAX + 2];
  size_t len = n->rlen;
  memcpy(real, n->rel, len);
  if (name) {
    if (len) real[len++] = '/';
    memcpy(real + len, name, nlen);
    len += nlen;
  }
  real[len] = '\0';
  return sb_policy_check(fs->policy, acc, real, len, kind, e);
}

sb_code sb_rm_read_abs(sb_fs *fs, const char *path, sb_buf *b, sb_err *e) {
  rfs *r = RF(fs);
  uint64_t max = fs->policy->max_read_bytes;
  size_t cap = max > ((uint64_t)1 << 40) ? (size_t)1 << 40 : (size_t)max;
  sb_buf_free(&fs->mem, b);
  sb_code c = sb_rm_plain(sb_envd_read(&fs->mem, &r->d, path, cap ? cap : 1, b, e), e);
  if (c == SB_EFBIG) return sb_policy_read_size(fs->policy, max + 1, e);
  if (c == SB_OK && sb_buf_reserve(&fs->mem, b, 1) != 0) return sb_fail_oom(e);
  if (c == SB_OK) b->p[b->len] = '\0';
  return c;
}
