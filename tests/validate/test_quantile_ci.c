/* test_quantile_ci.c — a percentile's order-statistic interval
 * (validate/quantile_ci.h) on known answers, open bounds, infinite values,
 * bad input, and its coverage on exponential samples. */
#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>

#include "validate/quantile_ci.h"
#include "../check.h"

/* The median of 10 values: the textbook interval is [x_(2), x_(9)] with
 * coverage 1 - 2 P(Bin(10, 0.5) <= 1) = 1 - 2 x 11/1024 = 0.978516. */
static void test_known(void)
{
	double x[10] = { 7, 3, 9, 1, 5, 10, 2, 8, 4, 6 };
	sb_quantile_ci c;
	sb_error e = { "" };
	CHECK(sb_quantile_ci_compute(x, 10, 0.5, 0.95, &c, &e) == 0);
	CHECK(c.rank_lo == 2 && c.rank_hi == 9);
	CHECK_NEAR(c.lo, 2, 0);
	CHECK_NEAR(c.hi, 9, 0);
	CHECK_NEAR(c.coverage, 1 - 2 * 11.0 / 1024, 1e-9);
	CHECK_NEAR(c.point, 5.5, 1e-12); /* linear interpolation, as hist.h */
	CHECK(x[0] == 7);                /* not reordered */
	/* p90 of 1..10: h = 8.1 -> 9.1 */
	CHECK(sb_quantile_ci_compute(x, 10, 0.9, 0.95, &c, &e) == 0);
	CHECK_NEAR(c.point, 9.1, 1e-12);
}

/* The p99 of 100 values has no upper bound at 95% (1 - 0.99^100 = 0.634
 * < 0.975): it is open; from 368 values on it is finite (0.99^367 = 0.02501 > 0.025,
 * 0.99^368 = 0.02476). A p1 has no lower bound the same way. */
static void test_open(void)
{
	double x[400];
	for (int i = 0; i < 400; i++)
		x[i] = i + 1;
	sb_quantile_ci c;
	sb_error e = { "" };
	CHECK(sb_quantile_ci_compute(x, 100, 0.99, 0.95, &c, &e) == 0);
	CHECK(isinf(c.hi) && c.hi > 0 && c.rank_hi == 101);
	CHECK(isfinite(c.lo) && c.lo < c.point);
	CHECK(sb_quantile_ci_compute(x, 367, 0.99, 0.95, &c, &e) == 0);
	CHECK(isinf(c.hi));
	CHECK(sb_quantile_ci_compute(x, 368, 0.99, 0.95, &c, &e) == 0);
	CHECK(c.rank_hi == 368 && c.hi == 368);
	CHECK(sb_quantile_ci_compute(x, 100, 0.01, 0.95, &c, &e) == 0);
	CHECK(isinf(c.lo) && c.lo < 0 && c.rank_lo == 0 && isfinite(c.hi));
	CHECK(c.coverage >= 0.95);
}

/* Failed requests count as +infinity: a median among them is infinite. */
static void test_infinite(void)
{
	double x[5] = { 1, INFINITY, 2, INFINITY, INFINITY };
	sb_quantile_ci c;
	sb_error e = { "" };
	CHECK(sb_quantile_ci_compute(x, 5, 0.5, 0.9, &c, &e) == 0);
	CHECK(isinf(c.point));
	double y[4] = { 1, 2, 3, INFINITY };
	CHECK(sb_quantile_ci_compute(y, 4, 0.5, 0.9, &c, &e) == 0);
	CHECK_NEAR(c.point, 2.5, 1e-12);
}

static void test_bad(void)
{
	double x[3] = { 1, NAN, 2 };
	sb_quantile_ci c;
	sb_error e = { "" };
	CHECK(sb_quantile_ci_compute(x, 0, 0.5, 0.95, &c, &e) == -EINVAL);
	CHECK(sb_quantile_ci_compute(x, 1, 1.0, 0.95, &c, &e) == -EINVAL);
	CHECK(sb_quantile_ci_compute(x, 1, 0.5, 1.0, &c, &e) == -EINVAL);
	CHECK(sb_quantile_ci_compute(x, 3, 0.5, 0.95, &c, &e) == -EINVAL);
	CHECK(strstr(e.msg, "NaN") != NULL);
}

/* Coverage: 4000 samples of 50 exponential values; the interval for the
 * p90 must hold the true quantile ln 10 in the fraction the binomial says
 * (c.coverage), within 4 standard errors sqrt(c (1 - c) / 4000) (~0.016). */
static void test_coverage(void)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, 13);
	const int trials = 4000;
	int inside = 0;
	double cov = 0;
	for (int t = 0; t < trials; t++) {
		double x[50];
		for (int i = 0; i < 50; i++)
			x[i] = gsl_ran_exponential(r, 1.0);
		sb_quantile_ci c;
		sb_error e = { "" };
		CHECK(sb_quantile_ci_compute(x, 50, 0.9, 0.95, &c, &e) == 0);
		cov = c.coverage;
		inside += c.lo <= log(10) && log(10) <= c.hi;
	}
	gsl_rng_free(r);
	CHECK(cov >= 0.95);
	double se = sqrt(cov * (1 - cov) / trials);
	CHECK_NEAR((double)inside / trials, cov, 4 * se);
}

int main(void)
{
	test_known();
	test_open();
	test_infinite();
	test_bad();
	test_coverage();
	CHECK_DONE();
}
