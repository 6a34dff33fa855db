/* quantile_ci.h — a percentile of n measured values and its distribution-free
 * confidence interval from order statistics.
 *
 * The point estimate is the percentile as core/hist.h and the simulator
 * define it (linear interpolation between order statistics), so a measured
 * figure and a predicted one mean the same thing.
 *
 * The interval is the equal-tailed order-statistic interval
 * [x_(l), x_(u)] (x sorted ascending, ranks 1..n): with B ~ Binomial(n, p)
 * the count of values at or below the true p-quantile, l is the largest
 * rank with P(B <= l - 1) <= alpha/2 and u the smallest with
 * P(B >= u) <= alpha/2, so the interval covers the true quantile with
 * probability P(l <= B <= u - 1) >= 1 - alpha for any continuous
 * distribution (the exact coverage is reported). When no rank is far
 * enough out the bound is open: lo = -INFINITY (l < 1), hi = +INFINITY
 * (u > n) — e.g. the p99 of fewer than 368 values has no finite upper
 * bound at 95%.
 */
#ifndef SB_QUANTILE_CI_H
#define SB_QUANTILE_CI_H

#include <stddef.h>

#include "core/error.h"

typedef struct sb_quantile_ci {
	double p;        /* the quantile, 0 < p < 1 */
	size_t n;        /* values it was taken from */
	double point;    /* linear interpolation between order statistics */
	double lo, hi;   /* the interval; +-INFINITY: open (see above) */
	long rank_lo;    /* l (0: open) */
	long rank_hi;    /* u (n + 1: open) */
	double coverage; /* P(l <= B <= u - 1), >= conf */
} sb_quantile_ci;

/* The p-quantile of the n values x (borrowed, not reordered; +INFINITY
 * allowed, e.g. a failed request; NaN not) and its interval at confidence
 * conf (e.g. 0.95). Returns 0, or -EINVAL (n == 0, p or conf outside
 * (0, 1), a NaN value) or -ENOMEM with a message. Cost: O(n log n). */
int sb_quantile_ci_compute(const double *x, size_t n, double p, double conf,
			   sb_quantile_ci *out, sb_error *e);

#endif
