/* fit_noise.h — maximum-likelihood fits of the engine's multiplicative noise
 * (a positive factor of mean ~1: observed / predicted step or request time)
 * with a Kolmogorov–Smirnov goodness-of-fit statistic.
 *
 * Lognormal: mu, sigma of log x (closed-form MLE). Gamma: shape k, scale
 * theta (Newton iteration on log k - psi(k) = log mean - mean log). The KS
 * p-value uses the asymptotic Kolmogorov distribution with Stephens'
 * small-sample correction; since the parameters come from the same data it
 * is conservative (too large), so read it as "no evidence against" only.
 */
#ifndef SB_FIT_NOISE_H
#define SB_FIT_NOISE_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"
#include "core/model.h"

typedef struct sb_noisefit {
	sb_noise_kind kind;
	size_t n;
	double a, b;   /* lognormal: mu, sigma; gamma: shape k, scale theta */
	double mean, cv;
	double loglik;
	double ks_d, ks_p;
} sb_noisefit;

/* Fits `kind` (lognormal or gamma) to x (borrowed, n values, all > 0 and
 * finite). Needs n >= 3 and some spread. Returns 0 or -EINVAL. O(n log n). */
int sb_noisefit_run(const double *x, size_t n, sb_noise_kind kind,
		    sb_noisefit *out, sb_error *e);
/* Fits both kinds and returns the one with the larger likelihood in *best,
 * the other in *other (may be NULL). Returns 0 or -EINVAL. */
int sb_noisefit_best(const double *x, size_t n, sb_noisefit *best,
		     sb_noisefit *other, sb_error *e);
/* New JSON object describing the fit. */
json_t *sb_noisefit_to_json(const sb_noisefit *f);
/* Kolmogorov distribution tail: P(sqrt(n) D > lambda), asymptotic. */
double sb_noisefit_ks_q(double lambda);

#endif
