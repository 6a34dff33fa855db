/* sweep.h — a load sweep: every level of a workload, K replications each,
 * 95% confidence intervals across replications, the knee, and capacity
 * planning (fewest slots for a rate, highest rate for the slots).
 */
#ifndef SB_SWEEP_H
#define SB_SWEEP_H

#include "core/metric.h"
#include "sim.h"

/* Metric k of one simulated level (core/metric.h): the summary's figures
 * and the simulator's own (utilization, SLO percentiles, rejections). */
double sb_sim_level_metric(const sb_sim_level *l, sb_metric k);

typedef struct sb_sweep_level {
	double level;
	sb_sim_level *reps;    /* owned, n_reps entries: the model as it is */
	sb_sim_level *drawn;   /* owned, n_reps entries with the coefficients
				  drawn (o->uncert), the same seeds; NULL
				  without draws */
	int n_reps;
	double mean[SB_MET_N]; /* mean across replications (reps) */
	double half[SB_MET_N]; /* 95% CI half-width (Student t); NaN if K < 2 */
	double lo90[SB_MET_N]; /* with parameter draws (o->uncert): the 5th and */
	double hi90[SB_MET_N]; /* 95th percentile of the drawn replications'
				  values (sb_sweep_pi90), a 90% interval for
				  one run's figure; NaN otherwise */
	sb_level summary;      /* summaries averaged across replications;
				  request counts summed */
	int overloaded;        /* open loop at or beyond the capacity */
	int diverged;          /* a replication hit the queue bound */
	long max_waiting;
	/* fleets only (NULL, 0, NaN otherwise): each replica's figures and
	 * the unevenness measures, means across replications */
	sb_sim_replica *replicas; /* owned */
	int n_replicas;
	double share_ratio, util_cv;
} sb_sweep_level;

typedef struct sb_sweep {
	sb_sweep_level *levels; /* owned */
	int n_levels;
	int replications;
	int uncertain;         /* each replication drew its coefficients */
	double capacity;       /* req/s (open loop), NaN for closed loop */
	int knee;              /* index of the knee level, -1 if none */
	char knee_reason[160];
} sb_sweep;

/* Runs every level of w (borrowed, like m and o) with `reps` replications
 * whose seeds derive from w->seed (sb_seed_derive(seed, level index,
 * replication)). With parameter draws (o->uncert) each replication runs
 * twice on the same seed: on m as it is (the central figures, as without
 * draws) and on drawn coefficients (the 90% intervals), so asking for the
 * error bars never moves the prediction. Returns 0 or a negative errno
 * with a message (out is then empty). Cost: levels * reps simulations,
 * twice that with draws, spread over o->jobs threads with the same results
 * for any number (workers.h). */
int sb_sweep_run(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
		 int reps, sb_sweep *out, sb_error *e);
void sb_sweep_fini(sb_sweep *s);

/* Whether a level meets the workload's SLOs at its percentile (mean across
 * replications), has not diverged, and turned away no more than
 * (100 - percentile)% of its requests. True when no SLO is set. */
int sb_sweep_level_meets(const sb_sweep_level *l, const sb_slo *slo);

/* The 90% interval of x[0..n) (a level's replications, NaN ignored) for
 * one more run: the 5th and 95th percentile of the k finite values at the
 * prediction positions p (k + 1) (1-based, clamped to 1..k), linearly
 * interpolated between order statistics, so that a new value exchangeable
 * with them falls inside 90% of the time (19 values: their minimum and
 * maximum); NaN with fewer than 2 finite values. x is sorted in place. */
void sb_sweep_pi90(double *x, int n, double *lo, double *hi);

/* The share (0..1) of l's replications that meet slo on their own: the
 * replication's SLO percentile within the SLO, not diverged, rejecting no
 * more than (100 - percentile)%. With parameter draws the drawn
 * replications are counted, each one draw: the share of draws meeting the
 * SLO. NaN when l has
 * no replications or is overloaded: 0. */
double sb_sweep_share_meeting(const sb_sweep_level *l, const sb_slo *slo);

/* Runs one level (l->level set by the caller) with reps replications into
 * l, seeds from level index lvl_index, as sb_sweep_run does for each level.
 * Returns 0 or a negative errno with a message; release l with
 * sb_sweep_level_fini either way. */
int sb_sweep_level_run(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
		       int lvl_index, int reps, sb_sweep_level *l, sb_error *e);
void sb_sweep_level_fini(sb_sweep_level *l);

#endif
