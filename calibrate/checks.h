/* checks.h — estimates that break the shape the engine is expected to have
 * (a prefill cheaper for a longer prompt, a group of prompts cheaper than a
 * smaller group, a decode pass cheaper at a larger batch), and what became
 * of them. An estimate that breaks the shape is believed only when a second
 * measurement of the same thing confirms it; when the re-measurement does
 * not, the first measurement of both values compared is left out of the fit
 * (the re-measurements take their place). Every check lands in the model's
 * fit.checks[] (provenance.c).
 *
 * A series is a list of observations (x, y, measurement): y a median cost
 * at size x, `unit` the measurement it belongs to (a results file or a
 * level, in the order measured). The first measurement of x is the one with
 * the smallest unit; later units at the same x are its re-measurements.
 * Runs after collect.c (the prompt sweep, before any fit) and inside
 * groups.c; it includes only data.h. */
#ifndef SB_CAL_CHECKS_H
#define SB_CAL_CHECKS_H

#include <stddef.h>

#include "calibrate/data.h"

#define CAL_CHECKS_MAX 64
/* A size's cost "falls" when it is below the smaller size's by more than a
 * tenth (as the plan's decode recheck): a flat cost (a server whose prefill
 * hardly grows) does not trip the check on noise alone. */
#define CAL_CHECKS_FALL 0.9

/* One check that found a broken shape (a re-measurement confirms it when it
 * falls too). */
typedef struct cal_check {
	char what[96];          /* "prefill of 1024-token prompt vs 256" */
	const char *expected;   /* the shape expected, a sentence (static) */
	double x, x_prev;       /* the sizes compared */
	double measured, measured_prev; /* the first measurements' medians */
	int remeasured;         /* a later measurement of x (or x_prev) exists */
	double again, again_prev; /* the re-measurements' medians (NaN: none) */
	int kept;               /* the broken shape is what the fit uses */
	char why[160];
} cal_check;

typedef struct cal_checks {
	cal_check c[CAL_CHECKS_MAX];
	int n;
} cal_checks;

/* One observation of a series. */
typedef struct cal_obs {
	double x, y;
	size_t unit;            /* measurement order (results file or level) */
	size_t owner;           /* what to drop when the first measurement goes
				   (the caller's index) */
} cal_obs;

/* Checks the series obs[0..n) (x values closer than a factor 1 + xtol are
 * the same size): for each pair of neighbouring sizes whose first
 * measurements fall (y(x) < CAL_CHECKS_FALL y(x_prev)), appends a check to out (its what:
 * "WHAT x vs x_prev"; expected: a static sentence)
 * and, when a re-measurement does not confirm the fall, sets drop[owner]
 * for the first measurements of both sizes (drop: one flag per owner, the
 * caller's size). Returns 0 or -ENOMEM. */
int cal_checks_series(const cal_obs *obs, size_t n, double xtol, const char *what,
		      const char *expected, int *drop, cal_checks *out);

/* The prompt-length sweep (concurrency-1 levels): the median server
 * prompt_ms (TTFT when not reported) per level; sets shape_dropped on the
 * levels a re-measurement overruled. Returns 0 or -ENOMEM. */
int cal_checks_prompts(cal_data *d, cal_checks *out);

#endif
