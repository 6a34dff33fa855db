/* test_hist.c — the streaming histogram against exact order statistics. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include <gsl/gsl_randist.h>

#include "core/dist.h"
#include "core/hist.h"
#include "core/stats.h"

/* numpy "linear" quantile of sorted x */
static double exact_q(const double *x, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t lo = (size_t)pos;
	if (lo + 1 >= n)
		return x[n - 1];
	return x[lo] + (pos - (double)lo) * (x[lo + 1] - x[lo]);
}

int main(void)
{
	/* exact mode: small samples give exact interpolated quantiles */
	sb_hist h;
	CHECK(sb_hist_init(&h) == 0);
	CHECK(isnan(sb_hist_quantile(&h, 0.5)));
	const double v[] = { 5, 1, 4, 2, 3 };
	for (int i = 0; i < 5; i++)
		sb_hist_add(&h, v[i]);
	CHECK_NEAR(sb_hist_quantile(&h, 0.5), 3.0, 0);
	CHECK_NEAR(sb_hist_quantile(&h, 0.9), 4.6, 1e-12);
	CHECK_NEAR(sb_hist_mean(&h), 3.0, 1e-12);
	CHECK_NEAR(sb_hist_stddev(&h), sqrt(2.5), 1e-12);
	sb_hist_add(&h, NAN); /* ignored */
	CHECK(h.n == 5);

	/* bucket mode: 200k log-normal values, quantiles within 1% of exact
	 * (the bucket half-width bounds the error at 0.39%) */
	gsl_rng *r = sb_rng_new(7);
	size_t n = 200000;
	double *x = malloc(n * sizeof(*x));
	sb_hist_reset(&h);
	sb_hist big;
	CHECK(sb_hist_init(&big) == 0);
	for (size_t i = 0; i < n; i++) {
		x[i] = gsl_ran_lognormal(r, 3.0, 0.8);
		sb_hist_add(&h, x[i]);
	}
	qsort(x, n, sizeof(*x), sb_cmp_double);
	const double qs[] = { 0.01, 0.1, 0.5, 0.9, 0.99, 0.999 };
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		double want = exact_q(x, n, qs[i]);
		double got = sb_hist_quantile(&h, qs[i]);
		CHECK_NEAR(got / want, 1.0, 0.01);
	}
	CHECK_NEAR(h.min, x[0], 0);
	CHECK_NEAR(h.max, x[n - 1], 0);

	/* merge: two halves merged equal the whole */
	sb_hist a, b;
	CHECK(sb_hist_init(&a) == 0 && sb_hist_init(&b) == 0);
	for (size_t i = 0; i < n; i++)
		sb_hist_add(i % 2 ? &a : &b, x[i]);
	sb_hist_merge(&a, &b);
	CHECK(a.n == n);
	CHECK_NEAR(sb_hist_quantile(&a, 0.99), sb_hist_quantile(&h, 0.99), 1e-9);

	/* memory is bounded: the struct owns fixed-size arrays only */
	for (size_t i = 0; i < 2000000; i++)
		sb_hist_add(&big, 1.0 + (double)(i % 1000));
	CHECK(big.n == 2000000 && big.n_exact == SB_HIST_EXACT);
	CHECK_NEAR(sb_hist_quantile(&big, 0.5) / 500.5, 1.0, 0.01);

	sb_summary s;
	sb_hist_summary(&big, &s);
	CHECK(s.n == 2000000 && s.min == 1.0 && s.max == 1000.0);

	free(x);
	gsl_rng_free(r);
	sb_hist_fini(&h);
	sb_hist_fini(&a);
	sb_hist_fini(&b);
	sb_hist_fini(&big);
	sb_hist_fini(NULL);
	CHECK_DONE();
}
