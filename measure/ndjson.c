/* ndjson.c — see ndjson.h. */
#include "ndjson.h"

#include <stdlib.h>
#include <string.h>

#include "linebuf.h"

_Static_assert(SB_NDJSON_TOO_LARGE == SB_LINEBUF_TOO_LARGE, "one 'too large' code");

struct sb_ndjson {
	size_t max;
	sb_ndjson_line_fn fn;
	void *ud;
	sb_linebuf line; /* a line split across feeds */
};

sb_ndjson *sb_ndjson_new(size_t max_line, sb_ndjson_line_fn fn, void *ud)
{
	sb_ndjson *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->max = max_line;
	p->fn = fn;
	p->ud = ud;
	return p;
}

void sb_ndjson_free(sb_ndjson *p)
{
	if (!p)
		return;
	sb_linebuf_free(&p->line);
	free(p);
}

void sb_ndjson_reset(sb_ndjson *p)
{
	p->line.n = 0;
}

int sb_ndjson_pending(const sb_ndjson *p)
{
	return p->line.n > 0;
}

static int deliver(sb_ndjson *p, const char *l, size_t n)
{
	if (n && l[n - 1] == '\r')
		n--;
	size_t i = 0;
	while (i < n && (l[i] == ' ' || l[i] == '\t'))
		i++;
	if (i == n)
		return 0;
	return p->fn(p->ud, l, n);
}

int sb_ndjson_feed(sb_ndjson *p, const char *b, size_t len)
{
	const char *s = b, *end = b + len;
	int rc;
	while (s < end) {
		size_t rem = (size_t)(end - s);
		const char *nl = memchr(s, '\n', rem);
		if (!nl)
			return sb_linebuf_add(&p->line, s, rem, p->max);
		size_t n = (size_t)(nl - s);
		if (p->line.n) {
			if ((rc = sb_linebuf_add(&p->line, s, n, p->max)) < 0)
				return rc;
			size_t ln = p->line.n;
			p->line.n = 0;
			rc = deliver(p, p->line.p, ln);
		} else {
			if (n > p->max)
				return SB_NDJSON_TOO_LARGE;
			rc = deliver(p, s, n);
		}
		if (rc < 0)
			return rc;
		s = nl + 1;
	}
	return 0;
}

int sb_ndjson_finish(sb_ndjson *p)
{
	if (!p->line.n)
		return 0;
	size_t ln = p->line.n;
	p->line.n = 0;
	return deliver(p, p->line.p, ln);
}
