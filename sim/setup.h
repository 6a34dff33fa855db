/* setup.h — what one sbsim run simulates: a model (a file or the embedded
 * default), then a scenario file, then the command line's overrides, merged
 * in that order and checked together.
 *
 * sb_setup_flags holds the command line as given (each field "not given"
 * until set, see sb_setup_flags_init); sb_setup_build turns it into the
 * model, simulator options and workload sb_sweep_run takes.
 */
#ifndef SB_SETUP_H
#define SB_SETUP_H

#include <stdio.h>

#include "core/cli.h"
#include "core/error.h"
#include "core/model.h"
#include "core/whatif.h"
#include "core/workload.h"
#include "scenario.h"
#include "capacity.h"
#include "sim.h"
#include "uncertainty.h"

/* The most simulated requests one invocation may ask for (~20 min). */
#define SB_SETUP_MAX_WORK 2e9

/* The command line's values. Numbers already passed their flag's range
 * check; strings are borrowed (argv). Not given: NULL, LONG_MIN or NaN. */
typedef struct sb_setup_flags {
	const char *scenario_file, *model_file;
	long slots, max_queue, batch_tokens;
	sb_cli_list rate, concurrency;     /* n == 0: not given; borrowed */
	sb_cli_list conversations;         /* --conversations: closed loop of
					      conversations (n == 0: not given) */
	const char *turns;                 /* --turns: each client or arrival a
					      conversation of that many turns */
	sb_cli_list plan_slots;            /* --plan-slots: slots per replica to plan with */
	const char *arrival;
	double arrival_cv, bursty;
	const char *think, *input_len, *output_len, *service;
	long requests, warmup, seed, replications, queue_cap, max_slots, pin_slots;
	double duration_s, warmup_s, slo_ttft_ms, slo_tpot_ms, slo_percentile;
	int no_noise, plan, check, json_requests;
	int uncertainty, no_uncertainty; /* --uncertainty, --no-uncertainty */
	long ctx_per_slot;                 /* --ctx-per-slot */
	long prefix_len, prefix_groups;    /* --prefix-len, --prefix-groups */
	double kv_bytes_per_token, kv_memory_gb; /* --kv-bytes-per-token, --kv-memory-gb */
	const char *context_overflow;      /* --context-overflow */
	/* fleets (setup_fleet.c): replicas per group, the route, worker
	 * threads, and every --model-file given (model_file is the first) */
	long replicas, jobs;
	const char *route;
	sb_cli_strings model_files;
	/* --scale, --kv-cache: applied to every model loaded (its sim_slots
	 * unused: --slots sets sbsim's) */
	sb_whatif what_if;
} sb_setup_flags;

/* Everything "not given", flags 0. */
void sb_setup_flags_init(sb_setup_flags *f);

/* A checked simulation setup. Owns its model and scenario. */
typedef struct sb_setup {
	sb_model model;
	sb_sim_opts opts;
	sb_workload w;
	int reps;            /* replications per level */
	int max_slots;       /* --plan's search bound */
	int plan_slots[SB_CAPACITY_MAX_SLOT_CHOICES]; /* --plan-slots */
	int n_plan_slots;
	int have_scenario;
	sb_scenario scenario;
	sb_uncert uncert;    /* the model's fit.covariance (n 0: none or
				--no-uncertainty); opts.uncert points here, so
				an sb_setup is not copied */
	double kv_memory_gb; /* --kv-memory-gb: the slots came from it; 0: not */
	sb_model fleet_models[SB_FLEET_MAX_GROUPS]; /* groups' own models */
	sb_uncert fleet_uncert[SB_FLEET_MAX_GROUPS]; /* their covariances, with
							parameter draws */
	int n_fleet_models;
} sb_setup;

/* Replications per level with parameter draws when --replications is not
 * given: enough for the 5th and 95th percentiles to move by less than
 * about a tenth of the interval's width from one seed to the next. */
#define SB_SETUP_UNCERT_REPS 40

/* Loads the model: flags->model_file, else the scenario's model_file
 * (sc may be NULL), else the embedded default; then the scenario's server
 * settings, --slots and the what-ifs (--scale, --kv-cache). m must not be initialised (this does); on failure it
 * is left finalised. Returns 0, -EINVAL with a message naming the file, or
 * -ENOTRECOVERABLE when the embedded model is broken. */
int sb_setup_load_model(const sb_setup_flags *f, const sb_scenario *sc, sb_model *m,
			sb_error *e);

/* Builds s from the flags: scenario, model, overrides (--kv-memory-gb G:
 * slots = what fits, core/slotctx.h; with --slots, or without a context per
 * slot or KV bytes per token, an error), the model's covariance (parameter
 * draws unless --no-uncertainty; --uncertainty with a model without one is
 * an error), then the cross-checks
 * (one load mode; --bursty alone; whole token counts; --plan's SLO and open
 * loop; the total work below SB_SETUP_MAX_WORK). Returns 0 or a negative
 * errno with a message naming the flag (-EINVAL bad input, -ENOMEM). On
 * failure s needs no sb_setup_fini. */
int sb_setup_build(const sb_setup_flags *f, sb_setup *s, sb_error *e);
void sb_setup_fini(sb_setup *s);

/* The server of the flags alone (no load): the model as sb_setup_load_model
 * loads it, with --max-queue, --batch-tokens and the context flags
 * (--kv-memory-gb: the slots) applied; m must not be initialised. Returns 0
 * or a negative errno with a message (-EINVAL bad input). */
int sb_setup_server_model(const sb_setup_flags *f, sb_model *m, sb_error *e);

/* The fleet of s from the flags (setup_fleet.c): one group per --model-file
 * beyond the first (the first is s->model) or per scenario "fleet" entry,
 * --replicas replicas per group (or copies of s->model), --route, --jobs
 * (default: the online CPUs); with parameter draws (s->opts.uncert), each
 * group's model is drawn from its own fit.covariance (a group whose file
 * has none is not drawn; with --uncertainty that is an error). Called by
 * sb_setup_build after the model and the counts. Returns 0 or
 * -EINVAL/-ENOMEM with a message naming the flag or file; s->fleet_models
 * are s's to free either way. */
int sb_setup_fleet(const sb_setup_flags *f, sb_setup *s, sb_error *e);

/* Frees the groups' models sb_setup_fleet loaded. */
void sb_setup_fini_fleet(sb_setup *s);

/* "fleet: ..." (nothing for one server). */
void sb_setup_print_fleet(FILE *out, const sb_setup *s);

/* The lines describing the setup above a sweep's table: model, scenario,
 * server, load. */
void sb_setup_print(FILE *out, const sb_setup *s);

#endif
