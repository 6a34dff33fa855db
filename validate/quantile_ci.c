/* quantile_ci.c — a percentile and its order-statistic interval
 * (quantile_ci.h). */
#include "quantile_ci.h"

#include <errno.h>
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

/* P(B <= k) for B ~ Binomial(n, p); 0 for k < 0. */
static double binom_cdf(long k, double p, size_t n)
{
	if (k < 0)
		return 0;
	if ((size_t)k >= n)
		return 1;
	return gsl_cdf_binomial_P((unsigned)k, p, (unsigned)n);
}

/* The quantile of sorted s by linear interpolation (hist.h's definition). */
static double interpolate(const double *s, size_t n, double p)
{
	double h = p * (double)(n - 1);
	size_t i = (size_t)floor(h);
	if (i + 1 >= n)
		return s[n - 1];
	double f = h - (double)i;
	return f == 0 || s[i + 1] == s[i] ? s[i] : s[i] + f * (s[i + 1] - s[i]);
}

/* The ranks l and u of the header. */
static void ranks(size_t n, double p, double alpha, long *l, long *u)
{
	*l = 0;
	while ((size_t)*l < n && binom_cdf(*l, p, n) <= alpha / 2) /* P(B <= (l+1) - 1) */
		++*l;
	*u = (long)n + 1;
	while (*u > 1 && 1 - binom_cdf(*u - 2, p, n) <= alpha / 2) /* P(B >= u - 1) */
		--*u;
}

int sb_quantile_ci_compute(const double *x, size_t n, double p, double conf,
			   sb_quantile_ci *out, sb_error *e)
{
	memset(out, 0, sizeof(*out));
	if (n == 0)
		return sb_error_set(e, "no values to take the p%g of", 100 * p);
	if (!(p > 0 && p < 1) || !(conf > 0 && conf < 1))
		return sb_error_set(e, "quantile %g and confidence %g must lie in (0, 1)", p, conf);
	double *s = malloc(n * sizeof(*s));
	if (!s)
		return sb_error_code(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (isnan(x[i])) {
			free(s);
			return sb_error_set(e, "value %zu is NaN", i);
		}
		s[i] = x[i];
	}
	qsort(s, n, sizeof(*s), sb_cmp_double);
	long l, u;
	ranks(n, p, 1 - conf, &l, &u);
	*out = (sb_quantile_ci){
		.p = p, .n = n, .point = interpolate(s, n, p),
		.lo = l >= 1 ? s[l - 1] : -INFINITY, .hi = (size_t)u <= n ? s[u - 1] : INFINITY,
		.rank_lo = l, .rank_hi = u,
		.coverage = binom_cdf(u - 1, p, n) - binom_cdf(l - 1, p, n),
	};
	free(s);
	return 0;
}
