/* linebuf.h — the growable byte buffer of the stream splitters (sse.c,
 * ndjson.c): a line (or an event's data) that arrives across feeds.
 *
 * It grows by doubling from 1 KiB, is bounded by the caller's max, keeps a
 * NUL after its n bytes and is reused (emptying it keeps the memory).
 */
#ifndef SB_LINEBUF_H
#define SB_LINEBUF_H

#include <errno.h>
#include <stddef.h>

/* Returned when the buffer would exceed its max. */
#define SB_LINEBUF_TOO_LARGE (-E2BIG)

/* All zero is an empty buffer. p is NULL until the first add; then
 * p[n] == '\0'. Empty it by setting n = 0. */
typedef struct sb_linebuf {
	char *p;
	size_t n, cap;
} sb_linebuf;

/* Appends s[0..len) (len 0 only makes sure p is allocated). Returns 0,
 * SB_LINEBUF_TOO_LARGE when n + len > max (nothing appended), or -ENOMEM. */
int sb_linebuf_add(sb_linebuf *b, const char *s, size_t len, size_t max);
/* Frees the memory; b is then empty (all zero). */
void sb_linebuf_free(sb_linebuf *b);

#endif
