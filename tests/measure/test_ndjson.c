/* test_ndjson.c — the NDJSON splitter under every chunking. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "measure/ndjson.h"

typedef struct transcript {
	char text[4096];
	size_t n;
} transcript;

static int collect(void *ud, const char *line, size_t len)
{
	transcript *t = ud;
	int k = snprintf(t->text + t->n, sizeof(t->text) - t->n, "[%.*s]", (int)len, line);
	if (k > 0)
		t->n += (size_t)k;
	return 0;
}

static int run(const char *in, size_t len, const size_t *cuts, size_t ncuts, size_t max,
	       transcript *t, int finish)
{
	memset(t, 0, sizeof(*t));
	sb_ndjson *p = sb_ndjson_new(max, collect, t);
	size_t at = 0;
	int rc = 0;
	for (size_t i = 0; i <= ncuts && rc == 0; i++) {
		size_t to = i < ncuts ? cuts[i] : len;
		rc = sb_ndjson_feed(p, in + at, to - at);
		at = to;
	}
	if (rc == 0 && finish)
		rc = sb_ndjson_finish(p);
	sb_ndjson_free(p);
	return rc;
}

static void expect(const char *in, const char *want, int finish)
{
	size_t len = strlen(in);
	transcript t;
	CHECK(run(in, len, NULL, 0, 4096, &t, finish) == 0);
	CHECK_STR(t.text, want);
	for (size_t i = 0; i <= len; i++) {
		CHECK(run(in, len, &i, 1, 4096, &t, finish) == 0);
		if (strcmp(t.text, want)) {
			fprintf(stderr, "split at %zu: got \"%s\"\n", i, t.text);
			check_failures++;
		}
	}
	size_t *cuts = malloc((len + 1) * sizeof(size_t));
	for (size_t i = 0; i < len; i++)
		cuts[i] = i + 1;
	CHECK(run(in, len, cuts, len ? len - 1 : 0, 4096, &t, finish) == 0);
	CHECK_STR(t.text, want);
	free(cuts);
}

int main(void)
{
	expect("{\"response\":\"a\",\"done\":false}\n{\"done\":true}\n",
	       "[{\"response\":\"a\",\"done\":false}][{\"done\":true}]", 0);
	/* CRLF, blank and whitespace-only lines */
	expect("{\"a\":1}\r\n\r\n  \n{\"b\":2}\r\n", "[{\"a\":1}][{\"b\":2}]", 0);
	/* final line without a newline: only delivered by finish */
	expect("{\"a\":1}\n{\"b\":2}", "[{\"a\":1}]", 0);
	expect("{\"a\":1}\n{\"b\":2}", "[{\"a\":1}][{\"b\":2}]", 1);
	/* too large */
	{
		char big[200];
		memset(big, 'z', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		transcript t;
		size_t cut = 50;
		CHECK(run(big, strlen(big), NULL, 0, 64, &t, 0) == SB_NDJSON_TOO_LARGE);
		CHECK(run(big, strlen(big), &cut, 1, 64, &t, 0) == SB_NDJSON_TOO_LARGE);
	}
	sb_ndjson_free(NULL);
	return check_report("test_ndjson");
}
