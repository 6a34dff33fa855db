/* spread.c — a variance that grows with the square of a size, fitted (see
 * spread.h). */
#include "calibrate/spread.h"

#include <math.h>

#include "calibrate/fit_linear.h"

/* One weighted fit of cal_spread_line's line (w: its weights). */
static int spread_fit_once(const double *T2, const double *S2, const double *w, size_t n,
			   double *a, double *b, double *b_lo, double *b_hi, sb_error *e)
{
	*a = *b = 0;
	*b_lo = *b_hi = NAN;
	if (n == 0)
		return 0;
	sb_linfit f;
	int r = 0, fitted = 0;
	int distinct = 0;
	for (size_t i = 1; i < n; i++)
		distinct |= T2[i] != T2[0];
	if (n >= 2 && distinct) {
		r = sb_linfit_line(T2, S2, w, n, &f, e);
		if (r < 0)
			goto out;
		*a = f.coef[0];
		*b = f.coef[1];
		if (f.has_ci) {
			*b_lo = f.ci_lo[1];
			*b_hi = f.ci_hi[1];
		}
		sb_linfit_fini(&f);
		fitted = 1;
	}
	if (!fitted || *b < 0) {
		/* all overhead (or one step length, which cannot be split: the
		 * caller decides): the weighted mean variance */
		double sw = 0, sv = 0;
		for (size_t i = 0; i < n; i++) {
			sw += w[i];
			sv += w[i] * S2[i];
		}
		*a = sw > 0 ? sv / sw : 0;
		*b = 0;
		*b_lo = *b_hi = NAN;
		goto out;
	}
	if (*a < 0) {
		r = sb_linfit_run(T2, S2, w, n, 1, &f, e); /* through the origin */
		if (r < 0)
			goto out;
		*a = 0;
		*b = f.coef[0];
		*b_lo = f.has_ci ? f.ci_lo[0] : NAN;
		*b_hi = f.has_ci ? f.ci_hi[0] : NAN;
		sb_linfit_fini(&f);
	}
	r = isfinite(*b_lo) ? 1 : 0;
out:
	return r;
}

/* Fits of cal_spread_line: the first weighted by the sample variances,
 * the others by the line before. */
#define SPREAD_ROUNDS 4

/* (spread.h) */
int cal_spread_line(const double *T2, const double *S2, const double *dof, size_t n,
		      double *a, double *b, double *b_lo, double *b_hi, sb_error *e)
{
	double w[64], top = 0;
	if (n > 64)
		n = 64;
	for (size_t i = 0; i < n; i++) {
		w[i] = dof[i] / (S2[i] * S2[i]);
		top = S2[i] > top ? S2[i] : top;
	}
	int r = spread_fit_once(T2, S2, w, n, a, b, b_lo, b_hi, e);
	for (int k = 1; r >= 0 && k < SPREAD_ROUNDS; k++) {
		for (size_t i = 0; i < n; i++) {
			double f = cal_spread_at(*a, *b, T2[i], top);
			w[i] = dof[i] / (f * f);
		}
		r = spread_fit_once(T2, S2, w, n, a, b, b_lo, b_hi, e);
	}
	return r;
}

