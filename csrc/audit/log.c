#include "audit/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "base/clock.h"
#include "base/mem.h"

#define FLUSH_BYTES (64 * 1024) /* queued bytes that wake the writer at once */
#define FLUSH_EVERY_NS 1000000000ULL /* the writer's timer: nothing queued waits longer */

struct sb_auditlog {
  sb_mem m; /* the C library's: the writer thread allocates too */
  int fd;
  bool regular; /* a file (head, tail, lock) rather than a pipe or device */
  char *path, *head, *tmp; /* the log, FILE.head, FILE.head.tmp */
  /* the writer's own (before it starts: the opener's) */
  alignas(64) char prev[65]; /* the hash of the last line chained */
  EVP_MD *md;
  EVP_MD_CTX *ctx;
  sb_buf work; /* bodies taken from the queue */
  sb_buf out; /* chained lines not yet written */
  /* the queue: a ring of bytes with one producer (the sandbox's thread,
   * no lock per line) and one consumer (the writer); each side's index on
   * a cache line of its own (stores next to the other side's fields made
   * every line wait for the other core: measured) */
  char *ring; /* SB_AUDIT_QUEUE_MAX bytes */
  alignas(64) _Atomic size_t qhead; /* bytes ever queued: the producer's */
  _Atomic uint64_t lost; /* lines the ring had no room for, not yet recorded */
  _Atomic uint64_t lost_total;
  atomic_bool woken; /* the ring's fill signalled the writer, not yet heard */
  atomic_bool failing; /* the writer's last write failed: a full ring loses lines rather than waits */
  alignas(64) _Atomic size_t qtail; /* bytes ever taken: the writer's */
  /* under mu: waking, flushing, the writer's report */
  alignas(64) uv_mutex_t mu;
  uv_thread_t thread;
  bool started;
  size_t backlog; /* out.len: what the writer holds and could not write */
  bool stop, kick;
  uint64_t asked, answered; /* flush requests and the last one served */
  uint64_t lines;
  char error[300];
  unsigned err_gen, err_seen;
  alignas(64) uv_cond_t wake; /* the writer waits on these */
  uv_cond_t done, room; /* room: the writer took what the ring held */
};

/* ---- SHA-256 ------------------------------------------------------------- */

static bool hash_hex(EVP_MD_CTX *ctx, const EVP_MD *md, const void *p, size_t n, char out[65]) {
  unsigned char d[32];
  unsigned int dl = 0;
  if (!EVP_DigestInit_ex2(ctx, md, NULL) || !EVP_DigestUpdate(ctx, p, n) || !EVP_DigestFinal_ex(ctx, d, &dl) ||
      dl != 32)
    return false;
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = hx[d[i] >> 4];
    out[2 * i + 1] = hx[d[i] & 15];
  }
  out[64] = '\0';
  return true;
}

bool sb_sha256_hex(const void *data, size_t len, char out[65]) {
  EVP_MD *md = EVP_MD_fetch(NULL, "SHA256", NULL);
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  bool ok = md && ctx && hash_hex(ctx, md, data, len, out);
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
  return ok;
}

/* ---- the chain and the file (the writer's side) ---------------------------- */

/* Chain one body into out: ,"prev":"<hash of the line before>"} and a
 * newline; the new line's hash becomes prev. */
static bool chain(sb_auditlog *l, const char *body, size_t len) {
  if (sb_buf_reserve(&l->m, &l->out, len + 80) != 0) return false;
  char *s = l->out.p + l->out.len;
  memcpy(s, body, len);
  size_t n = len;
  memcpy(s + n, ",\"prev\":\"", 9);
  n += 9;
  memcpy(s + n, l->prev, 64);
  n += 64;
  s[n++] = '"';
  s[n++] = '}';
  if (!hash_hex(l->ctx, l->md, s, n, l->prev)) return false;
  s[n++] = '\n';
  l->out.len += n;
  return true;
}

static int write_head(sb_auditlog *l, char *why, size_t whylen) {
  char b[65];
  memcpy(b, l->prev, 64);
  b[64] = '\n';
  int fd = open(l->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    ssize_t w = write(fd, b, sizeof b);
    err = w == (ssize_t)sizeof b ? 0 : w < 0 ? errno : ENOSPC;
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(l->tmp, l->head) != 0) err = errno;
    if (err) unlink(l->tmp);
  }
  if (err) snprintf(why, whylen, "audit_log: cannot write %s: %s", l->head, strerror(err));
  return err ? -1 : 0;
}

/* Write out (a partial line goes on where it stopped: O_APPEND), then the
 * head. 0, or -1 with why; what was not written stays in out. */
static int write_out(sb_auditlog *l, char *why, size_t whylen) {
  size_t done = 0;
  int err = 0;
  while (done < l->out.len) {
    ssize_t w = write(l->fd, l->out.p + done, l->out.len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err = w < 0 ? errno : ENOSPC;
      break;
    }
    done += (size_t)w;
  }
  if (done) {
    memmove(l->out.p, l->out.p + done, l->out.len - done);
    l->out.len -= done;
  }
  if (err) {
    snprintf(why, whylen, "audit_log: cannot write %s: %s", l->path, strerror(err));
    return -1;
  }
  sb_buf_trim(&l->m, &l->out, 4 * FLUSH_BYTES);
  return l->regular ? write_head(l, why, whylen) : 0;
}

/* One pass of the writer: chain what was taken (and the record of lines
 * lost), write. Outside the lock. */
static int write_pass(sb_auditlog *l, uint64_t lost, uint64_t *chained, char *why, size_t whylen) {
  why[0] = '\0';
  *chained = 0;
  for (size_t i = 0; i < l->work.len;) {
    const char *nl = memchr(l->work.p + i, '\n', l->work.len - i);
    size_t n = (size_t)(nl - (l->work.p + i));
    if (!chain(l, l->work.p + i, n)) {
      snprintf(why, whylen, "audit_log: out of memory (or SHA-256 failed): lines were not written");
      break;
    }
    (*chained)++;
    i += n + 1;
  }
  l->work.len = 0;
  if (lost) { /* the gap is part of the record */
    char b[120];
    int n = snprintf(b, sizeof b, "{\"time\":%.6f,\"kind\":\"audit_lost\",\"lost\":%llu", sb_wall(),
                     (unsigned long long)lost);
    if (chain(l, b, (size_t)n)) (*chained)++;
  }
  if (why[0]) return -1;
  return write_out(l, why, whylen);
}

static size_t fill(sb_auditlog *l) {
  return atomic_load_explicit(&l->qhead, memory_order_acquire) - atomic_load_explicit(&l->qtail, memory_order_relaxed);
}

/* What the ring holds, into work (unless the writer already holds a full
 * queue's worth it could not write: then the ring fills and lines are lost,
 * counted). */
static void take(sb_auditlog *l, bool all) {
  size_t t = atomic_load_explicit(&l->qtail, memory_order_relaxed);
  size_t h = atomic_load_explicit(&l->qhead, memory_order_acquire), n = h - t;
  if (!n || (!all && l->out.len >= SB_AUDIT_QUEUE_MAX) || sb_buf_reserve(&l->m, &l->work, n) != 0) return;
  size_t at = t % SB_AUDIT_QUEUE_MAX, first = n < SB_AUDIT_QUEUE_MAX - at ? n : SB_AUDIT_QUEUE_MAX - at;
  memcpy(l->work.p + l->work.len, l->ring + at, first);
  memcpy(l->work.p + l->work.len + first, l->ring, n - first);
  l->work.len += n;
  atomic_store_explicit(&l->qtail, h, memory_order_release);
}

static void writer(void *arg) {
  sb_auditlog *l = arg;
  char why[sizeof l->error];
  uv_mutex_lock(&l->mu);
  for (;;) {
    while (!l->stop && !l->kick && fill(l) < FLUSH_BYTES)
      if (uv_cond_timedwait(&l->wake, &l->mu, FLUSH_EVERY_NS) == UV_ETIMEDOUT) break; /* the timer */
    bool stopping = l->stop;
    uint64_t req = l->asked;
    l->kick = false;
    uv_mutex_unlock(&l->mu);
    atomic_store(&l->woken, false); /* before taking: a fill after it signals again */
    take(l, stopping);
    uv_mutex_lock(&l->mu);
    uv_cond_broadcast(&l->room);
    uv_mutex_unlock(&l->mu);
    uint64_t lost = atomic_exchange(&l->lost, 0), chained = 0;
    int rc = (l->work.len || lost || l->out.len) ? write_pass(l, lost, &chained, why, sizeof why) : 0;
    uv_mutex_lock(&l->mu);
    l->lines += chained;
    l->backlog = l->out.len;
    if (rc == 0) why[0] = '\0';
    atomic_store(&l->failing, rc != 0);
    if (strcmp(why, l->error) != 0) {
      snprintf(l->error, sizeof l->error, "%s", why);
      l->err_gen++;
    }
    l->answered = req;
    uv_cond_broadcast(&l->done);
    if (stopping) break;
  }
  uv_mutex_unlock(&l->mu);
}

/* ---- opening --------------------------------------------------------------- */

static char *join(const sb_mem *m, const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = sb_malloc(m, na + nb + 1);
  if (s) {
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
  }
  return s;
}

static ssize_t pread_all(int fd, char *p, size_t n, off_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, p + got, n - got, off + (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* The hash FILE.head names, or "" when there is none (or it is torn). */
static void read_head(sb_auditlog *l, char out[65]) {
  out[0] = '\0';
  int fd = open(l->head, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;
  char b[80];
  ssize_t n = pread_all(fd, b, sizeof b, 0);
  close(fd);
  if (n < 64) return;
  memcpy(out, b, 64);
  out[64] = '\0';
}

/* An existing log: check it is one, that it ends whole and where its head
 * says; the last line's hash is the chain's next prev. */
static int read_tail(sb_auditlog *l, off_t size, sb_err *e) {
  const char *p = l->path;
  char first[64];
  static const char start[] = "{\"seq\":0,";
  ssize_t n = pread_all(l->fd, first, sizeof first, 0);
  if (n < (ssize_t)sizeof start - 1 || memcmp(first, start, sizeof start - 1) != 0) {
    sb_failf(e, SB_EINVAL,
             "audit_log: %s is not a sandbox audit log (its first line is not a chain start); name a new file", p);
    return -1;
  }
  size_t want = size < SB_AUDIT_LINE_MAX + 1 ? (size_t)size : SB_AUDIT_LINE_MAX + 1;
  char *t = sb_malloc(&l->m, want);
  if (!t) return sb_failf(e, SB_ENOSPC, "audit_log: out of memory"), -1;
  int rc = -1;
  char head[65];
  if (pread_all(l->fd, t, want, size - (off_t)want) != (ssize_t)want) {
    sb_failf(e, SB_EIO, "audit_log: cannot read %s: %s", p, strerror(errno));
  } else if (t[want - 1] != '\n') {
    sb_failf(e, SB_EINVAL,
             "audit_log: %s ends in a partial line (a crash or a full disk while writing, or an edit): check it "
             "with `agent-sandbox audit verify %s` and start a new file",
             p, p);
  } else {
    size_t s = want - 1;
    while (s > 0 && t[s - 1] != '\n') s--;
    if (s == 0 && (off_t)want != size) {
      sb_failf(e, SB_EINVAL, "audit_log: %s: its last line is longer than an audit line can be", p);
    } else if (!hash_hex(l->ctx, l->md, t + s, want - 1 - s, l->prev)) {
      sb_failf(e, SB_EIO, "audit_log: SHA-256 is not available from libcrypto");
    } else if (read_head(l, head), strcmp(head, l->prev) != 0) {
      sb_failf(e, SB_EINVAL,
               "audit_log: %s does not end where %s says it does (a line deleted, edited or added outside "
               "the sandbox, or a writer that died between the two): check it with `agent-sandbox audit "
               "verify %s` and start a new file",
               p, l->head, p);
    } else {
      rc = 0;
    }
  }
  sb_free(&l->m, t, want);
  return rc;
}

static void free_log(sb_auditlog *l) {
  if (l->fd >= 0) close(l->fd); /* the lock goes with it */
  free(l->ring);
  sb_buf_free(&l->m, &l->work);
  sb_buf_free(&l->m, &l->out);
  EVP_MD_CTX_free(l->ctx);
  EVP_MD_free(l->md);
  if (l->path) sb_free(&l->m, l->path, strlen(l->path) + 1);
  if (l->head) sb_free(&l->m, l->head, strlen(l->head) + 1);
  if (l->tmp) sb_free(&l->m, l->tmp, strlen(l->tmp) + 1);
  free(l);
}

/* A new chain: its first line names the format; its prev is all zeros. */
static int start_chain(sb_auditlog *l, sb_err *e) {
  memset(l->prev, '0', 64);
  l->prev[64] = '\0';
  char b[160], why[sizeof l->error];
  int n = snprintf(b, sizeof b, "{\"seq\":0,\"time\":%.6f,\"kind\":\"audit_start\",\"format\":\"%s\"", sb_wall(),
                   SB_AUDIT_FORMAT);
  if (!chain(l, b, (size_t)n)) return sb_failf(e, SB_ENOSPC, "audit_log: out of memory"), -1;
  if (write_out(l, why, sizeof why) != 0) {
    sb_failf(e, strstr(why, strerror(ENOSPC)) ? SB_ENOSPC : SB_EIO, "%s", why);
    return -1;
  }
  return 0;
}

sb_auditlog *sb_auditlog_open(const char *path, sb_err *e) {
  sb_mem m;
  sb_mem_init_plain(&m);
  void *mem = NULL; /* aligned: the fields each thread owns lie on lines of their own */
  if (posix_memalign(&mem, 64, sizeof(sb_auditlog)) != 0)
    return sb_failf(e, SB_ENOSPC, "audit_log: out of memory"), NULL;
  sb_auditlog *l = mem;
  memset(l, 0, sizeof *l);
  l->m = m;
  l->fd = -1;
  l->md = EVP_MD_fetch(NULL, "SHA256", NULL);
  l->ctx = EVP_MD_CTX_new();
  if (!l->md || !l->ctx) {
    sb_failf(e, SB_EIO, "audit_log: SHA-256 is not available from libcrypto (OpenSSL)");
    goto fail;
  }
  if (!(l->path = join(&m, path, "")) || !(l->head = join(&m, path, ".head")) ||
      !(l->tmp = join(&m, path, ".head.tmp"))) {
    sb_failf(e, SB_ENOSPC, "audit_log: out of memory");
    goto fail;
  }
  l->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
  if (l->fd < 0 && (errno == EACCES || errno == EPERM)) /* a pipe or device we may only write */
    l->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
  struct stat st;
  if (l->fd < 0 || fstat(l->fd, &st) != 0) {
    int err = errno;
    sb_failf(e, sb_code_from_errno(err), "audit_log: cannot open %s for appending: %s", path, strerror(err));
    goto fail;
  }
  if (S_ISDIR(st.st_mode)) {
    sb_failf(e, SB_EISDIR, "audit_log: %s is a directory; name a file", path);
    goto fail;
  }
  l->regular = S_ISREG(st.st_mode);
  if (l->regular && flock(l->fd, LOCK_EX | LOCK_NB) != 0) {
    sb_failf(e, SB_EBUSY, "audit_log: %s is in use by another sandbox (one log, one writer); name another file", path);
    goto fail;
  }
  if (l->regular && st.st_size > 0 ? read_tail(l, st.st_size, e) != 0 : start_chain(l, e) != 0) goto fail;
  atomic_init(&l->qhead, 0);
  atomic_init(&l->qtail, 0);
  atomic_init(&l->lost, 0);
  atomic_init(&l->lost_total, 0);
  atomic_init(&l->woken, false);
  atomic_init(&l->failing, false);
  if (!(l->ring = malloc(SB_AUDIT_QUEUE_MAX)) || sb_buf_reserve(&m, &l->work, 2 * FLUSH_BYTES) != 0) {
    sb_failf(e, SB_ENOSPC, "audit_log: out of memory");
    goto fail;
  }
  int made = 0; /* the lock, then each condition, then the thread */
  if (uv_mutex_init(&l->mu) == 0 && ++made && uv_cond_init(&l->wake) == 0 && ++made && uv_cond_init(&l->done) == 0 &&
      ++made && uv_cond_init(&l->room) == 0 && ++made && uv_thread_create(&l->thread, writer, l) == 0) {
    l->started = true;
    return l;
  }
  sb_failf(e, SB_EAGAIN, "audit_log: cannot start its writer thread");
  if (made > 3) uv_cond_destroy(&l->room);
  if (made > 2) uv_cond_destroy(&l->done);
  if (made > 1) uv_cond_destroy(&l->wake);
  if (made > 0) uv_mutex_destroy(&l->mu);
fail:
  free_log(l);
  return NULL;
}

/* ---- the sandbox's side ------------------------------------------------------ */

bool sb_auditlog_add(sb_auditlog *l, const char *body, size_t len) {
  size_t h = atomic_load_explicit(&l->qhead, memory_order_relaxed);
  size_t used = h - atomic_load_explicit(&l->qtail, memory_order_acquire), n = len + 1;
  if (n > SB_AUDIT_QUEUE_MAX - used) {
    /* a burst faster than SHA-256 and the disk: wait for the writer to take
     * what the ring holds (a moment); a writer that cannot write (a full
     * disk) is not waited for: the line is lost, and counted */
    uv_mutex_lock(&l->mu);
    while (n > SB_AUDIT_QUEUE_MAX - (used = h - atomic_load_explicit(&l->qtail, memory_order_acquire)) &&
           !atomic_load(&l->failing) && !l->stop) {
      l->kick = true;
      uv_cond_signal(&l->wake);
      uv_cond_wait(&l->room, &l->mu);
    }
    uv_mutex_unlock(&l->mu);
    if (n > SB_AUDIT_QUEUE_MAX - used) {
      atomic_fetch_add(&l->lost, 1);
      atomic_fetch_add(&l->lost_total, 1);
      return false;
    }
  }
  size_t at = h % SB_AUDIT_QUEUE_MAX, first = len < SB_AUDIT_QUEUE_MAX - at ? len : SB_AUDIT_QUEUE_MAX - at;
  memcpy(l->ring + at, body, first);
  memcpy(l->ring, body + first, len - first);
  l->ring[(h + len) % SB_AUDIT_QUEUE_MAX] = '\n';
  atomic_store_explicit(&l->qhead, h + n, memory_order_release);
  if (used + n >= FLUSH_BYTES && !atomic_load_explicit(&l->woken, memory_order_relaxed) &&
      !atomic_exchange(&l->woken, true)) { /* once: the writer is on its way */
    uv_mutex_lock(&l->mu);
    uv_cond_signal(&l->wake);
    uv_mutex_unlock(&l->mu);
  }
  return true;
}

void sb_auditlog_flush(sb_auditlog *l, bool wait) {
  uv_mutex_lock(&l->mu);
  uint64_t req = ++l->asked;
  l->kick = true;
  uv_cond_signal(&l->wake);
  while (wait && l->answered < req) uv_cond_wait(&l->done, &l->mu);
  uv_mutex_unlock(&l->mu);
}

bool sb_auditlog_state_get(sb_auditlog *l, sb_auditlog_state *st, bool consume) {
  uv_mutex_lock(&l->mu);
  st->lines = l->lines;
  st->lost = atomic_load(&l->lost_total);
  st->queued = fill(l) + l->backlog;
  memcpy(st->error, l->error, sizeof st->error);
  bool changed = l->err_gen != l->err_seen;
  if (consume) l->err_seen = l->err_gen;
  uv_mutex_unlock(&l->mu);
  return changed;
}

void sb_auditlog_close(sb_auditlog *l) {
  if (!l) return;
  if (l->started) {
    uv_mutex_lock(&l->mu);
    l->stop = true;
    uv_cond_signal(&l->wake);
    uv_mutex_unlock(&l->mu);
    uv_thread_join(&l->thread);
    uv_cond_destroy(&l->wake);
    uv_cond_destroy(&l->done);
    uv_cond_destroy(&l->room);
    uv_mutex_destroy(&l->mu);
  }
  free_log(l);
}
