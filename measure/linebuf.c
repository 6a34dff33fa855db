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

int sb_linesplit_feed(sb_linesplit *sp, const char *b, size_t len, sb_linesplit_fn fn, void *ud)
{
	const char *s = b, *end = b + len;
	int rc;
	while (s < end) {
		if (sp->skip_lf) {
			sp->skip_lf = 0;
			if (*s == '\n') {
				s++;
				continue;
			}
		}
		size_t rem = (size_t)(end - s);
		const char *nl = memchr(s, '\n', rem);
		const char *cr = sp->cr ? memchr(s, '\r', nl ? (size_t)(nl - s) : rem) : NULL;
		const char *eol = cr ? cr : nl;
		if (!eol)
			return sb_linebuf_add(&sp->part, s, rem, sp->max);
		size_t n = (size_t)(eol - s);
		if (sp->part.n) {
			if ((rc = sb_linebuf_add(&sp->part, s, n, sp->max)) < 0)
				return rc;
			size_t ln = sp->part.n;
			sp->part.n = 0;
			rc = fn(ud, sp->part.p, ln);
		} else {
			if (n > sp->max)
				return SB_LINEBUF_TOO_LARGE;
			rc = fn(ud, s, n);
		}
		if (rc < 0)
			return rc;
		if (*eol == '\r')
			sp->skip_lf = 1;
		s = eol + 1;
	}
	return 0;
}

void sb_linesplit_reset(sb_linesplit *s)
{
	s->part.n = 0;
	s->skip_lf = 0;
}
