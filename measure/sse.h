/* sse.h — incremental Server-Sent Events parser.
 *
 * Bytes arrive in arbitrary pieces (an event boundary, a CRLF pair or a
 * field name may be split anywhere); the parser keeps what it needs between
 * calls and reports each complete event once its terminating blank line
 * arrives. It follows the WHATWG event-stream rules: lines end in LF, CRLF
 * or CR; lines starting with ':' are comments (keep-alives); "data" lines
 * of one event are joined with '\n'; "event" sets the event name (default
 * "message"); other fields are ignored, except a non-standard "error" field,
 * which some servers send for in-stream errors and which is reported as an
 * event named "error" carrying the field's value as data.
 *
 * Memory: two buffers that grow (doubling) up to max_line and are reused;
 * after the first few events no call allocates.
 */
#ifndef SB_SSE_H
#define SB_SSE_H

#include <errno.h>
#include <stddef.h>

typedef struct sb_sse sb_sse;

/* Called once per complete event. `event` and `data` are borrowed and valid
 * only during the call; data is NUL-terminated at data[len]. Return 0 to go
 * on or a negative value to stop: sb_sse_feed then returns that value. */
typedef int (*sb_sse_event_fn)(void *ud, const char *event, const char *data,
			       size_t len);

/* Returned by sb_sse_feed when a line or an event's data exceeds max_line. */
#define SB_SSE_TOO_LARGE (-E2BIG)

/* New parser; max_line bounds one line and one event's data (bytes).
 * NULL on allocation failure. fn is called with ud. */
sb_sse *sb_sse_new(size_t max_line, sb_sse_event_fn fn, void *ud);
/* Frees p (NULL is a no-op). */
void sb_sse_free(sb_sse *p);
/* Forgets any partial line or event (to parse a new stream); keeps memory. */
void sb_sse_reset(sb_sse *p);
/* Feeds len bytes. Returns 0, SB_SSE_TOO_LARGE, -ENOMEM, or the negative
 * value a callback returned (the rest of buf is then not parsed). O(len). */
int sb_sse_feed(sb_sse *p, const char *buf, size_t len);
/* Whether a partial line or an undispatched event is buffered (a stream
 * that ends in this state was cut short). */
int sb_sse_pending(const sb_sse *p);
/* Number of comment (keep-alive) lines seen since the last reset. */
unsigned long sb_sse_comments(const sb_sse *p);

#endif
