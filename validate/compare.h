/* compare.h — closing the loop: a measured results document against the
 * simulator's prediction of the same load. The comparison document
 * ("servebench.comparison/1") is described in docs/formats.md.
 *
 * Each measured level is predicted one of two ways:
 *  - replay (the level has per-request records): the measured requests go
 *    through sb_sim_replay — open loop: sent at their own t_scheduled_s;
 *    closed loop: the level's concurrency of clients sending the requests
 *    in their measured send order — with their own prompt and output
 *    lengths. Arrival randomness cancels; what remains is model error. The
 *    replay is repeated with `replications` noise seeds and each metric's
 *    prediction is the mean over them (the expected statistic given these
 *    arrivals); the spread over replications is reported too.
 *  - forecast (summary only, e.g. published tables): fresh traffic of the
 *    results' workload at that level, `forecast_reps` replications of a run
 *    of the measured size; the prediction is the replication mean.
 * With `forecast` set, every level also gets the forecast interval: the
 * central 95% of each metric over the replications of fresh traffic, and
 * whether the measured value lies inside.
 *
 * A fleet (the measured file has target.replicas and its records a
 * "replica"): each replica's requests are replayed on their own, open
 * loop at their measured send times (closed-loop levels too: the send
 * times already say which replica took what, so no router is simulated),
 * each replica a server of the model's slots; the predictions are merged
 * for the fleet-wide figures and kept apart for per-replica ones.
 *
 * A fleet whose file also names its route (target.route) gets a second,
 * "routed" comparison that checks the router model too: the measured
 * arrivals (send times and lengths, not which replica took them) go
 * through a simulated fleet (sb_replay_opts.fleet) of target.replicas'
 * count, each replica the model with its own target.replicas[i].slots when
 * known, behind sb_route_parse(target.route): open loop at the measured
 * send times, closed loop the level's concurrency of clients sending the
 * requests in their measured order; replications and errors as above,
 * fleet-wide, with the same summaries.
 *
 * Prompt length replayed: the server's own "prompt_n" (tokens it actually
 * prefilled, prompt-cache hits excluded) when the record has one, as the
 * calibration counts it; else prompt_tokens; else the workload's mean.
 *
 * Requests counted on both sides: measured records that succeeded and are
 * not warm-up (sb_reqrec.warmup). Warm-up records are replayed (they shape the
 * state) but not counted; failed records are left out of the replay.
 * Throughput on both sides uses the same window: the first counted send to
 * the last counted completion.
 *
 * Capacity: a level saturates when its clients keep every measured slot
 * busy (closed loop, concurrency >= target.slots) or it completes less than
 * 90% of its offered rate (open loop); the measured capacity is the highest
 * measured req/s of such a level, the predicted one the model's req/s at
 * that same level (output tok/s instead when the measurement gives no
 * req/s, as the guide's tables).
 *
 * Errors are signed percentages, 100 * (predicted - measured) / measured
 * (NaN when the measured value is not a positive finite number). Summaries
 * are MEDIAN absolute percentage errors ("MdAPE") over levels and metrics.
 */
#ifndef SB_COMPARE_H
#define SB_COMPARE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "core/level.h"
#include "core/metric.h"
#include "core/model.h"
#include "core/results.h"
#include "core/route.h"

/* The metrics compared per level, in table order (core/metric.h): TTFT,
 * TPOT and E2E mean, p50, p90, p99, then output tok/s and req/s. The
 * per-level arrays below are indexed by sb_metric; entries of metrics not
 * in this list are NaN. */
#define SB_COMPARE_N_METRICS 14
extern const sb_metric sb_compare_metrics[SB_COMPARE_N_METRICS];

/* The quantities the goals judge: TTFT, TPOT and E2E (the first three of
 * sb_quantity). */
#define SB_CMP_N_QUANT (SB_QTY_E2E + 1)
/* Statistic classes used by the goals. */
enum { SB_CMP_CENTRAL = 0, SB_CMP_TAIL, SB_CMP_THROUGHPUT };

/* SB_CMP_CENTRAL (mean, p50), SB_CMP_TAIL (p90, p99) or SB_CMP_THROUGHPUT. */
int sb_compare_metric_class(sb_metric k);

/* 100 * (pred - meas) / meas; NaN unless meas > 0 and both are finite. */
double sb_compare_err_pct(double meas, double pred);
/* Median of |x[i]| over the finite x[i]; NaN when there are none. x is not
 * modified. O(n log n), allocates a copy (NaN on allocation failure). */
double sb_compare_median_abs(const double *x, size_t n);

typedef struct sb_compare_opts {
	int replications;      /* replays per level (noise seeds); default 20 */
	unsigned long seed;    /* default 1 */
	int no_noise;          /* deterministic replay (one replication) */
	int forecast;          /* also compute forecast intervals */
	int forecast_reps;     /* replications of fresh traffic; default 200 */
	double knee_min_ratio; /* default SB_KNEE_MIN_RATIO (core/knee.h) */
	double think_s;        /* closed loop think time; default 0 */
} sb_compare_opts;

void sb_compare_opts_init(sb_compare_opts *o);

/* One counted request: measured and predicted (mean over replications). */
typedef struct sb_cmp_req {
	long id;
	long prompt_tokens, output_tokens;
	double meas_ttft_ms, meas_e2e_ms;
	double pred_ttft_ms, pred_e2e_ms;
} sb_cmp_req;

typedef struct sb_cmp_level {
	double level;
	sb_mode mode;
	int replayed;          /* 1 replay, 0 forecast-only (no records) */
	long n_counted;        /* requests in the statistics */
	double meas[SB_MET_N];
	double pred[SB_MET_N];    /* mean over replications */
	double pred_sd[SB_MET_N]; /* sd over replications */
	double err_pct[SB_MET_N];
	/* forecast interval (when opts.forecast): central 95% of fresh runs */
	int has_forecast;
	double fc_lo[SB_MET_N], fc_hi[SB_MET_N];
	int fc_inside[SB_MET_N]; /* 1 inside, 0 outside, -1 unknown */
	/* per request (replay only; owned) */
	sb_cmp_req *reqs;
	size_t n_reqs;
	double req_ttft_mdape, req_e2e_mdape;
	/* a fleet (replay only): per replica the same figures over its own
	 * requests (meas, pred, pred_sd, err_pct, n_counted; no requests, no
	 * forecast), n_replicas entries (owned); 0 and NULL otherwise.
	 * open_loop_replay: a closed-loop level replayed open loop at its
	 * measured send times (the fleet case). */
	struct sb_cmp_level *replicas;
	size_t n_replicas;
	int open_loop_replay;
} sb_cmp_level;

typedef struct sb_comparison {
	sb_cmp_level *levels;  /* owned, in the measured file's order */
	size_t n_levels;
	double mdape_central;  /* TTFT/TPOT/E2E mean and p50, all levels */
	double mdape_tail;     /* TTFT/TPOT/E2E p90 and p99 */
	double mdape_throughput;
	double mdape_metric[SB_MET_N];       /* per metric over levels */
	double mdape_quant[SB_CMP_N_QUANT][2];       /* [quantity][central|tail] */
	/* knee per mode (index SB_MODE_CONCURRENCY / SB_MODE_RATE): NaN when
	 * there is none or fewer than two levels */
	double knee_meas[2], knee_pred[2];
	int knee_match[2];     /* 1 same level, 0 different, -1 undefined */
	long fc_inside, fc_total; /* forecast coverage over all cells */
	unsigned long seed;
	int replications;
	int measured_slots;    /* target.slots of the measured file; 0 unknown */
	int cache_dropped;     /* the run asked the server not to reuse prompts
				  (target.cache_prompt false): replayed without
				  the model's prompt cache */
	/* capacity (see above): req/s measured and predicted at the saturated
	 * level cap_level (mode cap_mode); NaN (cap_mode -1) when none saturates */
	double cap_meas, cap_pred, cap_err_pct, cap_level;
	int cap_mode;
	sb_metric cap_metric;  /* SB_MET_REQ_S, or SB_MET_OUT_TOK_S */
	int model_slots;
	json_t *simulated;     /* owned: the predicted results document */
	/* the routed comparison of a fleet whose file names its route (see
	 * above): its own levels (the fleet-wide measured figures, the routed
	 * replay's mean, sd and errors; no requests, replicas or forecast) and
	 * summaries; owned; NULL for other files */
	struct sb_comparison *routed;
	int routed_route;      /* sb_route of target.route */
	int routed_replicas;
} sb_comparison;

/* Predicts every level of meas (borrowed) with model m (borrowed) as
 * described above and fills *out (release with sb_comparison_fini).
 * Returns 0, -EINVAL (no levels, a level without usable requests, a model
 * the simulator rejects) with a message naming the level, or -ENOMEM.
 * Cost: replications * (replay of the level); forecasts forecast_reps
 * simulated runs of the measured size per level. */
int sb_compare_run(const sb_model *m, const sb_results *meas,
		   const sb_compare_opts *o, sb_comparison *out, sb_error *e);

/* Open-loop levels completing less than this share of their rate saturate. */
#define SB_CMP_SATURATED 0.9

/* Recomputes the cross-level summaries (MdAPEs, knees, capacity) of c from its
 * levels' meas/pred/err_pct. Called by sb_compare_run; exposed so tests
 * and callers that fill levels by hand get the same definitions. */
void sb_compare_summarize(sb_comparison *c, double knee_min_ratio);

void sb_comparison_fini(sb_comparison *c);

/* New JSON object: per level every metric's measured / predicted / error /
 * replication sd (/ forecast interval), per-request errors, the summaries
 * and knees. Does not include the simulated document. */
json_t *sb_comparison_to_json(const sb_comparison *c);

/* Accuracy goals: for each of TTFT, TPOT and E2E, the median absolute
 * error of mean+p50 over levels at most `central_pct`, of p90+p99 at most
 * `tail_pct`; and the knee predicted at the measured level (when both
 * exist and require_knee). */
typedef struct sb_compare_goals {
	double central_pct;    /* default 5 */
	double tail_pct;       /* default 10 */
	int require_knee;      /* default 1 */
} sb_compare_goals;

void sb_compare_goals_init(sb_compare_goals *g);

/* Returns 1 when c meets g, 0 when not; writes the missed goals, one per
 * line ("ttft mean/p50: median |error| 7.2% > 5%"), into why (may be NULL;
 * always NUL-terminated when len > 0). */
int sb_compare_check(const sb_comparison *c, const sb_compare_goals *g,
		     char *why, size_t len);

/* ---- report (compare_report.c) ---------------------------------------- */

/* Writes the side-by-side table (per level: TTFT/TPOT/E2E mean, p50, p90,
 * p99 as measured / predicted (error), throughput), the summary MdAPEs, the
 * knees and the forecast coverage to f (an output sink the caller owns;
 * nothing else is printed). verbose adds per-request errors and replay sd.
 * Returns 0 or -EIO when writing failed. */
int sb_compare_report(FILE *f, const sb_comparison *c, int verbose);
/* Writes whether c meets g: "goals met: ..." on one line, or "goals
 * missed:" and the missed goals one per line. Returns 1 met, 0 missed. */
int sb_compare_report_goals(FILE *f, const sb_comparison *c, const sb_compare_goals *g);

#endif
