/* stepnoise.c — step-noise factors with the lognormal's parameters kept
 * per (cv, k) (see stepnoise.h). */
#include "stepnoise.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <gsl/gsl_randist.h>

void sb_stepnoise_init(sb_stepnoise *n)
{
	for (int i = 0; i < SB_STEPNOISE_TABLE; i++) {
		n->e[i].cv = NAN;
		n->e[i].k = 0;
	}
}

/* (cv, k)'s place: k xor a hash of cv's bits, so the runs of one cv take
 * distinct places. */
static inline unsigned place_of(double cv, long k)
{
	uint64_t b;
	memcpy(&b, &cv, sizeof b);
	unsigned h = (unsigned)((b * 0x9e3779b97f4a7c15ULL) >> 56);
	return ((unsigned)k ^ h) & (SB_STEPNOISE_TABLE - 1);
}

double sb_stepnoise_draw(sb_stepnoise *n, sb_noise_kind kind, double cv, long k, gsl_rng *r)
{
	if (kind == SB_NOISE_LOGNORMAL) {
		sb_stepnoise_entry *x = &n->e[place_of(cv, k)];
		if (x->cv != cv || x->k != k) {
			double c = cv / sqrt((double)k);
			if (!(c > 0))
				return 1.0;
			x->cv = cv;
			x->k = k;
			x->s2 = log1p(c * c);
			x->sd = sqrt(x->s2);
		}
		return exp(gsl_ran_gaussian(r, x->sd) - x->s2 / 2);
	}
	double c = cv / sqrt((double)k);
	if (!(c > 0))
		return 1.0;
	if (kind == SB_NOISE_GAMMA)
		return gsl_ran_gamma(r, 1.0 / (c * c), c * c);
	return 1.0;
}
