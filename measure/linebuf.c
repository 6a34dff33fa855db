/* linebuf.c — see linebuf.h. */
#include "linebuf.h"

#include <stdlib.h>
#include <string.h>

int sb_linebuf_add(sb_linebuf *b, const char *s, size_t len, size_t max)
{
	if (b->n + len > max)
		return SB_LINEBUF_TOO_LARGE;
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
	return 0;
}

void sb_linebuf_free(sb_linebuf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}
