/* An audit log file (SPEC §17): JSON lines, appended, each carrying the
 * SHA-256 of the line before it ("prev"), so an edited, inserted or deleted
 * line shows; FILE.head holds the hash of the last line written, so a
 * deleted last line shows too. The first line of a file is the chain's
 * start ("kind":"audit_start"); a later sandbox given the same file goes on
 * with its chain.
 *
 * The caller only queues lines (a lock and a copy): a writer thread of the
 * log's own chains, hashes and writes them — when asked (a command's end,
 * dispose), when 64 KiB wait, and at least once a second — so neither the
 * host's loop nor a command ever waits on the disk or on SHA-256. No Lua
 * here; the thread uses the C library's allocator. */
#ifndef SB_AUDIT_LOG_H
#define SB_AUDIT_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#define SB_AUDIT_FORMAT "sandbox-audit/1"
#define SB_AUDIT_QUEUE_MAX (1024 * 1024) /* queued while writes fail; beyond, lines are lost (and counted) */
#define SB_AUDIT_LINE_MAX (256 * 1024) /* the longest line (the stream caps what it encodes well below) */

typedef struct sb_auditlog sb_auditlog;

/* Open (create, 0600) and lock path for appending, check where its chain
 * ends, write the chain's start to a new file, start the writer. Fails
 * with a message naming the file when it cannot be written, is in use by
 * another sandbox, or is not an audit log (or ends other than its head). */
sb_auditlog *sb_auditlog_open(const char *path, sb_err *e);
/* Queue one line (the sandbox's thread; a lock and a copy): body is a
 * JSON object without its closing brace (the writer adds
 * ,"prev":"<hash>"}). false: the queue is full (SB_AUDIT_QUEUE_MAX while
 * writes fail) or out of memory; the line is lost and counted (the writer
 * records the gap once it can write). */
bool sb_auditlog_add(sb_auditlog *l, const char *body, size_t len);
/* Ask the writer to write what is queued now; with wait, until it did (or
 * failed). */
void sb_auditlog_flush(sb_auditlog *l, bool wait);
/* The writer's state: lines written, bytes queued, lines lost, and the
 * error of its last write ("" when it worked). Returns true when the error
 * changed since it was last consumed (to be told once). */
typedef struct sb_auditlog_state {
  uint64_t lines, lost;
  size_t queued;
  char error[300];
} sb_auditlog_state;
bool sb_auditlog_state_get(sb_auditlog *l, sb_auditlog_state *st, bool consume);
/* Write what waits, stop the writer, unlock, close. */
void sb_auditlog_close(sb_auditlog *l);

/* SHA-256 of data as 64 lowercase hex digits and a NUL. false if libcrypto
 * cannot compute it. */
bool sb_sha256_hex(const void *data, size_t len, char out[65]);

#endif
