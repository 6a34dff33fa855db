/* ndjson.c — see ndjson.h. */
#include "ndjson.h"

#include <stdlib.h>
#include <string.h>

#include "linebuf.h"

_Static_assert(SB_NDJSON_TOO_LARGE == SB_LINEBUF_TOO_LARGE, "one 'too large' code");

struct sb_ndjson {
	sb_ndjson_line_fn fn;
	void *ud;
	sb_linesplit lines; /* LF-terminated; a line split across feeds */
};

sb_ndjson *sb_ndjson_new(size_t max_line, sb_ndjson_line_fn fn, void *ud)
{
	sb_ndjson *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->lines.max = max_line;
	p->fn = fn;
	p->ud = ud;
	return p;
}

void sb_ndjson_free(sb_ndjson *p)
{
	if (!p)
		return;
	sb_linebuf_free(&p->lines.part);
	free(p);
}

void sb_ndjson_reset(sb_ndjson *p)
{
	sb_linesplit_reset(&p->lines);
}

int sb_ndjson_pending(const sb_ndjson *p)
{
	return p->lines.part.n > 0;
}

/* One line without its '\n': a trailing '\r' dropped, blank lines skipped. */
static int deliver(void *ud, const char *l, size_t n)
{
	sb_ndjson *p = ud;
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
	return sb_linesplit_feed(&p->lines, b, len, deliver, p);
}

int sb_ndjson_finish(sb_ndjson *p)
{
	if (!p->lines.part.n)
		return 0;
	size_t ln = p->lines.part.n;
	p->lines.part.n = 0;
	return deliver(p, p->lines.part.p, ln);
}
