/* spread.h — how a time's variance grows with its size: s^2 = a + b x^2,
 * fitted to groups' sample variances (calibrate's noise and prefill fits).
 */
#ifndef SB_CAL_SPREAD_H
#define SB_CAL_SPREAD_H

#include <stddef.h>

#include "core/error.h"

/* The line s^2 = a + b x^2 through groups of squared sizes X2[i] and sample
 * variances S2[i] (n <= 64). For TTFT at concurrency 1 against prompt
 * length, x is the prefill step and the variance overhead_sd^2 +
 * (prefill_cv * step)^2, so the line gives both. dof: each variance's
 * degrees of freedom (its sample size - 1); a sample variance of k dof has
 * variance 2 sigma^4 / k, so each is weighted by k / sigma^4 with sigma^2
 * the line's own value there, refitted until the weights settle
 * (iteratively reweighted). Weights from the sample variances themselves
 * favour the groups that came out low and pull the slope down (prefill_cv
 * 0.014 for a truth of 0.02 over 60 simulated calibrate --url data sets;
 * 0.018 so).
 * A fitted variance is floored at 1% of the largest observed one.
 * With a negative slope the spread is all overhead; with a negative
 * intercept the line goes through the origin. Returns 1 when b has an
 * interval (*b_lo, *b_hi), 0 when not (NaN), -errno on failure. */
int cal_spread_line(const double *X2, const double *S2, const double *dof, size_t n, double *a,
		    double *b, double *b_lo, double *b_hi, sb_error *e);

/* The line's variance at squared size x2, floored at 1% of top (the
 * largest observed variance): what cal_spread_line weights by. */
static inline double cal_spread_at(double a, double b, double x2, double top)
{
	double f = a + b * x2;
	return f > 0.01 * top ? f : 0.01 * top;
}

#endif
