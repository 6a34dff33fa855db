/* test_router.c — the fleet's router (sim/router.h) against brute force.
 *
 * A random walk of in-flight and waiting counts over 37 replicas (counts
 * rising into the hundreds, so the bucket table grows): after every step
 * least-outstanding and least-queued must pick a replica holding the
 * smallest count (checked by scanning every replica), p2c must never pick
 * the worse of any pair (its pick never holds more than the largest count
 * and, over many picks, never one above the median more often than below),
 * round-robin cycles, random covers every replica; ties at random: every
 * tied replica is picked. prefix-affinity: without a group as
 * least-outstanding (the same walk); a group's requests all go where its
 * first went, which was a least-loaded replica at the time. Route names round-trip and a bad one is refused
 * with a message naming it.
 */
#include <errno.h>
#include <stdlib.h>

#include "../check.h"
#include "core/dist.h"
#include "sim/router.h"

enum { N = 37 };

/* Random walk of counts; after each step checks the pick is a minimum. */
static void check_min_policy(sb_route route)
{
	sb_router *r = sb_router_new(route, N);
	gsl_rng *g = sb_rng_new(5);
	long out[N] = { 0 }, wait[N] = { 0 };
	int bad = 0;
	for (int step = 0; step < 200000; step++) {
		int i = (int)gsl_rng_uniform_int(g, N);
		/* drift upwards for the first half, then back down */
		int up = gsl_rng_uniform(g) < (step < 100000 ? 0.7 : 0.3);
		if (up) {
			out[i]++;
			wait[i]++;
			CHECK(sb_router_note(r, i, +1, +1) == 0);
		} else if (wait[i] > 0) {
			wait[i]--;
			CHECK(sb_router_note(r, i, 0, -1) == 0);
		} else if (out[i] > 0) {
			out[i]--;
			CHECK(sb_router_note(r, i, -1, 0) == 0);
		}
		const long *key = route == SB_ROUTE_LEAST_QUEUED ? wait : out;
		long min = key[0];
		for (int k = 1; k < N; k++)
			min = key[k] < min ? key[k] : min;
		int p = sb_router_pick(r, g, -1);
		bad += p < 0 || p >= N || key[p] != min;
	}
	for (int k = 0; k < N; k++) {
		CHECK(sb_router_outstanding(r, k) == out[k]);
		CHECK(sb_router_waiting(r, k) == wait[k]);
	}
	CHECK(bad == 0);
	sb_router_free(r);
	gsl_rng_free(g);
}

/* All counts equal: the ties go everywhere, roughly evenly. */
static void check_ties(sb_route route)
{
	sb_router *r = sb_router_new(route, N);
	gsl_rng *g = sb_rng_new(7);
	int hits[N] = { 0 };
	for (int k = 0; k < 37000; k++)
		hits[sb_router_pick(r, g, -1)]++;
	/* 1000 expected each; binomial sd ~31: 6 sd either side */
	for (int k = 0; k < N; k++)
		CHECK(hits[k] > 810 && hits[k] < 1190);
	sb_router_free(r);
	gsl_rng_free(g);
}

/* p2c: with counts 0..N-1, the pick is the lower of two distinct draws,
 * so replica k is picked with chance 2 (N-1-k) / (N (N-1)). */
static void check_p2c(void)
{
	sb_router *r = sb_router_new(SB_ROUTE_P2C, N);
	gsl_rng *g = sb_rng_new(9);
	for (int k = 0; k < N; k++)
		for (int j = 0; j < k; j++)
			sb_router_note(r, k, +1, 0);
	long hits[N] = { 0 };
	const long n = 666000;
	for (long t = 0; t < n; t++)
		hits[sb_router_pick(r, g, -1)]++;
	CHECK(hits[N - 1] == 0); /* the highest count never wins a pair */
	for (int k = 0; k < N; k++) {
		double p = 2.0 * (N - 1 - k) / ((double)N * (N - 1)), mu = p * (double)n;
		CHECK_NEAR((double)hits[k], mu, 6 * sqrt(mu * (1 - p)) + 1e-9);
	}
	sb_router_free(r);
	gsl_rng_free(g);
}

/* prefix-affinity: each group sticks to the replica of its first request,
 * chosen least-loaded; requests without a group are least-outstanding. */
static void check_affinity(void)
{
	sb_router *r = sb_router_new(SB_ROUTE_PREFIX_AFFINITY, 4);
	gsl_rng *g = sb_rng_new(3);
	int home[8];
	for (long grp = 0; grp < 8; grp++) { /* one each, kept in flight */
		home[grp] = sb_router_pick(r, g, grp);
		CHECK(home[grp] >= 0 && home[grp] < 4);
		CHECK(sb_router_note(r, home[grp], +1, 0) == 0);
	}
	int per[4] = { 0 };
	for (int k = 0; k < 8; k++)
		per[home[k]]++;
	CHECK(per[0] == 2 && per[1] == 2 && per[2] == 2 && per[3] == 2); /* least-loaded firsts */
	int stuck = 1;
	for (int k = 0; k < 400; k++) {
		long grp = (long)gsl_rng_uniform_int(g, 8);
		stuck &= sb_router_pick(r, g, grp) == home[grp];
	}
	CHECK(stuck);
	CHECK(sb_router_note(r, 0, +5, 0) == 0);
	int p = sb_router_pick(r, g, -1);
	CHECK(p != 0); /* no group: the least outstanding */
	sb_router_free(r);
	gsl_rng_free(g);
}

int main(void)
{
	check_affinity();
	check_min_policy(SB_ROUTE_PREFIX_AFFINITY);
	check_min_policy(SB_ROUTE_LEAST_OUTSTANDING);
	check_min_policy(SB_ROUTE_LEAST_QUEUED);
	check_ties(SB_ROUTE_LEAST_OUTSTANDING);
	check_ties(SB_ROUTE_LEAST_QUEUED);
	check_ties(SB_ROUTE_RANDOM);
	check_ties(SB_ROUTE_P2C);
	check_p2c();
	sb_router *r = sb_router_new(SB_ROUTE_ROUND_ROBIN, N);
	for (int k = 0; k < 3 * N; k++)
		CHECK(sb_router_pick(r, NULL, -1) == k % N);
	sb_router_free(r);
	for (int k = 0; k < SB_ROUTE_N; k++) {
		sb_route got;
		CHECK(sb_route_parse(sb_route_name((sb_route)k), &got, NULL) == 0 && (int)got == k);
	}
	sb_error e = { "" };
	sb_route got;
	CHECK(sb_route_parse("fastest", &got, &e) == -EINVAL && strstr(e.msg, "fastest"));
	CHECK(sb_router_new(SB_ROUTE_RANDOM, 0) == NULL);
	CHECK_DONE();
}
