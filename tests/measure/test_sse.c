/* test_sse.c — the SSE parser on every case a server can produce, each fed
 * whole, byte by byte, and split in two at every byte position: the events
 * seen must be the same whatever the chunking. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "measure/sse.h"

typedef struct transcript {
	char text[8192];
	size_t n;
	int stop_after; /* return -7 after this many events (0: never) */
	int events;
} transcript;

static int collect(void *ud, const char *event, const char *data, size_t len)
{
	transcript *t = ud;
	CHECK(data[len] == '\0');
	int k = snprintf(t->text + t->n, sizeof(t->text) - t->n, "[%s|%.*s]", event, (int)len, data);
	if (k > 0)
		t->n += (size_t)k;
	t->events++;
	if (t->stop_after && t->events >= t->stop_after)
		return -7;
	return 0;
}

/* Feeds in pieces cut at the given positions; returns the transcript. */
static int feed_split(const char *in, size_t len, const size_t *cuts, size_t ncuts,
		      size_t max, transcript *t, int *pending)
{
	memset(t, 0, sizeof(*t));
	sb_sse *p = sb_sse_new(max, collect, t);
	size_t at = 0;
	int rc = 0;
	for (size_t i = 0; i <= ncuts && rc == 0; i++) {
		size_t to = i < ncuts ? cuts[i] : len;
		rc = sb_sse_feed(p, in + at, to - at);
		at = to;
	}
	if (pending)
		*pending = sb_sse_pending(p);
	sb_sse_free(p);
	return rc;
}

/* Checks that every chunking of `in` gives `want` (and feed status rc). */
static void expect(const char *in, const char *want, int want_rc, int want_pending)
{
	size_t len = strlen(in);
	transcript t;
	int pending;
	/* whole */
	int rc = feed_split(in, len, NULL, 0, 1 << 16, &t, &pending);
	CHECK(rc == want_rc);
	CHECK_STR(t.text, want);
	CHECK(pending == want_pending);
	/* split once at every position */
	for (size_t i = 0; i <= len; i++) {
		size_t cut = i;
		rc = feed_split(in, len, &cut, 1, 1 << 16, &t, &pending);
		if (rc != want_rc || strcmp(t.text, want) || pending != want_pending) {
			fprintf(stderr, "split at %zu of \"%s\": got \"%s\" rc %d\n", i, in, t.text, rc);
			check_failures++;
		}
	}
	/* byte by byte */
	size_t *cuts = malloc((len + 1) * sizeof(size_t));
	for (size_t i = 0; i < len; i++)
		cuts[i] = i + 1;
	rc = feed_split(in, len, cuts, len ? len - 1 : 0, 1 << 16, &t, &pending);
	CHECK(rc == want_rc);
	CHECK_STR(t.text, want);
	CHECK(pending == want_pending);
	free(cuts);
}

int main(void)
{
	/* An OpenAI stream: content chunks, a usage-only chunk, [DONE]. */
	expect("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
	       "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\n"
	       "data: [DONE]\n\n",
	       "[message|{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}]"
	       "[message|{\"choices\":[],\"usage\":{\"prompt_tokens\":3}}]"
	       "[message|[DONE]]",
	       0, 0);
	/* CRLF, lone CR, and mixed line endings. */
	expect("data: a\r\n\r\ndata: b\r\rdata: c\n\r\n", "[message|a][message|b][message|c]", 0, 0);
	/* Keep-alive comments anywhere, including between data lines. */
	expect(": keep-alive\n\n: ping\ndata: x\n: mid\ndata: y\n\n:\n\n",
	       "[message|x\ny]", 0, 0);
	/* Multi-line data, "data:" without the space, "data" without a colon. */
	expect("data: line1\ndata:line2\ndata\ndata:  two spaces\n\n",
	       "[message|line1\nline2\n\n two spaces]", 0, 0);
	/* Named events, ids and retry ignored, name reset after dispatch. */
	expect("event: ping\nid: 7\nretry: 100\ndata: 1\n\ndata: 2\n\n",
	       "[ping|1][message|2]", 0, 0);
	/* In-stream error events: the standard form and llama.cpp's "error:" field. */
	expect("event: error\ndata: {\"message\":\"boom\"}\n\n",
	       "[error|{\"message\":\"boom\"}]", 0, 0);
	expect("error: {\"code\":500,\"message\":\"x\"}\n\n",
	       "[error|{\"code\":500,\"message\":\"x\"}]", 0, 0);
	/* A blank line with no data dispatches nothing. */
	expect("\n\n\r\n", "", 0, 0);
	/* A stream cut before its blank line: nothing dispatched, pending. */
	expect("data: {\"a\":1}\n", "", 0, 1);
	expect("data: {\"a\":", "", 0, 1);

	/* Too large: a line over the limit, whole or split. */
	{
		char big[300];
		memset(big, 'x', sizeof(big));
		memcpy(big, "data: ", 6);
		big[sizeof(big) - 1] = '\0';
		transcript t;
		size_t cut = 100;
		CHECK(feed_split(big, strlen(big), NULL, 0, 128, &t, NULL) == SB_SSE_TOO_LARGE);
		CHECK(feed_split(big, strlen(big), &cut, 1, 128, &t, NULL) == SB_SSE_TOO_LARGE);
		/* multi-line data adding up past the limit */
		char multi[400] = "";
		for (int i = 0; i < 10; i++)
			strcat(multi, "data: 0123456789abcdefghij\n");
		CHECK(feed_split(multi, strlen(multi), NULL, 0, 128, &t, NULL) == SB_SSE_TOO_LARGE);
		/* exactly at the limit is fine */
		char ok[200];
		memset(ok, 'y', 128);
		memcpy(ok, "data: ", 6);
		strcpy(ok + 128, "\n\n");
		CHECK(feed_split(ok, strlen(ok), NULL, 0, 128, &t, NULL) == 0);
		CHECK(t.events == 1);
	}
	/* A callback's negative return stops parsing and is returned. */
	{
		transcript t;
		memset(&t, 0, sizeof(t));
		t.stop_after = 1;
		sb_sse *p = sb_sse_new(1024, collect, &t);
		CHECK(sb_sse_feed(p, "data: 1\n\ndata: 2\n\n", 18) == -7);
		CHECK(t.events == 1);
		/* reset forgets partial state and counters */
		sb_sse_reset(p);
		CHECK(!sb_sse_pending(p));
		CHECK(sb_sse_feed(p, ": c\n", 4) == 0);
		CHECK(sb_sse_comments(p) == 1);
		sb_sse_free(p);
		sb_sse_free(NULL);
	}
	return check_report("test_sse");
}
