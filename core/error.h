/* error.h — how library code reports what went wrong.
 *
 * Functions return 0 on success or a negative errno; when they fail they may
 * also write a human sentence into an sb_error the caller passed (may be NULL).
 * Library code never prints: only main() does.
 */
#ifndef SB_ERROR_H
#define SB_ERROR_H

#include <stddef.h>

typedef struct sb_error {
	char msg[512];
} sb_error;

/* Formats a message into e (no-op when e is NULL). Always returns -EINVAL so
 * callers can write `return sb_error_set(e, "...")`. */
int sb_error_set(sb_error *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Like sb_error_set but returns the given negative errno code. */
int sb_error_code(sb_error *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes the existing message with "prefix: " (no-op when e is NULL). */
void sb_error_prefix(sb_error *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
