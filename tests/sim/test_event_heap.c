/* test_event_heap.c — the event list pops in (time, push order) order. */
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_rng.h>

#include "core/dist.h"
#include "sim/event_heap.h"

static int fails;
#define CHECK(c, ...)                                                   \
	do {                                                            \
		if (!(c)) {                                             \
			fails++;                                        \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                   \
			fputc('\n', stderr);                            \
		}                                                       \
	} while (0)

int main(void)
{
	sb_heap *h = sb_heap_new();
	gsl_rng *r = sb_rng_new(42);
	sb_event ev;
	CHECK(h && r, "allocation");
	CHECK(!sb_heap_pop(h, &ev), "empty heap pops nothing");
	CHECK(sb_heap_peek(h) == NULL, "empty heap peeks NULL");
	/* many random times, drawn from few values so that ties are common */
	const int n = 20000;
	for (int i = 0; i < n; i++)
		CHECK(sb_heap_push(h, (double)gsl_rng_uniform_int(r, 50) / 10.0, 1, 0, i) == 0, "push");
	CHECK(sb_heap_size(h) == (size_t)n, "size %zu", sb_heap_size(h));
	CHECK(sb_heap_is_valid(h), "heap invariant");
	double lt = -1;
	long larg = -1;
	int count = 0;
	while (sb_heap_pop(h, &ev)) {
		CHECK(ev.t > lt || (ev.t == lt && ev.arg > larg),
		      "order: (%g,%ld) after (%g,%ld)", ev.t, ev.arg, lt, larg);
		lt = ev.t;
		larg = ev.arg;
		count++;
	}
	CHECK(count == n, "popped %d of %d", count, n);
	/* interleaved pushes and pops keep the order */
	sb_heap_clear(h);
	double now = 0;
	for (int i = 0; i < 1000; i++)
		sb_heap_push(h, gsl_rng_uniform(r), 0, 0, i);
	for (int i = 0; i < 100000; i++) {
		CHECK(sb_heap_pop(h, &ev), "pop");
		CHECK(ev.t >= now, "time went backwards: %g < %g", ev.t, now);
		now = ev.t;
		sb_heap_push(h, now + gsl_rng_uniform(r), 0, 0, i);
	}
	CHECK(sb_heap_is_valid(h), "heap invariant after churn");
	sb_heap_free(h);
	sb_heap_free(NULL);
	gsl_rng_free(r);
	if (fails)
		fprintf(stderr, "%d failure(s)\n", fails);
	return fails ? 1 : 0;
}
