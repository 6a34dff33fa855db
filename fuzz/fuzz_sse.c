/* fuzz_sse.c — the incremental SSE parser (measure/sse.h) and the OpenAI
 * and llama-completion stream adapters behind it (measure/api.h, measure/jscan.h).
 *
 * The input is one response stream. It is parsed three times with the same
 * limit: in one piece, one byte at a time, and in pieces of random sizes
 * (drawn from a generator seeded with a hash of the input, so the fuzzer
 * explores the boundaries as it mutates the text). The parser promises that
 * the split does not matter: the three runs must report the same events
 * (name and data), the same return value and the same state at the end.
 * Events of the first run are handed to sb_api_sse_event as the load
 * generator does, and their data is probed with jscan.
 */
#include <math.h>

#include "fuzz.h"
#include "measure/api.h"
#include "measure/jscan.h"
#include "measure/sse.h"

typedef struct run {
	uint64_t h;          /* hash over the events seen */
	unsigned long n;     /* events seen */
	unsigned long stop;  /* return -1 at this event (0: never) */
	int adapt;           /* feed events to the API adapter */
	sb_api api;
	sb_stream st;
} run;

static void probe_json(const char *s, size_t n)
{
	static const char *const paths[] = { "choices.0.delta.content", "choices.0.text",
					     "usage.completion_tokens", "timings",
					     "error.message", "id_slot", "a.b.c.0.1" };
	(void)sb_jscan_valid(s, n);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		sb_jspan v = { NULL, 0 };
		if (sb_jscan_find(s, n, paths[i], &v) == 1) {
			FUZZ_CHECK(v.n == 0 || (v.p >= s && v.p + v.n <= s + n),
				   "a found span lies inside the text");
			double x;
			(void)sb_jspan_number(v, &x);
			(void)sb_jspan_bool(v);
			(void)sb_jspan_is_null(v);
			(void)sb_jspan_is_nonempty_string(v);
		}
	}
}

static int on_event(void *ud, const char *event, const char *data, size_t len)
{
	run *r = ud;
	FUZZ_CHECK(event != NULL && data != NULL, "event and data are set");
	FUZZ_CHECK(data[len] == '\0', "data is NUL-terminated at data[len]");
	size_t en = strlen(event);
	FUZZ_CHECK(en > 0, "an event has a name");
	r->h = fuzz_mix(r->h, event, en);
	r->h = fuzz_mix(r->h, data, len);
	r->n++;
	if (r->adapt) {
		int tok = 0;
		(void)sb_api_sse_event(r->api, &r->st, event, data, len, &tok);
		probe_json(data, len);
	}
	if (r->stop && r->n == r->stop)
		return -1;
	return 0;
}

typedef struct outcome {
	uint64_t h;
	unsigned long n, comments;
	int rc, pending;
} outcome;

/* Parses data in pieces: piece 0 = whole input, 1 = bytes, 2 = random. */
static outcome parse(const uint8_t *data, size_t size, size_t max, unsigned long stop,
		     int how, uint64_t seed, sb_api api)
{
	run r = { 1469598103934665603ULL, 0, stop, how == 0, api, { 0 } };
	outcome o = { 0, 0, 0, -ENOMEM, 0 };
	sb_stream_reset(&r.st);
	sb_sse *p = sb_sse_new(max, on_event, &r);
	if (!p) {
		sb_stream_fini(&r.st);
		return o;
	}
	const char *s = (const char *)data;
	size_t pos = 0;
	int rc = 0;
	while (pos < size && rc == 0) {
		size_t piece = size - pos;
		if (how == 1)
			piece = 1;
		else if (how == 2) {
			uint64_t x = fuzz_next(&seed);
			/* mostly short pieces, sometimes long ones */
			size_t lim = (x & 3) == 0 ? 4096 : 16;
			piece = 1 + (size_t)((x >> 8) % lim);
			if (piece > size - pos)
				piece = size - pos;
		}
		rc = sb_sse_feed(p, s + pos, piece);
		pos += piece;
	}
	o.h = r.h;
	o.n = r.n;
	o.rc = rc;
	o.pending = sb_sse_pending(p);
	o.comments = sb_sse_comments(p);
	/* reuse after a reset must behave like a new parser */
	sb_sse_reset(p);
	FUZZ_CHECK(!sb_sse_pending(p) && sb_sse_comments(p) == 0, "reset forgets everything");
	sb_sse_free(p);
	sb_stream_fini(&r.st);
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t seed = fuzz_hash(data, size);
	uint64_t c = seed;
	uint64_t x = fuzz_next(&c);
	/* the limit: usually generous, sometimes tiny to reach the E2BIG paths */
	size_t max = (x & 3) == 0 ? (size_t)(1 + ((x >> 2) % 64)) : (size_t)1 << 16;
	unsigned long stop = ((x >> 10) & 7) == 0 ? 1 + (unsigned long)((x >> 13) % 8) : 0;
	static const sb_api apis[] = { SB_API_OPENAI_CHAT, SB_API_OPENAI_COMPLETIONS,
				       SB_API_LLAMA_COMPLETION };
	sb_api api = apis[(x >> 20) % 3];

	outcome a = parse(data, size, max, stop, 0, seed, api);
	outcome b = parse(data, size, max, stop, 1, seed, api);
	outcome d = parse(data, size, max, stop, 2, seed, api);
	if (a.rc == -ENOMEM || b.rc == -ENOMEM || d.rc == -ENOMEM)
		return 0;
	FUZZ_CHECK(a.rc == 0 || a.rc == -1 || a.rc == SB_SSE_TOO_LARGE, "known return value");
	FUZZ_CHECK(a.n == b.n && a.n == d.n, "same number of events however the input is split");
	FUZZ_CHECK(a.h == b.h && a.h == d.h, "same events however the input is split");
	FUZZ_CHECK(a.rc == b.rc && a.rc == d.rc, "same result however the input is split");
	if (a.rc == 0) {
		FUZZ_CHECK(a.pending == b.pending && a.pending == d.pending,
			   "same pending state however the input is split");
		FUZZ_CHECK(a.comments == b.comments && a.comments == d.comments,
			   "same comment count however the input is split");
	}
	return 0;
}
