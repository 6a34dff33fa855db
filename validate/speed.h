/* speed.h — the server's own speed during a validation.
 *
 * validate takes a short probe — one client, a few requests with fresh
 * prompts, no warm-up — before every level and after the last, and the
 * simulator predicts each probe with the model: a probe reading the
 * model's speed says the server ran as it did at calibration; one reading
 * 30% slower says the levels beside it measure the machine as much as the
 * model.
 *
 * The speed-adjusted prediction of a level is the model's with its prefill
 * times (overheads, prefill coefficients) scaled by the TTFT ratio and its
 * decode times (decode table, per-KV cost) by the TPOT ratio, measured over
 * predicted on the medians of each probe's requests, averaged over the
 * probes beside the level (before and after it; one when the run was cut
 * short). Its errors are the model's error about load (batching, queueing,
 * slots) with the server's own speed taken from the probes; they are
 * reported beside the errors of the plain prediction, which alone decide
 * the goals. Closed-loop levels at concurrency 1 are what the probes
 * measure and are left out of the adjusted summary.
 */
#ifndef SB_SPEED_H
#define SB_SPEED_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "core/model.h"
#include "core/workload.h"
#include "measure/bench.h"
#include "validate/compare.h"

typedef struct sb_speed {
	json_t *probes;      /* owned array: {"t_s", "before_level", "level": {...}} */
	json_t *doc0;        /* owned: the first probe's results document */
	size_t n_probes;
	long probe_requests; /* requests per probe */
	double *ttft_ms, *tpot_ms;           /* per probe, measured medians */
	double *ttft_model, *tpot_model;     /* per probe, the model's medians */
	double *f_prefill, *f_decode;        /* per level: the scale factors (NaN: none) */
	double change_pct[2]; /* median |change| between consecutive probes: TTFT, TPOT */
	size_t n_levels;
	sb_comparison adj;   /* the adjusted prediction of the levels it covers */
	int analysed;
} sb_speed;

void sb_speed_init(sb_speed *sp);
void sb_speed_fini(sb_speed *sp);

/* Measures one probe through b: n requests at concurrency 1 with w's
 * lengths, prompts from `seed`, no warm-up, o's prompt options (its
 * progress callback and partial file unused); appends it to sp->probes as
 * taken `t_s` seconds into the validation, before level `before` (the
 * number of levels for the closing probe). Returns 0, or the measurement's
 * negative status with e set (nothing appended). */
int sb_speed_probe(sb_speed *sp, sb_bench *b, const sb_bench_opts *o, const sb_workload *w,
		   long n, unsigned long seed, double t_s, size_t before, sb_error *e);

/* Takes the probes a validation saved in its measured results (root's
 * "speed_probes", written by validate --out-measured). Returns 1 taken, 0
 * none there, -EINVAL (e names the bad entry). */
int sb_speed_from_results(sb_speed *sp, json_t *root, sb_error *e);

/* Predicts the probes with model m (replayed as any measured level, with
 * o's replications), then each level of meas (the validation's measured
 * results, compared in cmp) with the model scaled by the probes beside it.
 * Nothing to do without probes. Returns 0, or a negative errno with e set. */
int sb_speed_analyse(sb_speed *sp, const sb_model *m, const sb_results *meas,
		     const sb_comparison *cmp, const sb_compare_opts *o, sb_error *e);

/* Scales m's prompt-side times by fp and its decode-side times by fd:
 * core/model_scale.h's keys prompt=fp and decode=fd (overheads and prefill
 * coefficients; every decode_ms and decode_kv entry and per_kv_token_ms).
 * fp or fd 0 leaves that side unscaled. */
void sb_speed_scale_model(sb_model *m, double fp, double fd);

/* The scale factors of level li: the mean over the probes beside it
 * (before_level li or li + 1) of measured / model TTFT (*fp) and TPOT
 * (*fd); probes whose ratios are not positive finite numbers are skipped.
 * Needs sp's per-probe medians (sb_speed_analyse fills them). Returns 1,
 * or 0 when no probe is beside the level (*fp, *fd untouched). */
int sb_speed_factors(const sb_speed *sp, size_t li, double *fp, double *fd);

/* Predicts level li of meas with m scaled by (fp, fd) (sb_speed_scale_model)
 * into *out, its measured side copied from cmp->levels[li] (its requests
 * and a fleet's per-replica figures left out: cmp owns them). Returns 0,
 * or a negative errno with e set. */
int sb_speed_replay_level(const sb_model *m, const sb_results *meas, const sb_comparison *cmp,
			  const sb_compare_opts *o, size_t li, double fp, double fd,
			  sb_cmp_level *out, sb_error *e);

/* "median |error| mean-p50 / p90-p99: TTFT a / b, TPOT ..., E2E ...\n" of an
 * adjusted comparison. */
void sb_speed_adjusted_errors(FILE *f, const sb_comparison *s);

/* {"levels": [{"index", "mode", "level", "prefill_factor", "decode_factor",
 *  "error_pct": {...}}], "summary": {"levels", "central_pct", "tail_pct",
 *  "ttft"/"tpot"/"e2e": {"central_pct", "tail_pct"}}} of an adjusted
 * comparison s whose levels are those of cmp's n_levels with a finite
 * f_prefill, in order (new reference). */
json_t *sb_speed_adjusted_to_json(const sb_comparison *s, const sb_comparison *cmp,
				  const double *f_prefill, const double *f_decode, size_t n_levels);

/* Median |change| (%) of ms[i]/model[i] between consecutive probes: how
 * far the server's own speed moves from one probe to the next, the noise
 * of a probe's few requests included. NaN when n < 2. */
double sb_speed_change_pct(const double *ms, const double *model, size_t n);

/* The probes' speed against the model, one line each, and the errors of the
 * adjusted prediction (cmp: the one analysed). */
void sb_speed_report(FILE *f, const sb_speed *sp, const sb_comparison *cmp);

/* {"probe_requests", "probes": [...], "probe_change_pct": {"ttft", "tpot"}
 *  (median |change| of measured/model between consecutive probes; null with
 *  one probe), "adjusted": {"levels": [...], "summary": {...}}} (new
 *  reference; NULL when not analysed). */
json_t *sb_speed_to_json(const sb_speed *sp, const sb_comparison *cmp);

/* First and last probe as the validation's drift: {"seconds",
 * "ttft_ms_first", "ttft_ms_last", "ttft_pct", "tpot_ms_first", ...}; NULL
 * with fewer than two probes. */
json_t *sb_speed_drift(const sb_speed *sp);

#endif
