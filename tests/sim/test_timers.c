/* test_timers.c — the per-server run timers (sim/timers.h) against brute
 * force: after every one of 200000 random arms, moves (earlier and later)
 * and disarms over 50 ids, the earliest armed id by (time, sequence) is the
 * one a scan over all ids finds; ties in time go to the lower sequence. */
#include <stdint.h>

#include "../check.h"
#include "core/dist.h"
#include "sim/timers.h"

enum { N = 50 };

int main(void)
{
	sb_timers *tm = sb_timers_new(N);
	gsl_rng *g = sb_rng_new(3);
	int armed[N] = { 0 };
	double t[N];
	uint64_t seq[N], next = 0;
	int bad = 0;
	for (int step = 0; step < 200000; step++) {
		int id = (int)gsl_rng_uniform_int(g, N);
		if (gsl_rng_uniform(g) < 0.7) {
			/* whole times make ties common */
			t[id] = (double)gsl_rng_uniform_int(g, 20);
			seq[id] = next++;
			armed[id] = 1;
			sb_timers_set(tm, id, t[id], seq[id]);
		} else {
			armed[id] = 0;
			sb_timers_clear(tm, id);
		}
		int best = -1;
		for (int k = 0; k < N; k++)
			if (armed[k] && (best < 0 || t[k] < t[best] ||
					 (t[k] == t[best] && seq[k] < seq[best])))
				best = k;
		double bt;
		uint64_t bs;
		int got = sb_timers_peek(tm, &bt, &bs);
		bad += got != best || (best >= 0 && (bt != t[best] || bs != seq[best]));
	}
	CHECK(bad == 0);
	for (int k = 0; k < N; k++)
		sb_timers_clear(tm, k);
	double bt;
	uint64_t bs;
	CHECK(sb_timers_peek(tm, &bt, &bs) == -1);
	sb_timers_free(tm);
	gsl_rng_free(g);
	CHECK_DONE();
}
