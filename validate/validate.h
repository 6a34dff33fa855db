/* validate.h — a validation: measure a live server level by level (or take
 * a measured results file), replay the same requests through the simulator
 * with a calibrated model (compare.h), and read the server's own speed from
 * one-client probes beside every level (speed.h).
 *
 * The measurement: closed-loop levels (default 1..2S), then open-loop rates
 * (default 30, 50, 70, 90% of the capacity the model predicts), each level
 * a measurement of its own with its own prompts, and a one-client probe
 * before each level and after the last; all through one handle
 * (measure/bench.h): the server probed once, connections kept. A level that fails or an interrupt cuts the
 * measurement short; the levels measured before it are still compared.
 *
 * The prediction simulates the server's slot count (as the server reports
 * it, or the measured file's target, else config.slots) whatever the
 * model's: res->calibrated_slots keeps the model's own, and the report and
 * the JSON ("slots") say so when they differ. With config.plan the levels
 * are a capacity plan's two rates instead (capacity_check.h).
 *
 * What-ifs (config.what_if, core/whatif.h) change the model on purpose
 * before anything is predicted, the default rates and a plan included: a
 * user's "what if it were 20% slower", and the accuracy checks' negative
 * controls (a check must fail a deliberately wrong model). With a reference
 * file (config.drift_ref) the server is also compared with its own earlier
 * measurement of the same load, no model involved (refdrift.h).
 *
 * `servebench validate` (app/cmd_validate.c) fills a config from its flags,
 * calls sb_validate_run, and prints with sb_validate_report.
 */
#ifndef SB_VALIDATE_H
#define SB_VALIDATE_H

#include <jansson.h>
#include <stdio.h>

#include "core/error.h"
#include "core/model.h"
#include "core/results.h"
#include "core/whatif.h"
#include "core/workload.h"
#include "measure/run.h"
#include "validate/compare.h"
#include "validate/capacity_check.h"
#include "validate/refdrift.h"
#include "validate/repeat.h"
#include "validate/speed.h"
#include "validate/steps.h"

typedef struct sb_validate_config {
	const char *model_file;  /* the calibrated model; required; borrowed */
	const char *second_model_file; /* a second calibration of the same server:
				    its prediction of the same requests beside
				    the first's (repeat.h); NULL: none; borrowed */
	const char *measured;    /* a results file to compare instead of
				    measuring; NULL: measure; borrowed */
	/* The server (url, model, api, cache_prompt), the progress callback
	 * and the stop flag; its workload is ignored. */
	sb_run_config run;
	/* Lengths, requests and warm-up per level, and the seed of prompts,
	 * arrivals and simulator noise; its levels are ignored. */
	sb_workload workload;
	long slots;              /* the server's slots when it reports none
				    (--measured: when the file has none);
				    0: the model's */
	int n_conc;              /* closed-loop levels; -1: 1..2S; 0: none */
	double conc[SB_WORKLOAD_MAX_LEVELS];
	int n_rates;             /* open-loop rates; -1: the default; 0: none */
	double rates[SB_WORKLOAD_MAX_LEVELS];
	double speed_factors[2]; /* the model's prompt-side and decode times
				    scaled by these before anything (the
				    server's speed measured beside the run, as
				    a share of the model's; speed.h's
				    sb_speed_scale_model); 0: unscaled */
	/* What-if changes to the model (and the second model), made after
	 * the speed factors: its times scaled, its KV-cache layout, the slot
	 * count simulated whatever the server reports (what_if.sim_slots; the
	 * levels measured still follow the server's slots). */
	sb_whatif what_if;
	const char *drift_ref;   /* a results file whose concurrency-1 level is
				    measured again before the first level and
				    after the last (refdrift.h); NULL: none;
				    borrowed. Not with `measured` (a measured
				    document carries its own runs) */
	long drift_requests;     /* requests per drift run; 0: the reference
				    level's count clamped to 4..16 */
	int drift_each_level;    /* a drift run between every two levels too,
				    so that each level lies between two */
	int drift_factors;       /* each level predicted at the server's speed
				    of the drift runs just before and after it
				    (sb_refdrift_level_factors), measured
				    against the reference alone: the model is
				    never asked. Needs those runs; not with
				    speed_factors or second_model_file; no
				    forecast */
	long probe_requests;     /* requests per speed probe; 0: no probes */
	int replications;        /* replays per level */
	int forecast;            /* also the fresh-traffic forecast intervals */
	int plan;                /* check the model's capacity plan instead of
				    the levels (capacity_check.h): the SLO is
				    workload.slo; n_conc and n_rates must be -1 */
	FILE *out;               /* what is measured (the default rates); may be NULL */
	FILE *log;               /* notes (a failed probe, failed requests); may be NULL */
	const char *log_prefix;  /* before every note ("servebench validate: "); may be NULL */
} sb_validate_config;

/* Defaults: 32 requests of 256 in / 128 out tokens, 2 warm-up, seed 1,
 * default levels, 3-request probes, 20 replications, forecasts on. */
void sb_validate_config_init(sb_validate_config *c);

/* Where a validation stopped. */
typedef enum sb_validate_stage {
	SB_VALIDATE_INPUT = 0,  /* the model, the measured file or the levels */
	SB_VALIDATE_MEASURE,    /* the first level could not be measured */
	SB_VALIDATE_RESULTS,    /* the measured document did not read back */
	SB_VALIDATE_COMPARE,    /* the comparison failed */
	SB_VALIDATE_DONE
} sb_validate_stage;

typedef struct sb_validate_result {
	sb_validate_stage stage;
	sb_model model;          /* the loaded model, its slots the server's */
	int calibrated_slots;    /* the model file's own slot count */
	int server_slots;        /* the server's (probed, or the measured file's
				    target.slots, else config.slots); 0: unknown */
	int model_loaded;
	json_t *doc;             /* owned: the measured document (speed_probes
				    included); NULL with config.measured */
	sb_results meas;         /* the measured results compared */
	sb_comparison cmp;       /* measured against predicted */
	/* with config.second_model_file: the second model, its comparison
	 * (same seed and replications, no forecast) and the difference */
	sb_model model2;
	int model2_loaded;
	sb_comparison cmp2;
	sb_repeatability rep;
	int has_rep;
	sb_capacity_check plan;      /* with config.plan */
	int has_plan;            /* plan made (and, at SB_VALIDATE_DONE, judged) */
	sb_speed speed;          /* the probes and the speed-adjusted prediction */
	sb_step_speed *steps;    /* owned: per measured level, the server's step
				    speed against the model (steps.h) */
	sb_comparison step_adj;  /* the levels with a step speed, each predicted
				    with the model scaled by it */
	double *step_f;          /* owned: per level, the prompt factors, then
				    the decode factors used (NaN: none) */
	double *drift_f;         /* owned (config.drift_factors): per level, the
				    prompt factor, then per level the decode
				    factor, from the drift runs beside it;
				    res->cmp holds the predictions at them */
	json_t *drift;           /* owned: sb_speed_drift; NULL: not known */
	sb_refdrift refdrift;    /* the server against its own reference
				    measurement (config.drift_ref, or the
				    measured document's "reference_drift") */
	int cut_rc;              /* the status of the level that cut the
				    measurement short; 0: none */
	int signal;              /* the signal that interrupted it; 0: none */
	long failed_requests;    /* left out of the comparison */
} sb_validate_result;

/* Runs the validation c describes into *res (always initialised; release
 * with sb_validate_result_fini). Returns 0, or a negative errno with e set
 * and res->stage saying where it stopped (what finished before stays in
 * res). A measurement cut short is no failure: cut_rc and signal say why.
 * Cost: the measurement, then compare.h's replays (twice with a second
 * model). */
int sb_validate_run(const sb_validate_config *c, sb_validate_result *res, sb_error *e);

void sb_validate_result_fini(sb_validate_result *res);

/* Writes the report to f: the slots simulated and what the what-ifs
 * changed (a line each), the model and the target, the side-by-side table
 * (compare.h; verbose adds per-request errors), the second model's
 * difference (repeat.h) and the server's speed, or with quiet only the
 * median errors and differences; then the server's drift between the
 * probes and against its reference measurement (refdrift.h). */
void sb_validate_report(FILE *f, const sb_validate_config *c, const sb_validate_result *res,
			int quiet, int verbose);

/* New JSON document: the comparison (sb_comparison_to_json) with
 * "model_file", "goals", "goals_met", "slots", "plan_check" (with a plan),
 * "server_drift", "server_speed", "what_if" (with what-ifs),
 * "reference_drift" (with a reference) and,
 * with a second model, "repeatability" (sb_repeatability_to_json with its
 * "model_file").
 * NULL on allocation failure. */
json_t *sb_validate_to_json(const sb_validate_config *c, const sb_validate_result *res,
			    const sb_compare_goals *g);

#endif
