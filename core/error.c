/* error.c — error messages for library callers. */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 2, 0))) static void vset(sb_error *e, const char *fmt,
							    va_list ap)
{
	if (!e)
		return;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
}

int sb_error_set(sb_error *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(e, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int sb_error_code(sb_error *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(e, fmt, ap);
	va_end(ap);
	return code;
}

void sb_error_prefix(sb_error *e, const char *fmt, ...)
{
	if (!e)
		return;
	char prefix[256];
	char old[sizeof(e->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	snprintf(e->msg, sizeof(e->msg), "%s: %s", prefix, old);
}
