/* fit_linear.h — weighted linear least squares with the statistics a
 * calibration report needs: coefficients, standard errors, 95% confidence
 * intervals (Student t), R², residuals, and an F-test between nested fits.
 *
 * Weights are relative (w_i ∝ 1/var_i): the covariance is scaled by the
 * residual variance chi²/(n-p), so intervals come from the data's own
 * scatter. With n == p the fit is exact and carries no intervals.
 */
#ifndef SB_FIT_LINEAR_H
#define SB_FIT_LINEAR_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

#define SB_LINFIT_MAXP 16

typedef struct sb_linfit {
	size_t n, p;
	double coef[SB_LINFIT_MAXP];
	double se[SB_LINFIT_MAXP];      /* NaN when n == p */
	double ci_lo[SB_LINFIT_MAXP];   /* 95% interval; NaN when n == p */
	double ci_hi[SB_LINFIT_MAXP];
	double cov[SB_LINFIT_MAXP][SB_LINFIT_MAXP];
	double rss, tss, r2;            /* weighted sums; r2 NaN when tss == 0 */
	double sigma;                   /* residual standard deviation (unit weight) */
	int has_ci;
	double *fitted, *resid;         /* owned, n entries each */
} sb_linfit;

/* Fits y ≈ X·coef. X is n×p row-major (borrowed), y (borrowed) n values,
 * w (borrowed, may be NULL for equal weights) n positive weights.
 * Requires 1 <= p <= SB_LINFIT_MAXP, n >= p and a design of full column
 * rank. Returns 0, or -EINVAL (message in e) for bad sizes, non-finite
 * input or a rank-deficient design, -ENOMEM. Cost O(n·p²). */
int sb_linfit_run(const double *X, const double *y, const double *w, size_t n,
		  size_t p, sb_linfit *out, sb_error *e);
/* The straight line y ≈ coef[0] + coef[1]·x (x: n values, borrowed);
 * otherwise as sb_linfit_run with p = 2. */
int sb_linfit_line(const double *x, const double *y, const double *w, size_t n,
		   sb_linfit *out, sb_error *e);
/* Recomputes f's covariance, standard errors and 95% intervals (normal
 * quantile) for weights w that are absolute, w_i = 1/var_i with var_i known:
 * cov = (X'WX)^-1, not scaled by the residuals (so an exact fit, n == p,
 * gets intervals too). X, w: those f was fitted with (borrowed). Returns 0
 * or -EINVAL (message in e) when X'WX is singular. */
int sb_linfit_known_var(sb_linfit *f, const double *X, const double *w, sb_error *e);
/* Recomputes f's covariance, standard errors and 95% intervals (Student t)
 * for points whose variance differs by group (group[i]: point i's; the
 * requests of one measured level, say): the sandwich (X'WX)^-1 X'W V W X
 * (X'WX)^-1 with V the group's mean of w r^2 / (1 - leverage), or the
 * pooled residual variance for a group of fewer than 3 points. The
 * coefficients stay as fitted. X, w: those f was fitted with (borrowed).
 * Returns 0 (nothing changed when n == p), -EINVAL (message in e) when
 * X'WX is singular, or -ENOMEM. */
int sb_linfit_group_var(sb_linfit *f, const double *X, const double *w, const size_t *group,
			sb_error *e);
/* Releases the arrays; f may be NULL. */
void sb_linfit_fini(sb_linfit *f);
/* Prediction at a design row x (p values) and its standard error (NaN
 * without intervals). */
double sb_linfit_predict(const sb_linfit *f, const double *x, double *se);
/* F-test of the nested model `reduced` (fewer columns, same data) against
 * `full`. Returns the p-value (small: the extra terms are supported) and
 * stores F in *F; NaN when full has no residual degrees of freedom. */
double sb_linfit_ftest(const sb_linfit *reduced, const sb_linfit *full,
		       double *F);
/* New JSON object: { "n", "dof", "r2", "sigma", "coef": { name: {"value",
 * "se", "ci95": [lo, hi] } } }. names: p strings (borrowed). */
json_t *sb_linfit_to_json(const sb_linfit *f, const char *const *names);
/* The two-sided 95% Student t quantile for dof degrees of freedom. */
double sb_linfit_t95(double dof);

#endif
