/* jscan.h — a non-allocating JSON scanner for the streaming hot path.
 *
 * Streamed chunks are small JSON objects, one per token. Parsing each into a
 * jansson tree would cost several allocations per token; instead the chunk is
 * validated once and the few values the adapters need are located as spans of
 * the original text. No function here allocates or copies.
 */
#ifndef SB_JSCAN_H
#define SB_JSCAN_H

#include <stddef.h>

/* A JSON value as raw text inside a buffer (borrowed; n == 0 when absent). */
typedef struct sb_jspan {
	const char *p;
	size_t n;
} sb_jspan;

/* 1 when s[0..n) is exactly one valid JSON value (surrounding whitespace
 * allowed), else 0. Nesting deeper than 64 counts as invalid. O(n). */
int sb_jscan_valid(const char *s, size_t n);

/* Locates the value at `path` in the JSON text s[0..n): keys separated by
 * '.', a decimal component indexes an array ("choices.0.delta.content").
 * Returns 1 and fills out when found, 0 when absent (or the text is not
 * well-formed along the way). Keys with escapes never match. O(n). */
int sb_jscan_find(const char *s, size_t n, const char *path, sb_jspan *out);

/* Whether the span is JSON null (or empty/absent). */
int sb_jspan_is_null(sb_jspan v);
/* Whether the span is a string with at least one character. */
int sb_jspan_is_nonempty_string(sb_jspan v);
/* 1 for true, 0 for false, -1 for anything else. */
int sb_jspan_bool(sb_jspan v);
/* Parses a JSON number into *out; returns 1 on success, 0 otherwise. */
int sb_jspan_number(sb_jspan v, double *out);

#endif
