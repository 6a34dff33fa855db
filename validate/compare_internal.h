/* compare_internal.h — what validate/compare*.c share and nothing else
 * includes: seed streams, small statistics, and the steps of a
 * comparison that live in their own files. */
#ifndef SB_VALIDATE_COMPARE_INTERNAL_H
#define SB_VALIDATE_COMPARE_INTERNAL_H

#include <math.h>
#include <stddef.h>

#include "core/dist.h"

#include "compare.h"

/* The forecast's simulator seeds are sb_seed_derive(seed, level index |
 * FORECAST_STREAM, replication): a stream apart from the replay's (level
 * index, replication). */
#define FORECAST_STREAM 0x80000000UL
/* A fleet's replica g of a replay replication with seed s is simulated
 * with seed sb_seed_derive(s, FLEET_STREAM, g). */
#define FLEET_STREAM 0x40000000UL
/* The routed replay of level li, replication r: sb_seed_derive(seed, li |
 * ROUTED_STREAM, r). */
#define ROUTED_STREAM 0x20000000UL

/* ---- helpers over the measured document ------------------------------ */

static inline long dist_len(const sb_dist *d)
{
	double m = sb_dist_mean(d);
	long v = isfinite(m) ? lround(m) : 1;
	return v < 1 ? 1 : v;
}

/* A record: its index, send time and id (ties of send time go by id, the
 * issue order: records are written as requests finish). */
typedef struct idx_time {
	size_t i;
	double t;
	long id;
} idx_time;

static inline int cmp_idx_time(const void *a, const void *b)
{
	const idx_time *x = a, *y = b;
	if (x->t != y->t)
		return (x->t > y->t) - (x->t < y->t);
	if (x->id != y->id)
		return (x->id > y->id) - (x->id < y->id);
	return (x->i > y->i) - (x->i < y->i);
}

/* Running mean and variance (Welford). */
typedef struct welford {
	long n;
	double mean, m2;
} welford;

static inline void welford_add(welford *w, double x)
{
	if (!isfinite(x))
		return;
	w->n++;
	double d = x - w->mean;
	w->mean += d / (double)w->n;
	w->m2 += d * (x - w->mean);
}

static inline double welford_mean(const welford *w)
{
	return w->n ? w->mean : NAN;
}

static inline double welford_sd(const welford *w)
{
	return w->n > 1 ? sqrt(w->m2 / (double)(w->n - 1)) : (w->n ? 0.0 : NAN);
}

/* compare_replay.c: replays level li of meas. Fills cl (meas, pred, per
 * request) and appends replication 0's records to sim_reqs (a JSON array);
 * *sum0 receives the summary of replication 0. *warmup_out: the warm-up
 * records replayed; *len_in_out, *len_out_out: the counted requests'
 * lengths when they are all alike, else -1. Returns 0 or a negative errno
 * with a message. */
int sb_cmp_replay_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			size_t li, sb_cmp_level *cl, json_t *sim_reqs, sb_level *sum0,
			long *warmup_out, long *len_in_out, long *len_out_out, sb_error *e);
/* compare_replay.c: out->routed for a fleet file whose target names its
 * route (compare.h); left NULL otherwise. Returns 0 or a negative errno
 * with a message. */
int sb_cmp_routed_compare(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			  sb_comparison *out, sb_error *e);

#endif
