/* linebuf.h — what the stream parsers (sse.c, ndjson.c) share: a growable
 * byte buffer for a line (or an event's data) that arrives across feeds,
 * and the splitter that cuts fed bytes into lines with it.
 *
 * The buffer grows by doubling from 1 KiB, is bounded by the caller's max,
 * keeps a NUL after its n bytes and is reused (emptying it keeps the
 * memory).
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

/* Called per complete line; line is borrowed, without its terminator and
 * not NUL-terminated. Return 0 to go on, negative to stop. */
typedef int (*sb_linesplit_fn)(void *ud, const char *line, size_t len);

/* A line splitter. Set max and cr, the rest zero. A line in one feed is
 * handed over in place; one split across feeds is gathered in part. */
typedef struct sb_linesplit {
	size_t max;      /* the longest line (bytes) */
	int cr;          /* 1: LF, CR and CRLF end a line (SSE); 0: LF only */
	int skip_lf;     /* the last byte was CR: an LF right after belongs to it */
	sb_linebuf part; /* a line split across feeds */
} sb_linesplit;

/* Feeds len bytes, calling fn(ud, ...) for each line they complete; keeps
 * an unterminated rest in part. Returns 0, SB_LINEBUF_TOO_LARGE, -ENOMEM,
 * or the negative value fn returned (the rest of buf is then not split).
 * O(len). */
int sb_linesplit_feed(sb_linesplit *s, const char *buf, size_t len, sb_linesplit_fn fn,
		      void *ud);
/* Forgets a partial line; keeps memory. */
void sb_linesplit_reset(sb_linesplit *s);

#endif
