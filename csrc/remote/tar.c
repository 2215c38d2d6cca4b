#include "remote/tar.h"

#include <string.h>

enum { ST_HEADER, ST_DATA, ST_PAD };
enum { K_FILE, K_LONGNAME, K_SKIP };

/* An octal field (spaces or NULs around the digits), or false. Base-256
 * sizes (GNU, above 8 GiB) are refused: nothing that large is fetched. */
static bool octal(const unsigned char *f, size_t n, uint64_t *out) {
  size_t i = 0;
  while (i < n && f[i] == ' ') i++;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
    if (v >> 60) return false;
    v = v * 8 + (uint64_t)(f[i] - '0');
  }
  for (; i < n; i++)
    if (f[i] != ' ' && f[i] != '\0') return false;
  *out = v;
  return digits > 0;
}

static bool zero_block(const unsigned char *h) {
  for (size_t i = 0; i < 512; i++)
    if (h[i]) return false;
  return true;
}

static bool checksum_ok(const unsigned char *h) {
  uint64_t want;
  if (!octal(h + 148, 8, &want)) return false;
  uint64_t sum = 0;
  for (size_t i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? ' ' : h[i];
  return sum == want;
}

static sb_code bad(sb_err *e, const char *why) { return sb_failf(e, SB_EIO, "remote: a tar stream %s", why); }

/* The entry's name: a preceding long name, else ustar's prefix "/" name. */
static sb_code begin(sb_tar *t, uint64_t size, sb_err *e) {
  char name[SB_TAR_NAME_MAX + 1];
  size_t n;
  if (t->have_long) {
    n = strnlen(t->longname.p ? t->longname.p : "", t->longname.len);
    memcpy(name, t->longname.p, n);
  } else {
    const unsigned char *h = t->hdr;
    size_t nl = strnlen((const char *)h, 100), pl = 0;
    if (memcmp(h + 257, "ustar\0", 6) == 0) pl = strnlen((const char *)h + 345, 155); /* POSIX ustar */
    n = 0;
    if (pl) {
      memcpy(name, h + 345, pl);
      name[pl] = '/';
      n = pl + 1;
    }
    memcpy(name + n, h, nl);
    n += nl;
  }
  name[n] = '\0';
  t->have_long = false;
  t->longname.len = 0;
  if (!n) return bad(e, "names an entry with no name");
  return t->fn(t->ud, SB_TAR_BEGIN, name, n, size, e);
}

static sb_code header(sb_tar *t, sb_err *e) {
  const unsigned char *h = t->hdr;
  if (zero_block(h)) {
    if (t->have_long) return bad(e, "ends after a long name");
    t->ended = true;
    return SB_OK;
  }
  if (!checksum_ok(h)) return bad(e, "has a header whose checksum is wrong");
  uint64_t size;
  if (!octal(h + 124, 12, &size)) return bad(e, "has a header with no size");
  char type = (char)h[156];
  t->left = size;
  t->pad = (size_t)((512 - size % 512) % 512);
  t->state = size ? ST_DATA : t->pad ? ST_PAD : ST_HEADER;
  if (type == 'L') {
    if (size > SB_TAR_NAME_MAX) return bad(e, "has a name too long");
    t->kind = K_LONGNAME;
    t->longname.len = 0;
    t->have_long = true;
    return SB_OK;
  }
  if (type == '0' || type == '\0' || type == '7') { /* regular (and contiguous) files */
    t->kind = K_FILE;
    sb_code c = begin(t, size, e);
    if (c == SB_OK && !size) c = t->fn(t->ud, SB_TAR_END, NULL, 0, 0, e);
    return c;
  }
  t->kind = K_SKIP; /* links, directories, devices, pax and GNU extras */
  t->have_long = type == 'K' && t->have_long; /* a long link name does not take the long name */
  if (type != 'K') t->longname.len = 0;
  return SB_OK;
}

void sb_tar_init(sb_tar *t, const sb_mem *m, sb_tar_fn fn, void *ud) {
  memset(t, 0, sizeof *t);
  t->m = m;
  t->fn = fn;
  t->ud = ud;
  t->state = ST_HEADER;
}

sb_code sb_tar_feed(sb_tar *t, const char *p, size_t n, sb_err *e) {
  sb_code c = SB_OK;
  while (n && c == SB_OK) {
    if (t->ended) return SB_OK; /* what follows the end (more zero blocks) is not read */
    if (t->state == ST_HEADER) {
      size_t k = 512 - t->hlen < n ? 512 - t->hlen : n;
      memcpy(t->hdr + t->hlen, p, k);
      t->hlen += k, p += k, n -= k;
      if (t->hlen == 512) {
        t->hlen = 0;
        c = header(t, e);
      }
    } else if (t->state == ST_DATA) {
      size_t k = t->left < n ? (size_t)t->left : n;
      if (t->kind == K_FILE) c = t->fn(t->ud, SB_TAR_DATA, p, k, 0, e);
      else if (t->kind == K_LONGNAME && sb_buf_append(t->m, &t->longname, p, k) != 0) c = sb_fail_oom(e);
      t->left -= k, p += k, n -= k;
      if (!t->left && c == SB_OK) {
        if (t->kind == K_FILE) c = t->fn(t->ud, SB_TAR_END, NULL, 0, 0, e);
        t->state = t->pad ? ST_PAD : ST_HEADER;
      }
    } else { /* ST_PAD */
      size_t k = t->pad < n ? t->pad : n;
      t->pad -= k, p += k, n -= k;
      if (!t->pad) t->state = ST_HEADER;
    }
  }
  return c;
}

bool sb_tar_done(const sb_tar *t) { return t->ended; }

void sb_tar_free(sb_tar *t) { sb_buf_free(t->m, &t->longname); }
