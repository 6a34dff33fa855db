/* test_event_heap.c — the event list pops in (time, push order) order,
 * also when most pushes come in time order (its FIFO) mixed with some that
 * do not (its heap), against a sorted copy of everything pushed. */
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_rng.h>

#include "core/dist.h"
#include "sim/event_heap.h"
#include "../check.h"

typedef struct pushed {
	double t;
	long arg; /* push order */
} pushed;

static int cmp_pushed(const void *x, const void *y)
{
	const pushed *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return (a->arg > b->arg) - (a->arg < b->arg);
}

int main(void)
{
	sb_heap *h = sb_heap_new();
	gsl_rng *r = sb_rng_new(42);
	sb_event ev;
	CHECK_MSG(h && r, "allocation");
	CHECK_MSG(!sb_heap_pop(h, &ev), "empty heap pops nothing");
	CHECK_MSG(sb_heap_peek(h) == NULL, "empty heap peeks NULL");
	/* many random times, drawn from few values so that ties are common */
	const int n = 20000;
	for (int i = 0; i < n; i++)
		CHECK_MSG(sb_heap_push(h, (double)gsl_rng_uniform_int(r, 50) / 10.0, 1, 0, i) == 0, "push");
	CHECK_MSG(sb_heap_size(h) == (size_t)n, "size %zu", sb_heap_size(h));
	CHECK_MSG(sb_heap_is_valid(h), "heap invariant");
	double lt = -1;
	long larg = -1;
	int count = 0;
	while (sb_heap_pop(h, &ev)) {
		CHECK_MSG(ev.t > lt || (ev.t == lt && ev.arg > larg),
		          "order: (%g,%ld) after (%g,%ld)", ev.t, ev.arg, lt, larg);
		lt = ev.t;
		larg = ev.arg;
		count++;
	}
	CHECK_MSG(count == n, "popped %d of %d", count, n);
	/* interleaved pushes and pops keep the order */
	sb_heap_clear(h);
	double now = 0;
	for (int i = 0; i < 1000; i++)
		sb_heap_push(h, gsl_rng_uniform(r), 0, 0, i);
	for (int i = 0; i < 100000; i++) {
		CHECK_MSG(sb_heap_pop(h, &ev), "pop");
		CHECK_MSG(ev.t >= now, "time went backwards: %g < %g", ev.t, now);
		now = ev.t;
		sb_heap_push(h, now + gsl_rng_uniform(r), 0, 0, i);
	}
	CHECK_MSG(sb_heap_is_valid(h), "heap invariant after churn");
	/* a simulator's mix: arrivals a fixed delay ahead of a clock that
	 * moves forward (in time order: the FIFO), events at the current
	 * instant and a few at random times (out of order: the heap), pops
	 * in between; the FIFO wraps and grows. Everything pushed must come
	 * out exactly in sorted (time, push order). */
	sb_heap_clear(h);
	enum { M = 60000 };
	static pushed all[M];
	long np = 0, npop = 0;
	now = 0;
	int bad = 0;
	while (np < M) {
		double u = gsl_rng_uniform(r), t;
		if (u < 0.6)
			t = now + 0.5;                    /* fixed delay: in order */
		else if (u < 0.8)
			t = now;                          /* this instant */
		else
			t = now + gsl_rng_uniform(r);     /* anywhere ahead */
		CHECK_MSG(sb_heap_push(h, t, 0, 0, np) == 0, "push");
		all[np].t = t;
		all[np].arg = np;
		np++;
		/* pops at random, more at times, so the list grows and shrinks */
		int k = (int)gsl_rng_uniform_int(r, np % 5000 < 2500 ? 2 : 3);
		for (int i = 0; i < k && sb_heap_pop(h, &ev); i++) {
			bad += ev.t < now;
			now = ev.t;
			npop++;
		}
		if (np % 1000 == 0)
			bad += !sb_heap_is_valid(h);
	}
	CHECK_MSG(bad == 0, "time went backwards or invariant broken %d times", bad);
	/* the rest must come out in sorted order of what is still held */
	CHECK_MSG(sb_heap_size(h) == (size_t)(np - npop), "size %zu", sb_heap_size(h));
	sb_heap_clear(h);
	/* the same pushes without pops: the exact order */
	for (long i = 0; i < M; i++)
		sb_heap_push(h, all[i].t, 0, 0, i);
	qsort(all, M, sizeof *all, cmp_pushed);
	long at = 0;
	bad = 0;
	while (sb_heap_pop(h, &ev)) {
		bad += at >= M || ev.t != all[at].t || ev.arg != all[at].arg;
		at++;
	}
	CHECK_MSG(bad == 0 && at == M, "order against the sorted copy: %d wrong, %ld popped", bad, at);
	sb_heap_free(h);
	sb_heap_free(NULL);
	gsl_rng_free(r);
	if (check_failures)
		fprintf(stderr, "%d failure(s)\n", check_failures);
	return check_failures ? 1 : 0;
}
