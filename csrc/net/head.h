/* HTTP/1.1 request heads as the network servers read them: validity (no
 * smuggling), the request line, headers, and a rewrite with headers
 * dropped and added. Pure functions on bytes. */
#ifndef SB_NET_HEAD_H
#define SB_NET_HEAD_H

#include <stdbool.h>
#include <stddef.h>

#define SB_HEAD_MAX (32 * 1024) /* a longer request head is refused (431) */

/* Only CRLF line ends, no bare CR or LF, no NUL, no folded line: anything
 * else could be read as different headers by the server behind us (request
 * smuggling), so such heads are refused with 400 before an owner sees them. */
bool sb_http_head_valid(const char *head, size_t len);
/* The request line: method, target, version; false if malformed. */
bool sb_http_request_line(const char *head, size_t len, char *method, size_t mlen, char *target, size_t tlen);
/* The value of header `name` (case-insensitive), copied; false if absent. */
bool sb_http_header(const char *head, size_t len, const char *name, char *out, size_t outlen);
/* The same for the nth (from 0) header of that name: a request may repeat one. */
bool sb_http_header_nth(const char *head, size_t len, const char *name, unsigned nth, char *out, size_t outlen);
/* Rebuild a head: the new request line (NULL: the original one), then the headers minus the ones in
 * `drop` (NULL-terminated, case-insensitive), then `extra` (complete lines).
 * Returns the length, or 0 if it does not fit. */
size_t sb_http_rewrite(const char *head, size_t len, const char *request_line, const char *const *drop,
                       const char *extra, char *out, size_t outlen);

#endif
