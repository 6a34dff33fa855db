/* cmd_validate.c — `servebench validate`: measure a live server (or take a
 * measured results file), replay the same requests through the simulator
 * with a calibrated model, print measured against predicted side by side,
 * and check the accuracy goals. The work is validate/validate.h's; this file
 * reads the flags, prints and picks the exit status.
 *
 * Exit status: 0 the goals are met (--plan: the plan confirmed); 1 they
 * are not (the missed ones are named; --plan: the plan wrong or
 * inconclusive) or an output could not be written; 2 bad usage or input; 3 the
 * server could not be reached; 130/143 interrupted. Failed requests are
 * reported and left out of the comparison.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "exit_status.h"
#include "core/cli.h"
#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/model_scale.h"
#include "core/parse.h"
#include "core/workload.h"
#include "measure/progress.h"
#include "validate/validate.h"

#include "interrupt.h"
#include "server_flags.h"
#include "workload_flags.h"

#define PROG "servebench validate"


/* What the flags say: the library's config and what this command prints
 * and writes. */
static struct {
	sb_validate_config cfg;
	sb_compare_goals goals;
	const char *json_out, *meas_out, *sim_out;
	int quiet, verbose;
	int no_forecast, no_drift_check, no_knee, no_cache_prompt;
	long seed;      /* -1: from the clock */
	long reps;
} cmd;

/* A level list into cfg's conc/rates: "none" for none, else a list of
 * levels as `servebench run` takes them (sb_workload_set_levels). */
static int parse_levels(const char *s, sb_mode mode, const char *what, sb_error *e)
{
	sb_validate_config *c = &cmd.cfg;
	double *lv = mode == SB_MODE_RATE ? c->rates : c->conc;
	int *n = mode == SB_MODE_RATE ? &c->n_rates : &c->n_conc;
	if (!strcmp(s, "none")) {
		*n = 0;
		return 0;
	}
	double *v = NULL;
	size_t k = 0;
	sb_workload w;
	sb_workload_init(&w);
	int rate = mode == SB_MODE_RATE;
	int r = sb_parse_double_list(s, rate ? 1e-6 : 1, rate ? 1e6 : 100000, &v, &k, what, e);
	if (r == 0)
		r = sb_workload_set_levels(&w, mode, v, k, what, e);
	free(v);
	if (r < 0)
		return -EINVAL;
	memcpy(lv, w.levels, (size_t)w.n_levels * sizeof(*lv));
	*n = w.n_levels;
	return 0;
}

static int parse_conc(const char *s, void *dest, const char *what, sb_error *e)
{
	(void)dest;
	return parse_levels(s, SB_MODE_CONCURRENCY, what, e);
}

static int parse_rates(const char *s, void *dest, const char *what, sb_error *e)
{
	(void)dest;
	return parse_levels(s, SB_MODE_RATE, what, e);
}

/* A fixed token count in [1, 1000000]. */
static int parse_len(const char *s, void *dest, const char *what, sb_error *e)
{
	long v;
	if (sb_parse_long(s, 1, 1000000, &v, what, e) < 0)
		return -EINVAL;
	*(sb_dist *)dest = (sb_dist){ SB_DIST_DET, (double)v, 0 };
	return 0;
}

/* FP,FD: two factors in [0.01, 100]. */
static int parse_speed(const char *s, void *dest, const char *what, sb_error *e)
{
	double *v = NULL, *f = dest;
	size_t k = 0;
	if (sb_parse_double_list(s, 0.01, 100, &v, &k, what, e) < 0)
		return -EINVAL;
	if (k != 2) {
		free(v);
		return sb_error_set(e, "%s: '%s' is not two factors FP,FD (prompts, decode)", what, s);
	}
	f[0] = v[0];
	f[1] = v[1];
	free(v);
	return 0;
}

#define C (&cmd.cfg)
#define W (&cmd.cfg.workload)
static const sb_cli_opt opts[] = {
	SB_CLI_OPT("model-file", SB_CLI_STRING, &C->model_file, 0, 0, "FILE",
		   "the calibrated model (servebench calibrate)"),
	SB_CLI_OPT("second-model", SB_CLI_STRING, &C->second_model_file, 0, 0, "FILE",
		   "a second calibration of the same server: replay the\n"
		   "same requests through it too and report how far its\n"
		   "prediction is from the first's"),
	SB_CLI_OPT("url", SB_CLI_STRING, &C->run.url, 0, 0, "URL", "the live server"),
	SB_CLI_OPT("model", SB_CLI_STRING, &C->run.model, 0, 0, "NAME",
		   "the model name to request"),
	SB_CLI_OPT("measured", SB_CLI_STRING, &C->measured, 0, 0, "FILE",
		   "compare an existing results file instead of measuring\n"
		   "(or a vllm bench serve JSON, LLMServingSim\n"
		   "requests.jsonl, AIPerf profile_export.jsonl,\n"
		   "inference-perf per_request_lifecycle_metrics.json,\n"
		   "servebench CSV)"),
	SB_CLI_OPT("slots", SB_CLI_LONG, &C->slots, 1, 4096, "S",
		   "the server's slot count when it reports none\n(default: the model's)"),
	SB_CLI_FN("concurrency", NULL, "LIST", parse_conc,
		  "closed-loop levels (default 1..2S); 'none' for none"),
	SB_CLI_FN("rates", NULL, "LIST", parse_rates,
		  "open-loop rates in req/s (default 30,50,70,90% of the\n"
		  "predicted capacity); 'none' for none"),
	SB_FLAG_NUM_REQUESTS(&W->requests, "32"),
	SB_CLI_FN("input-len", &W->input_len, "N", parse_len, "prompt tokens per request (default 256)"),
	SB_CLI_FN("output-len", &W->output_len, "N", parse_len,
		  "output tokens per request (default 128)"),
	SB_FLAG_PREFIX_ROWS(W),
	SB_CLI_FN("turns", &W->turns, "N|DIST", sb_flag_parse_turns,
		  "closed-loop levels as conversations: each client one of\n"
		  "that many turns, each prompt the history so far (with\n"
		  "--rates none)"),
	SB_CLI_FN("think", &W->think_s, "S|DIST", sb_flag_parse_think,
		  "closed loop: pause between a client's requests (s)"),
	SB_FLAG_WARMUP(&W->warmup),
	SB_FLAG_SEED(&cmd.seed, "seed of prompts, arrivals and simulator noise"),
	SB_CLI_OPT("replications", SB_CLI_LONG, &cmd.reps, 1, 100000, "K",
		   "replays per level (simulator noise; default 20)"),
	SB_CLI_OPT("no-forecast", SB_CLI_FLAG, &cmd.no_forecast, 0, 0, NULL,
		   "skip the fresh-traffic forecast intervals"),
	SB_CLI_FN("speed-factors", C->speed_factors, "FP,FD", parse_speed,
		  "replay with the model's prompt-side times (overheads,\n"
		  "prefill) x FP and its decode steps x FD: the server's\n"
		  "speed beside the run as a share of the model's (say, a\n"
		  "one-client run's TTFT and TPOT over the model's)"),
	SB_CLI_OPT("probe", SB_CLI_LONG, &C->probe_requests, 0, 1000, "N",
		   "requests of the one-client speed probe taken before each\n"
		   "level and after the last (default 3; 0: none)"),
	SB_CLI_OPT("no-drift-check", SB_CLI_FLAG, &cmd.no_drift_check, 0, 0, NULL,
		   "the same as --probe 0"),
	SB_CLI_OPT("goal-central", SB_CLI_DOUBLE, &cmd.goals.central_pct, 0, 1e6, "PCT",
		   "goal for mean/p50 median |error| (default 5)"),
	SB_CLI_OPT("goal-tail", SB_CLI_DOUBLE, &cmd.goals.tail_pct, 0, 1e6, "PCT",
		   "goal for p90/p99 median |error| (default 10)"),
	SB_CLI_OPT("no-knee", SB_CLI_FLAG, &cmd.no_knee, 0, 0, NULL,
		   "do not require the knee to match"),
	SB_CLI_OPT("plan", SB_CLI_FLAG, &C->plan, 0, 0, NULL,
		   "check the model's capacity plan live: measure open loop at\n"
		   "the highest rate meeting the SLO (as sbsim --plan) and at\n"
		   "15% above it (needs --slo-ttft-ms and/or --slo-tpot-ms)"),
	SB_CLI_OPT("slo-ttft-ms", SB_CLI_DOUBLE, &W->slo.ttft_ms, 1e-9, 1e12, "X",
		   "TTFT SLO (--plan)"),
	SB_CLI_OPT("slo-tpot-ms", SB_CLI_DOUBLE, &W->slo.tpot_ms, 1e-9, 1e12, "X",
		   "TPOT SLO (--plan)"),
	SB_CLI_OPT("slo-percentile", SB_CLI_DOUBLE, &W->slo.percentile, 1, 99.99, "P",
		   "the SLOs' percentile (default 99)"),
	SB_CLI_OPT("json", SB_CLI_STRING, &cmd.json_out, 0, 0, "FILE",
		   "write the comparison (JSON)"),
	SB_CLI_OPT("out-measured", SB_CLI_STRING, &cmd.meas_out, 0, 0, "FILE",
		   "write the measured results"),
	SB_CLI_OPT("out-simulated", SB_CLI_STRING, &cmd.sim_out, 0, 0, "FILE",
		   "write the predicted results (same schema, for plots)"),
	SB_FLAG_API(&C->run.api),
	SB_FLAG_NO_CACHE_PROMPT(&cmd.no_cache_prompt),
	SB_CLI_OPT("verbose", SB_CLI_FLAG, &cmd.verbose, 0, 0, NULL,
		   "per-request errors and replay spread"),
	SB_CLI_OPT("quiet", SB_CLI_FLAG, &cmd.quiet, 0, 0, NULL, "only the summary and the verdict"),
	SB_CLI_HEAD("what-if (the model changed on purpose; the report and JSON say so):"),
	SB_CLI_FN("scale", &C->what_if.scale, "KEY=F[,...]", sb_model_scale_cli,
		  "scale the model's times by F > 0, per KEY: all (prompt\n"
		  "and decode, as --speed-factors F,F), prompt (overheads and\n"
		  "prefill coefficients), prefill_token (per-token prefill\n"
		  "only), decode (decode passes, decode_kv, per_kv_token),\n"
		  "decode_batched (decode passes of batch >= 2; a table of\n"
		  "batch 1 alone is unchanged); keys that overlap multiply"),
	SB_WHATIF_SET_ROW(C),
	SB_CLI_OPT("sim-slots", SB_CLI_LONG, &C->what_if.sim_slots, 1, 4096, "N",
		   "simulate N slots whatever the server or the measured\n"
		   "file reports (the levels measured follow the server)"),
	{ "kv-cache", 0, SB_CLI_CHOICE, &C->what_if.kv_cache, 0, 0, SB_WHATIF_KV_CHOICES,
	  "simulate this KV-cache layout instead of the model's\n"
	  "(server.kv_cache)", SB_WHATIF_KV_CHOICES, NULL },
	SB_WHATIF_PCACHE_ROW(C),
	SB_CLI_HEAD("the server's own drift:"),
	SB_CLI_OPT("drift-ref", SB_CLI_STRING, &C->drift_ref, 0, 0, "FILE",
		   "a results file (servebench run --out) whose first\n"
		   "concurrency-1 level is measured again, same lengths, before\n"
		   "the first level and after the last: the server against its\n"
		   "own earlier measurement, no model (not with --measured: its\n"
		   "document carries the runs)"),
	SB_CLI_OPT("drift-requests", SB_CLI_LONG, &C->drift_requests, 1, 1000, "N",
		   "requests per drift run (default: the reference level's,\n"
		   "clamped to 4..16; one warm-up request before)"),
	SB_CLI_OPT("drift-each-level", SB_CLI_FLAG, &C->drift_each_level, 0, 0, NULL,
		   "a drift run between every two levels too, so that each\n"
		   "level lies between two (for --drift-factors)"),
	SB_CLI_OPT("drift-factors", SB_CLI_FLAG, &C->drift_factors, 0, 0, NULL,
		   "predict each level at the server's speed of the drift runs\n"
		   "just before and after it (their TTFT and ITL against the\n"
		   "reference: measured against measured, the model not asked);\n"
		   "needs those runs (--drift-each-level, or a --measured file\n"
		   "that has them); no forecast"),
};
#undef C
#undef W
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: servebench validate --model-file MODEL.json --url URL --model NAME [options]\n"
		"       servebench validate --model-file MODEL.json --measured RESULTS.json [options]\n"
		"\n"
		"Measures the server at closed-loop and open-loop levels, replays the very same\n"
		"requests (send times, prompt and output lengths) through the simulator with\n"
		"MODEL.json, and prints measured vs predicted TTFT/TPOT/E2E mean/p50/p90/p99,\n"
		"throughput and the knee, with the error of each and the median absolute errors.\n"
		"A one-client probe before each level and after the last reads the server's own\n"
		"speed against the model; the speed-adjusted prediction scales each level's\n"
		"prefill and decode times by the probes beside it (the goals use the plain one).\n"
		"\n"
		"With --second-model, a second calibration of the same server predicts the same\n"
		"requests (same seed and replications); per quantity and class the report adds\n"
		"the median over levels of |pred_B - pred_A| / pred_A beside the errors (JSON:\n"
		"\"repeatability\"). validate measures no repeat itself: the measurement's own\n"
		"repeat difference is that of `servebench run` of the same levels against\n"
		"--out-measured. The goals use the first model only.\n"
		"\n"
		"The prediction simulates the server's slot count (as it reports it, else\n"
		"--slots); a model calibrated at another count says so, and decode passes\n"
		"beyond its largest calibrated batch are extrapolated.\n"
		"\n"
		"With --plan, the model plans the highest open-loop rate meeting the SLO on the\n"
		"server's slots (the same search as sbsim --plan, with this command's lengths,\n"
		"--num-requests per level, seed and replications), and the server is measured at\n"
		"that rate and 15%% above it. At each the measured SLO percentile gets its\n"
		"distribution-free 95%% order-statistic interval: the SLO held when the upper\n"
		"bound is at most the SLO, broke when the lower bound is above it, else\n"
		"undecided (a p99 needs 368 requests for a finite upper bound; a lower\n"
		"percentile fewer). The plan is confirmed when the planned rate did not break\n"
		"and the higher one broke; wrong when the planned rate broke with its interval\n"
		"above every replication's value (simulated runs of the same size), or the\n"
		"higher one held with its interval below every one; inconclusive otherwise:\n"
		"near the knee one run's percentile varies widely, and the planned rate is\n"
		"where the model's mean meets the SLO. Each rate is also predicted at the\n"
		"speed the server's steps ran in it, read from its tokens (JSON: \"plan_check\").\n"
		"\n"
		"What-ifs (--scale, --set, --sim-slots, --kv-cache) replay the same requests through a\n"
		"deliberately changed model: \"what if the server were 20%% slower\", or a check's\n"
		"negative control (a slower decode at batch >= 2, a costlier prefill, a slot\n"
		"fewer must miss where the calibrated model meets). They apply after\n"
		"--speed-factors, to both models, before anything is predicted (the default\n"
		"rates and --plan included); one report line and JSON \"what_if\" say what changed.\n"
		"\n"
		"--drift-ref FILE tells \"the server slowed down\" from \"the model is wrong\": the\n"
		"reference's one-client load (FILE's first concurrency-1 level, its workload's\n"
		"fixed lengths; distributions are refused) is measured again with fresh prompts\n"
		"before the first level and after the last, and its p50 TTFT, TPOT and E2E are\n"
		"compared with the reference's: measured against measured, no model. The runs\n"
		"go into --out-measured (\"reference_drift\"), so --measured reports them again;\n"
		"JSON \"reference_drift\". A failed drift run is a note, not a failure.\n"
		"\n");
	sb_cli_usage(f, opts, N_OPTS, 24);
	fprintf(f,
		"\n"
		"Exit status: 0 goals met (--plan: plan confirmed), 1 goals missed (--plan:\n"
		"plan wrong or inconclusive), 2 bad usage, 3 server unreachable.\n");
}

static void progress_cb(void *ud, const sb_run_progress *p)
{
	(void)ud;
	char line[200];
	sb_progress_format(p, line, sizeof(line));
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
}

/* The flags into cmd.cfg and cmd.goals, and the checks across them.
 * Returns 0 or -EINVAL with a message. */
static int configure(const sb_cli_args *a, sb_error *e)
{
	sb_validate_config *c = &cmd.cfg;
	if (sb_cli_given(opts, N_OPTS, a, "replications"))
		c->replications = (int)cmd.reps;
	if (cmd.no_forecast)
		c->forecast = 0;
	if (cmd.no_drift_check)
		c->probe_requests = 0;
	if (cmd.no_knee)
		cmd.goals.require_knee = 0;
	if (cmd.no_cache_prompt)
		c->run.cache_prompt = 0;
	sb_flag_prefix_default(&c->workload);
	if (!c->model_file)
		return sb_error_set(e, "--model-file is required (see servebench validate --help)");
	if (!c->measured && (!c->run.url || !c->run.model))
		return sb_error_set(e, "give --url URL --model NAME to measure, or --measured FILE");
	int slo = c->workload.slo.ttft_ms > 0 || c->workload.slo.tpot_ms > 0;
	if (c->plan && !slo)
		return sb_error_set(e, "--plan needs an SLO: --slo-ttft-ms and/or --slo-tpot-ms");
	if (!c->plan && (slo || sb_cli_given(opts, N_OPTS, a, "slo-percentile")))
		return sb_error_set(e, "--slo-ttft-ms, --slo-tpot-ms and --slo-percentile are for "
				       "--plan");
	if (c->plan && (c->n_conc >= 0 || c->n_rates >= 0))
		return sb_error_set(e, "--plan measures the planned rate and 15%% above it; it "
				       "takes no --concurrency or --rates");
	if (c->measured && (c->run.url || c->n_conc >= 0 || c->n_rates >= 0))
		return sb_error_set(e, "--measured compares an existing file; it takes no --url, "
				       "--concurrency or --rates");
	if (sb_workload_is_conversation(&c->workload) && !c->measured && c->n_rates != 0)
		return sb_error_set(e, "--turns: conversations are measured in closed loop; give "
				       "--rates none");
	if (c->measured && c->drift_ref)
		return sb_error_set(e, "--drift-ref measures the server; with --measured the drift "
				       "runs come from the file (its \"reference_drift\")");
	if ((c->drift_requests > 0 || c->drift_each_level) && !c->drift_ref)
		return sb_error_set(e, "--drift-requests and --drift-each-level go with "
				       "--drift-ref FILE");
	if (c->drift_factors && (c->speed_factors[0] > 0 || c->second_model_file))
		return sb_error_set(e, "--drift-factors sets each level's speed from the drift "
				       "runs; it takes no --speed-factors or --second-model");
	if (c->drift_factors && !c->measured && !c->drift_each_level)
		return sb_error_set(e, "--drift-factors needs a drift run beside every level: "
				       "give --drift-ref FILE --drift-each-level");
	return 0;
}

/* The exit status so far: the measurement cut short or interrupted. */
static int run_status(const sb_validate_result *res)
{
	if (res->cut_rc)
		return sb_exit_status(res->cut_rc);
	return res->signal ? 128 + res->signal : SB_EXIT_OK;
}

/* Writes doc to path (when given); 0, or the exit status of the failure
 * with the error printed. */
static int write_json(const char *path, const json_t *doc)
{
	sb_error e = { { 0 } };
	if (!path)
		return 0;
	int r = doc ? sb_json_write_file(path, doc, &e) : sb_error_code(&e, -ENOMEM, "out of memory");
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		return SB_EXIT_FAILED;
	}
	return 0;
}

/* Prints the report and the verdict and writes the outputs. Returns the
 * exit status: `status` when set, else 1 when a goal is missed or an
 * output could not be written. */
static int finish(const sb_validate_result *res, int status)
{
	sb_validate_report(stdout, &cmd.cfg, res, cmd.quiet, cmd.verbose);
	json_t *j = cmd.json_out ? sb_validate_to_json(&cmd.cfg, res, &cmd.goals) : NULL;
	if (write_json(cmd.json_out, j) && !status)
		status = SB_EXIT_FAILED;
	json_decref(j);
	if (write_json(cmd.sim_out, res->cmp.simulated) && !status)
		status = SB_EXIT_FAILED;
	if (res->has_plan) /* the plan's outcome is the verdict, not the goals */
		return status ? status
			      : res->plan.outcome == SB_CAPACITY_CONFIRMED ? SB_EXIT_OK : SB_EXIT_FAILED;
	if (!sb_compare_report_goals(stdout, &res->cmp, &cmd.goals) && !status)
		status = SB_EXIT_FAILED;
	return status;
}

/* Runs the validation cmd describes; the exit status. */
static int validate(void)
{
	sb_validate_result res;
	sb_error e = { { 0 } };
	int r = sb_validate_run(&cmd.cfg, &res, &e), status;
	if (r < 0 && res.stage <= SB_VALIDATE_MEASURE) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		status = sb_exit_status(r);
		goto out;
	}
	status = run_status(&res);
	if (cmd.meas_out && res.doc && write_json(cmd.meas_out, res.doc))
		status = SB_EXIT_FAILED;
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		/* our own measured document not reading back is a failure, not
		 * bad input */
		if (res.stage == SB_VALIDATE_RESULTS)
			status = SB_EXIT_FAILED;
		else if (!status)
			status = sb_exit_status(r);
		goto out;
	}
	status = finish(&res, status);
out:
	sb_validate_result_fini(&res);
	return status;
}

int sb_cmd_validate(int argc, char **argv)
{
	memset(&cmd, 0, sizeof(cmd));
	sb_validate_config_init(&cmd.cfg);
	sb_compare_goals_init(&cmd.goals);
	cmd.seed = -1;
	sb_cli_args a;
	sb_error e = { { 0 } };
	int status = 0, r = sb_cli_parse(opts, N_OPTS, argc, argv, 0, &a, &e);
	if (r == 0 && a.help) {
		usage(stdout);
		goto out;
	}
	if (r == 0)
		r = configure(&a, &e);
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		status = sb_exit_status(r);
		goto out;
	}
	sb_validate_config *c = &cmd.cfg;
	c->workload.seed = cmd.seed >= 0 ? (unsigned long)cmd.seed : sb_seed_from_clock();
	c->out = cmd.quiet ? NULL : stdout;
	c->log = stderr;
	c->log_prefix = PROG ": ";
	if (!c->measured) {
		c->run.stop = sb_interrupt_install(); /* what finished is compared */
		c->run.progress = isatty(STDERR_FILENO) && !cmd.quiet ? progress_cb : NULL;
	}
	status = validate();
out:
	sb_cli_args_fini(&a);
	return status;
}
