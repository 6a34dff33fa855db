/* server_flags.c — the values of the shared server flags (server_flags.h). */
#include "server_flags.h"

#include <stdio.h>
#include <string.h>

#include "core/parse.h"

int sb_parse_max_queue(const char *s, void *dest, const char *flag, sb_error *e)
{
	int r = sb_parse_long(s, -1, 100000000, dest, flag, e);
	if (r < 0 && e) {
		size_t n = strlen(e->msg);
		snprintf(e->msg + n, sizeof(e->msg) - n, " (-1 means unbounded)");
	}
	return r;
}
