/* fuzz_ndjson.c — the incremental NDJSON splitter (measure/ndjson.h) and
 * the Ollama stream adapter behind it (measure/api.h).
 *
 * As in fuzz_sse.c the input is one response stream parsed three times —
 * in one piece, byte by byte and in random pieces seeded from a hash of the
 * input — and the three runs must deliver the same lines, return the same
 * value and end in the same state (then sb_ndjson_finish delivers the same
 * last line). Lines of the first run go to sb_api_ndjson_line; the whole
 * input also goes to sb_api_response (a non-streamed reply) for each API.
 */
#include "fuzz.h"
#include "measure/api.h"
#include "measure/jscan.h"
#include "measure/ndjson.h"

typedef struct run {
	uint64_t h;
	unsigned long n;
	unsigned long stop;
	int adapt;
	sb_api api;
	sb_stream st;
} run;

static int on_line(void *ud, const char *line, size_t len)
{
	run *r = ud;
	FUZZ_CHECK(line != NULL && len > 0, "a delivered line is not empty");
	FUZZ_CHECK(memchr(line, '\n', len) == NULL, "a line holds no newline");
	r->h = fuzz_mix(r->h, line, len);
	r->n++;
	if (r->adapt) {
		int tok = 0;
		(void)sb_api_ndjson_line(r->api, &r->st, line, len, &tok);
		sb_jspan v;
		if (sb_jscan_find(line, len, "message.content", &v) == 1)
			FUZZ_CHECK(v.n == 0 || (v.p >= line && v.p + v.n <= line + len),
				   "a found span lies inside the line");
	}
	if (r->stop && r->n == r->stop)
		return -1;
	return 0;
}

typedef struct outcome {
	uint64_t h;
	unsigned long n;
	int rc, pending, rc_finish;
} outcome;

static outcome parse(const uint8_t *data, size_t size, size_t max, unsigned long stop,
		     int how, uint64_t seed, sb_api api)
{
	run r = { 1469598103934665603ULL, 0, stop, how == 0, api, { 0 } };
	outcome o = { 0, 0, -ENOMEM, 0, 0 };
	sb_stream_reset(&r.st);
	sb_ndjson *p = sb_ndjson_new(max, on_line, &r);
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
			size_t lim = (x & 3) == 0 ? 4096 : 16;
			piece = 1 + (size_t)((x >> 8) % lim);
			if (piece > size - pos)
				piece = size - pos;
		}
		rc = sb_ndjson_feed(p, s + pos, piece);
		pos += piece;
	}
	o.rc = rc;
	o.pending = sb_ndjson_pending(p);
	o.rc_finish = rc == 0 ? sb_ndjson_finish(p) : 0;
	if (rc == 0 && o.rc_finish == 0)
		FUZZ_CHECK(!sb_ndjson_pending(p), "finish leaves nothing pending");
	o.h = r.h;
	o.n = r.n;
	sb_ndjson_reset(p);
	FUZZ_CHECK(!sb_ndjson_pending(p), "reset forgets the partial line");
	sb_ndjson_free(p);
	sb_stream_fini(&r.st);
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t seed = fuzz_hash(data, size);
	uint64_t c = seed;
	uint64_t x = fuzz_next(&c);
	size_t max = (x & 3) == 0 ? (size_t)(1 + ((x >> 2) % 64)) : (size_t)1 << 16;
	unsigned long stop = ((x >> 10) & 7) == 0 ? 1 + (unsigned long)((x >> 13) % 8) : 0;
	sb_api api = ((x >> 20) & 1) ? SB_API_OLLAMA_CHAT : SB_API_OLLAMA_GENERATE;

	outcome a = parse(data, size, max, stop, 0, seed, api);
	outcome b = parse(data, size, max, stop, 1, seed, api);
	outcome d = parse(data, size, max, stop, 2, seed, api);
	if (a.rc == -ENOMEM || b.rc == -ENOMEM || d.rc == -ENOMEM)
		return 0;
	FUZZ_CHECK(a.rc == 0 || a.rc == -1 || a.rc == SB_NDJSON_TOO_LARGE, "known return value");
	FUZZ_CHECK(a.rc == b.rc && a.rc == d.rc, "same result however the input is split");
	FUZZ_CHECK(a.n == b.n && a.n == d.n, "same number of lines however the input is split");
	FUZZ_CHECK(a.h == b.h && a.h == d.h, "same lines however the input is split");
	if (a.rc == 0) {
		FUZZ_CHECK(a.pending == b.pending && a.pending == d.pending,
			   "same pending state however the input is split");
		FUZZ_CHECK(a.rc_finish == b.rc_finish && a.rc_finish == d.rc_finish,
			   "same finish result however the input is split");
	}

	/* The same bytes as a whole non-streamed response, for each API. */
	static const sb_api apis[] = { SB_API_OPENAI_CHAT, SB_API_OPENAI_COMPLETIONS,
				       SB_API_OLLAMA_GENERATE, SB_API_OLLAMA_CHAT };
	for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
		sb_stream st = { 0 };
		sb_stream_reset(&st);
		(void)sb_api_response(apis[i], &st, (const char *)data, size);
		sb_stream_fini(&st);
	}
	return 0;
}
