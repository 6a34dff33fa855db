/* stepnoise.h — the engine's step-noise factor (model.noise) of a run of k
 * steps: mean 1, coefficient of variation cv/sqrt(k) for steps of cv
 * (sim.h), lognormal or gamma.
 *
 * A lognormal factor is exp(N(-s2/2, s2)) with s2 = log1p(c^2), c =
 * cv/sqrt(k): a division, a sqrt, a log1p and a sqrt per draw besides the
 * normal. The same few (cv, k) recur all through a level, so a table keeps
 * s2 and sqrt(s2) per (cv, k), direct-mapped on k (one step cv's runs of
 * k < SB_STEPNOISE_TABLE never collide). A hit returns the very doubles a
 * fresh computation gives, so every draw is bit-identical to computing them
 * each time; only the time differs (these were ~6% of a fleet's profile,
 * bench/README.md).
 *
 * Embedded in the simulator's state (_init, no _fini); not thread-safe,
 * one per simulated level.
 */
#ifndef SB_STEPNOISE_H
#define SB_STEPNOISE_H

#include <gsl/gsl_rng.h>

#include "core/model.h" /* sb_noise_kind */

#define SB_STEPNOISE_TABLE 256 /* a power of two */

typedef struct sb_stepnoise_entry {
	double cv;         /* the step cv; NaN: empty */
	long k;
	double s2, sd;     /* log1p(c^2) and its sqrt, c = cv / sqrt(k) */
} sb_stepnoise_entry;

typedef struct sb_stepnoise {
	sb_stepnoise_entry e[SB_STEPNOISE_TABLE];
} sb_stepnoise;

/* An empty table. */
void sb_stepnoise_init(sb_stepnoise *n);

/* The factor of a run of k >= 1 steps of coefficient of variation cv each:
 * mean 1, cv/sqrt(k), of the given kind, drawn from r; 1 with nothing
 * drawn for SB_NOISE_NONE or when cv/sqrt(k) is not > 0. */
double sb_stepnoise_draw(sb_stepnoise *n, sb_noise_kind kind, double cv, long k, gsl_rng *r);

#endif
