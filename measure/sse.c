/* sse.c — see sse.h. */
#include "sse.h"

#include <stdlib.h>
#include <string.h>

#include "linebuf.h"

_Static_assert(SB_SSE_TOO_LARGE == SB_LINEBUF_TOO_LARGE, "one 'too large' code");

struct sb_sse {
	size_t max;
	sb_sse_event_fn fn;
	void *ud;
	sb_linesplit lines; /* LF, CR or CRLF; a line split across feeds */
	sb_linebuf data;    /* the current event's data */
	int has_data;
	char event[32];
	unsigned long comments;
};

sb_sse *sb_sse_new(size_t max_line, sb_sse_event_fn fn, void *ud)
{
	sb_sse *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->max = max_line;
	p->lines.max = max_line;
	p->lines.cr = 1;
	p->fn = fn;
	p->ud = ud;
	return p;
}

void sb_sse_free(sb_sse *p)
{
	if (!p)
		return;
	sb_linebuf_free(&p->lines.part);
	sb_linebuf_free(&p->data);
	free(p);
}

void sb_sse_reset(sb_sse *p)
{
	sb_linesplit_reset(&p->lines);
	p->data.n = 0;
	p->has_data = 0;
	p->event[0] = '\0';
	p->comments = 0;
}

int sb_sse_pending(const sb_sse *p)
{
	return p->lines.part.n > 0 || p->has_data;
}

unsigned long sb_sse_comments(const sb_sse *p)
{
	return p->comments;
}

static int dispatch(sb_sse *p)
{
	int rc = 0;
	if (p->has_data) {
		if (!p->data.p && (rc = sb_linebuf_add(&p->data, "", 0, p->max)) < 0)
			return rc;
		rc = p->fn(p->ud, p->event[0] ? p->event : "message", p->data.p, p->data.n);
	}
	p->data.n = 0;
	p->has_data = 0;
	p->event[0] = '\0';
	return rc;
}

static int add_data(sb_sse *p, const char *v, size_t vn)
{
	int rc;
	if (p->has_data && (rc = sb_linebuf_add(&p->data, "\n", 1, p->max)) < 0)
		return rc;
	if ((rc = sb_linebuf_add(&p->data, v, vn, p->max)) < 0)
		return rc;
	p->has_data = 1;
	return 0;
}

static void set_event(sb_sse *p, const char *v, size_t vn)
{
	if (vn >= sizeof(p->event))
		vn = sizeof(p->event) - 1;
	memcpy(p->event, v, vn);
	p->event[vn] = '\0';
}

/* One complete line (without its terminator). */
static int process_line(void *ud, const char *l, size_t n)
{
	sb_sse *p = ud;
	if (n == 0)
		return dispatch(p);
	if (l[0] == ':') {
		p->comments++;
		return 0;
	}
	const char *colon = memchr(l, ':', n);
	size_t fn = colon ? (size_t)(colon - l) : n;
	const char *v = colon ? colon + 1 : l + n;
	size_t vn = (size_t)(l + n - v);
	if (vn && *v == ' ') {
		v++;
		vn--;
	}
	if (fn == 4 && !memcmp(l, "data", 4))
		return add_data(p, v, vn);
	if (fn == 5 && !memcmp(l, "event", 5)) {
		set_event(p, v, vn);
		return 0;
	}
	if (fn == 5 && !memcmp(l, "error", 5)) {
		set_event(p, "error", 5);
		return add_data(p, v, vn);
	}
	return 0; /* id, retry, unknown fields */
}

int sb_sse_feed(sb_sse *p, const char *b, size_t len)
{
	return sb_linesplit_feed(&p->lines, b, len, process_line, p);
}
