/* ndjson.h — incremental newline-delimited JSON splitter (Ollama's native
 * /api/generate and /api/chat streams).
 *
 * Lines may be split anywhere across feeds; "\r\n" endings are accepted and
 * blank lines skipped. The parser only splits: each line is handed to the
 * callback, which interprets it. Buffers grow up to max_line and are reused.
 */
#ifndef SB_NDJSON_H
#define SB_NDJSON_H

#include <errno.h>
#include <stddef.h>

typedef struct sb_ndjson sb_ndjson;

/* Called per non-blank line; line is borrowed (not NUL-terminated),
 * without its terminator. Return 0 to go on, negative to stop. */
typedef int (*sb_ndjson_line_fn)(void *ud, const char *line, size_t len);

#define SB_NDJSON_TOO_LARGE (-E2BIG)

/* New splitter; NULL on allocation failure. */
sb_ndjson *sb_ndjson_new(size_t max_line, sb_ndjson_line_fn fn, void *ud);
void sb_ndjson_free(sb_ndjson *p);
/* Forgets a partial line; keeps memory. */
void sb_ndjson_reset(sb_ndjson *p);
/* Feeds len bytes. Returns 0, SB_NDJSON_TOO_LARGE, -ENOMEM or the negative
 * value a callback returned. O(len). */
int sb_ndjson_feed(sb_ndjson *p, const char *buf, size_t len);
/* Whether an unterminated line is buffered. */
int sb_ndjson_pending(const sb_ndjson *p);
/* Delivers a final line that lacks its '\n' (streams may end without one).
 * Returns as sb_ndjson_feed. */
int sb_ndjson_finish(sb_ndjson *p);

#endif
