/* test_timers.c — the per-server run timers (sim/timers.h) against brute
 * force: for fleets of 1, 2, 3, 50, 100 and 129 ids (a power of two, one
 * past it, and sizes between), after every one of 200000 random arms,
 * moves (earlier and later) and disarms, the earliest armed id by (time,
 * sequence) is the one a scan over all ids finds, with its time and
 * sequence exact; ties in time go to the lower sequence. Times are whole
 * numbers from -3 to 16 (ties common; negative ones exercise the key
 * mapping), -0.0 (equal to 0 as a double, so a tie) and INFINITY (armed,
 * so before any disarmed id). */
#include <math.h>
#include <stdint.h>

#include "../check.h"
#include "core/dist.h"
#include "sim/timers.h"

enum { NMAX = 129 };

static double draw_time(gsl_rng *g)
{
	unsigned long u = gsl_rng_uniform_int(g, 22);
	if (u == 20)
		return -0.0;
	if (u == 21)
		return INFINITY;
	return (double)u - 3.0;
}

/* The earliest armed id by brute force, -1 when none. */
static int scan(int n, const int *armed, const double *t, const uint64_t *seq)
{
	int best = -1;
	for (int k = 0; k < n; k++)
		if (armed[k] && (best < 0 || t[k] < t[best] ||
				 (t[k] == t[best] && seq[k] < seq[best])))
			best = k;
	return best;
}

static int run(int n, unsigned long seed)
{
	sb_timers *tm = sb_timers_new(n);
	gsl_rng *g = sb_rng_new(seed);
	int armed[NMAX] = { 0 };
	double t[NMAX];
	uint64_t seq[NMAX], next = 0;
	int bad = 0;
	for (int step = 0; step < 200000; step++) {
		int id = (int)gsl_rng_uniform_int(g, (unsigned long)n);
		if (gsl_rng_uniform(g) < 0.7) {
			t[id] = draw_time(g);
			seq[id] = next++;
			armed[id] = 1;
			sb_timers_set(tm, id, t[id], seq[id]);
		} else {
			armed[id] = 0;
			sb_timers_clear(tm, id);
		}
		int best = scan(n, armed, t, seq);
		double bt;
		uint64_t bs;
		int got = sb_timers_peek(tm, &bt, &bs);
		bad += got != best || (best >= 0 && (bt != t[best] || bs != seq[best]));
	}
	for (int k = 0; k < n; k++)
		sb_timers_clear(tm, k);
	double bt;
	uint64_t bs;
	bad += sb_timers_peek(tm, &bt, &bs) != -1;
	sb_timers_free(tm);
	gsl_rng_free(g);
	return bad;
}

int main(void)
{
	const int sizes[] = { 1, 2, 3, 50, 100, NMAX };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		CHECK(run(sizes[i], 3 + i) == 0);
	sb_timers_free(NULL);
	CHECK_DONE();
}
