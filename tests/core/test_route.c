/* test_route.c — a fleet router's rules (core/route.h): names, exact
 * round-robin, least-load picks, and the random draws' shares. Shares of n
 * draws are held to 5 binomial standard errors, sqrt(p(1-p)/n), around the
 * share the rule implies (a false failure about once in 3.5 million). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/dist.h"
#include "core/route.h"
#include "../check.h"

#define DRAWS 20000

/* Share of DRAWS picks that went to replica `which`. */
static double share(sb_route_picker *r, const long *inflight, size_t which)
{
	long hit = 0;
	for (int k = 0; k < DRAWS; k++)
		hit += sb_route_pick(r, inflight, -1) == which;
	return (double)hit / DRAWS;
}

static double tol(double p)
{
	return 5 * sqrt(p * (1 - p) / DRAWS);
}

static void test_names(void)
{
	sb_route r;
	sb_error e = { "" };
	CHECK(sb_route_parse("least-queued", &r, &e) == 0 && r == SB_ROUTE_LEAST_QUEUED);
	CHECK(sb_route_parse("p2c", &r, &e) == 0 && r == SB_ROUTE_P2C);
	CHECK(sb_route_parse("fastest", &r, &e) == -EINVAL && strstr(e.msg, "\"fastest\""));
	CHECK_STR(sb_route_name(SB_ROUTE_ROUND_ROBIN), "round-robin");
	CHECK_STR(sb_route_name((sb_route)9), "?");
}

static void test_round_robin(void)
{
	long in[3] = { 5, 0, 0 };
	sb_route_picker r = { .route = SB_ROUTE_ROUND_ROBIN, .n = 3 };
	for (int k = 0; k < 7; k++)
		CHECK(sb_route_pick(&r, in, -1) == (size_t)(k % 3)); /* whatever is in flight */
	sb_route_picker one = { .route = SB_ROUTE_P2C, .n = 1 };
	CHECK(sb_route_pick(&one, in, -1) == 0); /* no generator needed */
}

static void test_least(gsl_rng *g)
{
	long slots[3] = { 4, 1, 2 };
	long in[3] = { 3, 1, 2 };
	sb_route_picker lo = { .route = SB_ROUTE_LEAST_OUTSTANDING, .n = 3, .slots = slots, .rng = g };
	CHECK(sb_route_pick(&lo, in, -1) == 1);
	/* least-queued: waiting = in flight beyond the slots: 0, 0, 0 -> ties */
	sb_route_picker lq = { .route = SB_ROUTE_LEAST_QUEUED, .n = 3, .slots = slots, .rng = g };
	for (size_t i = 0; i < 3; i++)
		CHECK_NEAR(share(&lq, in, i), 1.0 / 3, tol(1.0 / 3));
	long busy[3] = { 6, 2, 3 }; /* waiting 2, 1, 1: replicas 1 and 2 tie */
	CHECK_NEAR(share(&lq, busy, 0), 0, 0);
	CHECK_NEAR(share(&lq, busy, 1), 0.5, tol(0.5));
	long tie[3] = { 1, 1, 4 }; /* least-outstanding: 0 and 1 tie */
	CHECK_NEAR(share(&lo, tie, 0), 0.5, tol(0.5));
	CHECK_NEAR(share(&lo, tie, 2), 0, 0);
}

static void test_random(gsl_rng *g)
{
	long in[4] = { 0, 9, 9, 9 };
	sb_route_picker rnd = { .route = SB_ROUTE_RANDOM, .n = 4, .rng = g };
	CHECK_NEAR(share(&rnd, in, 0), 0.25, tol(0.25)); /* blind to load */
	/* p2c: replica 0 (fewest) wins whenever it is one of the two drawn,
	 * chance 1 - C(3,2)/C(4,2) = 1/2; each other one 1/6 (ties at random) */
	sb_route_picker p2c = { .route = SB_ROUTE_P2C, .n = 4, .rng = g };
	CHECK_NEAR(share(&p2c, in, 0), 0.5, tol(0.5));
	CHECK_NEAR(share(&p2c, in, 3), 1.0 / 6, tol(1.0 / 6));
	/* reproducible for a seed */
	gsl_rng *a = sb_rng_new(7), *b = sb_rng_new(7);
	sb_route_picker ra = { .route = SB_ROUTE_P2C, .n = 4, .rng = a };
	sb_route_picker rb = { .route = SB_ROUTE_P2C, .n = 4, .rng = b };
	long eq[4] = { 1, 1, 1, 1 };
	int same = 1;
	for (int k = 0; k < 1000; k++)
		same &= sb_route_pick(&ra, eq, -1) == sb_route_pick(&rb, eq, -1);
	CHECK(same);
	gsl_rng_free(a);
	gsl_rng_free(b);
}

/* prefix-affinity: a group stays where its first request went (then the
 * least outstanding), whatever the load later; no group: least-outstanding. */
static void test_affinity(gsl_rng *g)
{
	sb_route_picker r = { .route = SB_ROUTE_PREFIX_AFFINITY, .n = 3, .rng = g };
	long in[3] = { 4, 0, 2 };
	CHECK(sb_route_pick(&r, in, 7) == 1);
	long later[3] = { 0, 9, 0 };
	CHECK(sb_route_pick(&r, later, 7) == 1);
	CHECK(sb_route_pick(&r, later, -1) != 1);
	CHECK(sb_route_pick(&r, later, 2) != 1);
	sb_route_picker_fini(&r);
	CHECK(sb_route_pick(&r, later, 7) != 1); /* forgotten: placed afresh */
	sb_route_picker_fini(&r);
}

int main(void)
{
	gsl_rng *g = sb_rng_new(42);
	test_affinity(g);
	test_names();
	test_round_robin();
	test_least(g);
	test_random(g);
	gsl_rng_free(g);
	CHECK_DONE();
}
