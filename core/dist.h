/* dist.h — named probability distributions used by workloads and the
 * independent-service mode.
 *
 * Text form (CLI and scenario files), parameters comma-separated:
 *   det:X              always X
 *   exp:MEAN           exponential with the given mean
 *   lognormal:MU,SIGMA log-normal of the underlying normal's mu and sigma
 *   gamma:K,THETA      gamma with shape K and scale THETA (mean K*THETA)
 *   uniform:A,B        uniform on [A, B]
 *   normal:MEAN,SD     normal (callers clamp as they need)
 * A bare number "X" means det:X.
 */
#ifndef SB_DIST_H
#define SB_DIST_H

#include <gsl/gsl_rng.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum sb_dist_kind {
	SB_DIST_DET = 0,
	SB_DIST_EXP,
	SB_DIST_LOGNORMAL,
	SB_DIST_GAMMA,
	SB_DIST_UNIFORM,
	SB_DIST_NORMAL,
} sb_dist_kind;

typedef struct sb_dist {
	sb_dist_kind kind;
	double a, b; /* parameters in the order of the text form */
} sb_dist;

/* Parses the text form; `what` names the flag or field in messages.
 * Rejects negative means/scales, sigma < 0, A > B, non-finite values. */
int sb_dist_parse(const char *s, sb_dist *d, const char *what, sb_error *e);
/* sb_dist_parse, and a mean of at least min (else -EINVAL: "WHAT: 'S' must
 * average at least MIN UNIT"). */
int sb_dist_parse_min(const char *s, sb_dist *d, double min, const char *unit,
		      const char *what, sb_error *e);
/* Accepts a JSON number (det) or string in the text form. */
int sb_dist_from_json(const json_t *j, sb_dist *d, const char *what, sb_error *e);
/* Writes the text form into buf (always NUL-terminated). */
void sb_dist_format(const sb_dist *d, char *buf, size_t len);
/* New JSON string in the text form. */
json_t *sb_dist_to_json(const sb_dist *d);
/* One draw. r is borrowed. */
double sb_dist_sample(const sb_dist *d, const gsl_rng *r);
double sb_dist_mean(const sb_dist *d);
/* Squared coefficient of variation (variance / mean^2); 0 for det. */
double sb_dist_scv(const sb_dist *d);
/* A fixed value? */
static inline int sb_dist_is_det(const sb_dist *d) { return d->kind == SB_DIST_DET; }

/* New generator (mt19937) seeded with seed; NULL on allocation failure.
 * Free with gsl_rng_free(). */
gsl_rng *sb_rng_new(unsigned long seed);
/* splitmix64's mixing step (the building block of sb_seed_derive). */
uint64_t sb_seed_mix(uint64_t x);
/* The seed of part (part1, part2) of a run seeded with `seed` (e.g. level
 * index and replication): mix(mix(seed) ^ part1 << 32 ^ part2), parts taken
 * mod 2^32, low 32 bits. Parts come out unrelated to each other and to every
 * small seed; the same arguments give the same seed. The one way to derive a
 * seed from a seed. */
unsigned long sb_seed_derive(unsigned long seed, unsigned long part1, unsigned long part2);
/* A seed for a run given none: the wall clock's nanoseconds and seconds and
 * the process id, mixed, low 32 bits. Differs between runs; never fails. */
unsigned long sb_seed_from_clock(void);

#endif
