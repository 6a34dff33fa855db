/* test_stepnoise.c — step-noise factors (sim/stepnoise.h) are bit-identical
 * to the formula computed afresh for every draw: lognormal exp(N(-s2/2, s2))
 * with s2 = log1p(c^2), c = cv/sqrt(k), and gamma(1/c^2, c^2), drawn from
 * twin generators of one seed, over 200000 draws of (cv, k) from two step
 * cvs and k in 1..600 (so table places collide and entries are replaced);
 * SB_NOISE_NONE and cv <= 0 give 1 and draw nothing. The mean and cv of the
 * lognormal factors at k = 4 are within 5 standard errors of 1 and cv/2. */
#include <math.h>

#include <gsl/gsl_randist.h>

#include "../check.h"
#include "core/dist.h"
#include "sim/stepnoise.h"

static double fresh(sb_noise_kind kind, double cv, long k, gsl_rng *r)
{
	double c = cv / sqrt((double)k);
	if (!(c > 0))
		return 1.0;
	if (kind == SB_NOISE_LOGNORMAL) {
		double s2 = log1p(c * c);
		return exp(gsl_ran_gaussian(r, sqrt(s2)) - s2 / 2);
	}
	if (kind == SB_NOISE_GAMMA)
		return gsl_ran_gamma(r, 1.0 / (c * c), c * c);
	return 1.0;
}

int main(void)
{
	static sb_stepnoise n;
	sb_stepnoise_init(&n);
	gsl_rng *a = sb_rng_new(11), *b = sb_rng_new(11), *pick = sb_rng_new(12);
	const double cvs[] = { 0.0367, 0.25 };
	long differ = 0;
	for (int i = 0; i < 200000; i++) {
		sb_noise_kind kind = i % 3 == 0 ? SB_NOISE_GAMMA : SB_NOISE_LOGNORMAL;
		double cv = cvs[gsl_rng_uniform_int(pick, 2)];
		long k = 1 + (long)gsl_rng_uniform_int(pick, 600);
		double x = sb_stepnoise_draw(&n, kind, cv, k, a);
		double y = fresh(kind, cv, k, b);
		differ += memcmp(&x, &y, sizeof x) != 0;
	}
	CHECK(differ == 0);
	/* nothing drawn: the twins stay in step */
	CHECK(sb_stepnoise_draw(&n, SB_NOISE_NONE, 0.3, 2, a) == 1.0);
	CHECK(sb_stepnoise_draw(&n, SB_NOISE_LOGNORMAL, 0.0, 2, a) == 1.0);
	CHECK(sb_stepnoise_draw(&n, SB_NOISE_GAMMA, -1.0, 2, a) == 1.0);
	CHECK(sb_stepnoise_draw(&n, SB_NOISE_LOGNORMAL, NAN, 2, a) == 1.0);
	CHECK(gsl_rng_get(a) == gsl_rng_get(b));
	/* the factor's moments: mean 1, cv 0.5/sqrt(4) = 0.25 */
	double s = 0, s2 = 0;
	const int m = 100000;
	for (int i = 0; i < m; i++) {
		double x = sb_stepnoise_draw(&n, SB_NOISE_LOGNORMAL, 0.5, 4, a);
		s += x;
		s2 += x * x;
	}
	double mean = s / m, sd = sqrt(s2 / m - mean * mean);
	CHECK_NEAR(mean, 1.0, 5 * 0.25 / sqrt(m));
	/* the sd's standard error: sd * sqrt((kurtosis - 1) / 4m), sd / sqrt(2m)
	 * for a normal sample; x1.5 for this lognormal's kurtosis (~4.1) */
	CHECK_NEAR(sd, 0.25, 5 * 0.25 / sqrt(2.0 * m) * 1.5);
	gsl_rng_free(a);
	gsl_rng_free(b);
	gsl_rng_free(pick);
	CHECK_DONE();
}
