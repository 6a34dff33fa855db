/* sbsim.c — the `sbsim` command: simulate an LLM server under load.
 *
 * Flags into sb_setup_flags (one table, core/cli.h), the setup merged and
 * checked by sim/setup.h, the sweep run and printed by sim/sweep.h and
 * sim/sweep_print.h; --plan is sim/capacity.h, --json
 * sim/sweep_json.h, --compare validate/compare.h (--second-model
 * validate/repeat.h).
 *
 * `sbsim serve` is app/cmd_serve.c.
 *
 * Exit status: 0 done; 1 --check found an expectation not met, or a write
 * or the simulation failed; 2 bad usage or input.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/cli.h"
#include "core/jsonfile.h"
#include "core/model_scale.h"
#include "core/parse.h"
#include "core/results.h"
#include "cmd_serve.h"
#include "exit_status.h"
#include "sbsim_trace.h"
#include "server_flags.h"
#include "sim/capacity.h"
#include "sim/scenario.h"
#include "sim/setup.h"
#include "sim/sweep.h"
#include "sim/sweep_json.h"
#include "sim/sweep_print.h"
#include "validate/compare.h"
#include "validate/repeat.h"

/* The command line: the setup's flags plus what sbsim does with the run. */
static struct {
	sb_setup_flags f;
	const char *json, *compare, *second_model, *trace, *trace_window;
	double trace_speedup;
	int version;
} cmd;

#define F (&cmd.f)
static const sb_cli_opt opts[] = {
	SB_CLI_HEAD("load (one of):"),
	SB_CLI_OPT("rate", SB_CLI_DOUBLE_LIST, &F->rate, 1e-9, 1e9, "R[,R...]",
		   "open loop, requests/s per level"),
	SB_CLI_OPT("concurrency", SB_CLI_DOUBLE_LIST, &F->concurrency, 1, 1e6, "C[,C...]",
		   "closed loop, clients per level"),
	SB_CLI_OPT("arrival", SB_CLI_STRING, &F->arrival, 0, 0, "poisson|constant|gamma",
		   "open-loop gaps (default poisson)"),
	SB_CLI_OPT("arrival-cv", SB_CLI_DOUBLE, &F->arrival_cv, 1e-3, 100, "X",
		   "gamma gaps' coefficient of variation (bursty > 1)"),
	SB_CLI_OPT("bursty", SB_CLI_DOUBLE, &F->bursty, 1e-3, 100, "CV",
		   "same as --arrival gamma --arrival-cv CV"),
	SB_CLI_OPT("conversations", SB_CLI_DOUBLE_LIST, &F->conversations, 1, 1e6, "C[,C...]",
		   "closed loop of conversations, C at once per level (each\n"
		   "client's turns in order; --turns, default 4)"),
	SB_CLI_OPT("turns", SB_CLI_STRING, &F->turns, 0, 0, "N|DIST",
		   "each client (or --rate arrival: the rate then counts\n"
		   "conversations begun) is a conversation of N turns, each\n"
		   "prompt its history (earlier prompts and answers) and\n"
		   "then --input-len new tokens"),
	SB_CLI_OPT("think", SB_CLI_STRING, &F->think, 0, 0, "DIST",
		   "closed loop: pause between a client's requests (s);\n"
		   "conversations: between a turn's answer and the next turn"),
	SB_CLI_HEAD("workload:"),
	SB_CLI_OPT("input-len", SB_CLI_STRING, &F->input_len, 0, 0, "N|DIST",
		   "prompt tokens (DIST: lognormal:MU,SIGMA ...)"),
	SB_CLI_OPT("output-len", SB_CLI_STRING, &F->output_len, 0, 0, "N|DIST", "output tokens"),
	SB_CLI_OPT("prefix-len", SB_CLI_LONG, &F->prefix_len, 1, 1e8, "N",
		   "every prompt starts with a shared prefix of N tokens\n"
		   "(a system prompt, a RAG template) before its own\n"
		   "--input-len tokens; the model's prompt_cache decides\n"
		   "what is reused"),
	SB_CLI_OPT("prefix-groups", SB_CLI_LONG, &F->prefix_groups, 1, 1e8, "G",
		   "--prefix-len: G different prefixes, one drawn per\n"
		   "request (default 1)"),
	SB_CLI_OPT("requests", SB_CLI_LONG, &F->requests, 1, 1e12, "N",
		   "counted requests per level (default 2000)"),
	SB_CLI_OPT("duration-s", SB_CLI_DOUBLE, &F->duration_s, 1e-6, 1e12, "S",
		   "per level by simulated time instead of count"),
	SB_CLI_OPT("warmup", SB_CLI_LONG, &F->warmup, 0, 1e9, "N",
		   "requests of each level simulated but not counted (default 2):\n"
		   "the start-up transient is deleted (servebench run's warm-up\n"
		   "requests instead go one at a time before the level)"),
	SB_CLI_OPT("warmup-s", SB_CLI_DOUBLE, &F->warmup_s, 0, 1e12, "S",
		   "initial seconds of each level not counted (default 0)"),
	SB_CLI_OPT("seed", SB_CLI_LONG, &F->seed, 0, 4294967295.0, "N", "random seed"),
	SB_CLI_OPT("replications", SB_CLI_LONG, &F->replications, 1, 10000, "K",
		   "K runs per level, 95% confidence intervals (default 1;\n"
		   "with parameter draws 40)"),
	SB_CLI_OPT("uncertainty", SB_CLI_FLAG, &F->uncertainty, 0, 0, NULL,
		   "each replication draws the model's coefficients from\n"
		   "its fit.covariance; figures get 90% intervals (where a\n"
		   "new run falls, from the replications). The default when the\n"
		   "model has a fit.covariance (calibrate writes one)"),
	SB_CLI_OPT("no-uncertainty", SB_CLI_FLAG, &F->no_uncertainty, 0, 0, NULL,
		   "the point prediction: the model's coefficients as they are"),
	SB_CLI_HEAD("server:"),
	SB_SERVER_FLAG_ROWS(F)
	SB_CLI_OPT("service", SB_CLI_STRING, &F->service, 0, 0,
		   "exp:MEAN_S|det:S|lognormal:MU,SIGMA|gamma:K,THETA",
		   "independent-service mode (M/G/c, no batching)"),
	SB_WHATIF_FLAG_ROWS(F)
	SB_WHATIF_PCACHE_ROW(F),
	SB_CLI_OPT("pin-slots", SB_CLI_LONG, &F->pin_slots, 1, 4096, "K",
		   "a request takes the lowest free slot of 0, K, 2K... (as\n"
		   "servebench run --pin-slots K on llama.cpp)"),
	SB_CLI_OPT("no-noise", SB_CLI_FLAG, &F->no_noise, 0, 0, NULL,
		   "no step noise or overhead spread"),
	SB_CLI_OPT("queue-cap", SB_CLI_LONG, &F->queue_cap, 1, 1e8, "N",
		   "open loop: stop arrivals when N wait (default 200000)"),
	SB_CLI_HEAD("fleet:"),
	SB_CLI_OPT("replicas", SB_CLI_LONG, &F->replicas, 1, 100000, "N",
		   "N copies of the server behind a router (default 1:\n"
		   "no router); per group with several --model-file"),
	SB_CLI_OPT("route", SB_CLI_STRING, &F->route, 0, 0,
		   "round-robin|random|least-outstanding|least-queued|p2c|prefix-affinity",
		   "the router's policy (default round-robin); ties at random;\n"
		   "prefix-affinity: a --prefix-groups group stays on the\n"
		   "replica its first request went to"),
	SB_CLI_OPT("jobs", SB_CLI_LONG, &F->jobs, 1, 256, "J",
		   "threads for replications, levels and --plan (default:\n"
		   "the online CPUs; results do not depend on it)"),
	SB_CLI_HEAD("SLO and planning:"),
	SB_CLI_OPT("slo-ttft-ms", SB_CLI_DOUBLE, &F->slo_ttft_ms, 1e-9, 1e12, "X", "TTFT SLO"),
	SB_CLI_OPT("slo-tpot-ms", SB_CLI_DOUBLE, &F->slo_tpot_ms, 1e-9, 1e12, "X", "TPOT SLO"),
	SB_CLI_OPT("slo-percentile", SB_CLI_DOUBLE, &F->slo_percentile, 1, 99.99, "P",
		   "the SLOs' percentile (default 99)"),
	SB_CLI_OPT("plan", SB_CLI_FLAG, &F->plan, 0, 0, NULL,
		   "fewest slots for the (first) rate; highest rate for the slots"),
	SB_CLI_OPT("max-slots", SB_CLI_LONG, &F->max_slots, 1, 4096, "N",
		   "planning search bound (default 256)"),
	SB_CLI_OPT("plan-slots", SB_CLI_DOUBLE_LIST, &F->plan_slots, 1, 4096, "S[,S...]",
		   "--plan also: for each slots per replica, the fewest\n"
		   "replicas meeting the SLO at the rate (--route's router)"),
	SB_CLI_HEAD("files:"),
	SB_CLI_OPT("scenario", SB_CLI_STRING, &F->scenario_file, 0, 0, "FILE",
		   "run a scenario file (flags override it)"),
	SB_CLI_OPT("check", SB_CLI_FLAG, &F->check, 0, 0, NULL,
		   "check the scenario's \"expect\" bands (exit 1 on failure)"),
	SB_CLI_OPT("json", SB_CLI_STRING, &cmd.json, 0, 0, "FILE",
		   "write results (schema servebench.results/1, source simulated)"),
	SB_CLI_OPT("json-requests", SB_CLI_FLAG, &F->json_requests, 0, 0, NULL,
		   "include per-request records (first replication; with\n"
		   "--prefix-len each has its prefix_group and the server\n"
		   "timings llama.cpp reports: prompt_n, cache_n, prompt_ms)"),
	SB_CLI_OPT("compare", SB_CLI_STRING, &cmd.compare, 0, 0, "MEASURED.json",
		   "replay a measured run through the model and print\n"
		   "measured vs predicted (--json: the prediction); also a\n"
		   "vllm bench serve JSON, LLMServingSim requests.jsonl,\n"
		   "AIPerf profile_export.jsonl, inference-perf\n"
		   "per_request_lifecycle_metrics.json, GuideLLM\n"
		   "benchmarks.json or CSV"),
	SB_CLI_OPT("trace", SB_CLI_STRING, &cmd.trace, 0, 0, "FILE",
		   "replay a request trace through the model, open loop at\n"
		   "its times: Mooncake JSONL, the Azure LLM inference\n"
		   "trace CSV or BurstGPT's CSV (--json: the prediction;\n"
		   "--requests N: its first N)"),
	SB_CLI_OPT("trace-speedup", SB_CLI_DOUBLE, &cmd.trace_speedup, 1e-6, 1e6, "X",
		   "--trace: send X times faster"),
	SB_CLI_OPT("trace-window", SB_CLI_STRING, &cmd.trace_window, 0, 0, "FROM,TO",
		   "--trace: only the requests sent in [FROM, TO) seconds\n"
		   "of the trace's clock (from its first request)"),
	SB_CLI_OPT("second-model", SB_CLI_STRING, &cmd.second_model, 0, 0, "FILE",
		   "with --compare: a second calibration's prediction of\n"
		   "the same requests against the first's"),
	SB_CLI_OPT("version", SB_CLI_FLAG, &cmd.version, 0, 0, NULL, "print the version"),
};
#undef F
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: sbsim [OPTIONS]\n"
		   "       sbsim serve [OPTIONS]   (a live server that behaves like the model;\n"
		   "                               sbsim serve --help)\n"
		   "Simulates an LLM server (slots, FIFO queue, continuous batching) under load.\n"
		   "\n");
	sb_cli_usage(f, opts, N_OPTS, 27);
	fprintf(f, "  -h, --help               this text\n");
}

/* Prints e's message; returns the exit status of err. */
static int fail(const sb_error *e, int err)
{
	fprintf(stderr, "sbsim: %s\n", e->msg);
	return sb_exit_status(err);
}

/* Only the flags ok[0..n) (ok[0] the mode's own) were given: else an
 * error "WHY; it takes only --ok[1], ... and --ok[n-1] (not --x)". */
static int check_only(const sb_cli_args *a, const char *why, const char *const *ok, size_t n,
		      sb_error *e)
{
	for (size_t k = 0; k < N_OPTS; k++) {
		int allowed = 0;
		for (size_t j = 0; j < n; j++)
			allowed |= opts[k].name && !strcmp(opts[k].name, ok[j]);
		if (!a->given[k] || allowed)
			continue;
		char list[512] = "";
		for (size_t j = 1; j < n; j++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s--%s",
				 j == 1 ? "" : j + 1 == n ? " and " : ", ", ok[j]);
		return sb_error_set(e, "%s; it takes only %s (not --%s)", why, list, opts[k].name);
	}
	if (cmd.f.seed != LONG_MIN && cmd.f.seed > 0x7fffffffL)
		return sb_error_set(e, "--seed: %ld is outside [0, 2147483647]", cmd.f.seed);
	return 0;
}

/* --compare takes only the flags that make sense for a replay. */
static int check_compare_flags(const sb_cli_args *a, sb_error *e)
{
	static const char *const ok[] = { "compare", "model-file", "slots",	"seed",
					   "replications", "no-noise", "json", "second-model",
					   "scale", "set", "kv-cache", "prompt-cache" };
	return check_only(a, "--compare replays the measured workload", ok,
			  sizeof(ok) / sizeof(ok[0]), e);
}

/* sbsim --trace: the trace's requests through the model (sbsim_trace.h). */
static int run_trace(const sb_cli_args *a, sb_error *e)
{
	static const char *const ok[] = { "trace", "trace-speedup", "trace-window", "requests",
					  "model-file", "slots", "seed", "no-noise", "json",
					  "scale", "set", "kv-cache" };
	sb_sbsim_trace t = { .path = cmd.trace, .json = cmd.json, .no_noise = cmd.f.no_noise };
	sb_trace_opts_init(&t.topts);
	int r = check_only(a, "--trace replays the trace's requests", ok,
			   sizeof(ok) / sizeof(ok[0]), e);
	if (r == 0 && cmd.f.model_files.n > 1)
		r = sb_error_set(e, "--trace replays one server: give --model-file once");
	if (r == 0 && cmd.trace_window)
		r = sb_trace_window_parse(cmd.trace_window, &t.topts, e);
	if (r < 0)
		return fail(e, -EINVAL);
	if (cmd.trace_speedup > 0)
		t.topts.speedup = cmd.trace_speedup;
	t.topts.limit = cmd.f.requests > 0 ? cmd.f.requests : 0;
	t.seed = cmd.f.seed != LONG_MIN ? (unsigned long)cmd.f.seed : 1;
	sb_model m;
	if ((r = sb_setup_load_model(&cmd.f, NULL, &m, e)) < 0)
		return fail(e, r);
	r = sb_sbsim_trace_run(&t, &m, e);
	sb_model_fini(&m);
	return r < 0 ? fail(e, r) : 0;
}

/* --second-model: its replay of meas with o, and the table of its
 * difference from c's prediction (validate/repeat.h). */
static int compare_second(const sb_comparison *c, const sb_results *meas,
			  const sb_compare_opts *o, sb_error *e)
{
	sb_model m2;
	sb_comparison c2;
	sb_repeatability rp;
	int r = sb_model_load(cmd.second_model, &m2, e);
	if (r < 0) {
		sb_error_prefix(e, "--second-model");
		return fail(e, r);
	}
	if (cmd.f.slots != LONG_MIN)
		m2.slots = (int)cmd.f.slots;
	r = sb_whatif_apply(&cmd.f.what_if, &m2, e); /* the same what-if server */
	if (r == 0)
		r = sb_compare_run(&m2, meas, o, &c2, e);
	if (r == 0) {
		r = sb_repeatability_compute(c, &c2, &rp, e);
		sb_comparison_fini(&c2);
	}
	sb_model_fini(&m2);
	if (r < 0) {
		sb_error_prefix(e, "--second-model %s", cmd.second_model);
		return fail(e, r);
	}
	int status = sb_repeatability_report(stdout, &rp, c, cmd.second_model) < 0 ? 1 : 0;
	sb_repeatability_fini(&rp);
	return status;
}

/* "what-if: ..." when the model was changed on purpose. */
static void print_what_if(void)
{
	if (!sb_whatif_given(&cmd.f.what_if))
		return;
	char what[512];
	sb_whatif_describe(&cmd.f.what_if, what, sizeof(what));
	printf("what-if: the model changed on purpose (%s)\n", what);
}

/* Adds "what_if" to a results document (borrowed) when there is one. */
static void add_what_if(json_t *doc)
{
	if (sb_whatif_given(&cmd.f.what_if))
		json_object_set_new(doc, "what_if", sb_whatif_to_json(&cmd.f.what_if));
}

/* Replays the measured file through the model; prints the comparison. */
static int compare_with(const sb_model *m, sb_results *meas, sb_error *e)
{
	sb_compare_opts o;
	sb_compare_opts_init(&o);
	if (cmd.f.seed != LONG_MIN)
		o.seed = (unsigned long)cmd.f.seed;
	if (cmd.f.replications != LONG_MIN)
		o.replications = (int)cmd.f.replications;
	o.no_noise = cmd.f.no_noise || o.no_noise;
	sb_comparison c;
	int r = sb_compare_run(m, meas, &o, &c, e);
	if (r < 0) {
		sb_error_prefix(e, "--compare %s", cmd.compare);
		return fail(e, r);
	}
	printf("sbsim: model \"%s\" against %s\n", m->name, cmd.compare);
	print_what_if();
	add_what_if(c.simulated);
	int status = sb_compare_report(stdout, &c, 0) < 0 ? 1 : 0;
	if (cmd.second_model) {
		int s2 = compare_second(&c, meas, &o, e);
		if (s2)
			status = s2;
	}
	sb_compare_goals g;
	sb_compare_goals_init(&g);
	sb_compare_report_goals(stdout, &c, &g);
	if (cmd.json && (r = sb_json_write_file(cmd.json, c.simulated, e)) < 0)
		status = fail(e, r);
	sb_comparison_fini(&c);
	return status;
}

/* sbsim --compare: the measured file's own arrivals and lengths through the
 * model (validate/compare.h). */
static int run_compare(const sb_cli_args *a, sb_error *e)
{
	int r = check_compare_flags(a, e);
	if (r == 0 && cmd.f.model_files.n > 1)
		r = sb_error_set(e, "--compare replays one server: give --model-file once");
	if (r < 0)
		return fail(e, -EINVAL);
	sb_model m;
	if ((r = sb_setup_load_model(&cmd.f, NULL, &m, e)) < 0)
		return fail(e, r);
	sb_results meas;
	int status;
	if ((r = sb_results_load(cmd.compare, &meas, e)) < 0) {
		sb_error_prefix(e, "--compare");
		status = fail(e, r);
	} else {
		status = compare_with(&m, &meas, e);
		sb_results_fini(&meas);
	}
	sb_model_fini(&m);
	return status;
}

/* --plan, printed; *plan its JSON. */
static int run_plan(const sb_setup *s, json_t **plan, sb_error *e)
{
	sb_capacity_plan p;
	int r = sb_capacity_plan_run(&s->model, &s->opts, &s->w, s->reps, s->max_slots, &p, e);
	if (r < 0) {
		sb_error_prefix(e, "--plan");
		return fail(e, r);
	}
	if (s->n_plan_slots > 0)
		r = sb_capacity_plan_slot_choices(&s->model, &s->opts, &s->w, s->reps, s->plan_slots,
						  s->n_plan_slots, &p, e);
	if (r < 0) {
		sb_error_prefix(e, "--plan-slots");
		return fail(e, r);
	}
	sb_capacity_plan_print(stdout, &p, &s->w.slo);
	*plan = sb_capacity_plan_to_json(&p);
	return 0;
}

/* --json: the sweep (and plan, stolen) as a results file. */
static int write_json(const sb_setup *s, const sb_sweep *sw, json_t *plan, sb_error *e)
{
	sb_sweep_doc d = { &s->model, &s->opts, &s->w,
			   s->have_scenario ? s->scenario.name : NULL, cmd.f.json_requests };
	json_t *res = sb_sweep_to_results(sw, &d, plan);
	if (!res)
		return fail(&(sb_error){ "out of memory building the results" }, -ENOMEM);
	add_what_if(res);
	int r = sb_json_write_file(cmd.json, res, e);
	json_decref(res);
	if (r < 0) {
		sb_error_prefix(e, "--json");
		return fail(e, r);
	}
	return 0;
}

/* --check: the scenario's expectation bands; 1 when one is not met. */
static int check_expectations(const sb_scenario *sc, const sb_sweep *sw)
{
	char buf[8192];
	int nf = sb_scenario_check(sc, sw, buf, sizeof buf);
	if (nf > 0) {
		printf("\ncheck: %d of %d expectations FAILED:\n%s", nf, sc->n_expect, buf);
		return 1;
	}
	printf("\ncheck: all %d expectations met\n", sc->n_expect);
	return 0;
}

/* The setup, its sweep, the table; then --plan, --json and --check. */
static int run_sweep(sb_error *e)
{
	sb_setup s;
	int r = sb_setup_build(&cmd.f, &s, e);
	if (r < 0)
		return fail(e, r);
	sb_setup_print(stdout, &s);
	print_what_if();
	sb_sweep sw;
	int status = 0;
	if ((r = sb_sweep_run(&s.model, &s.opts, &s.w, s.reps, &sw, e)) < 0) {
		status = fail(e, r);
		goto out;
	}
	sb_sweep_print(stdout, &sw, &s.model, &s.opts, &s.w);
	json_t *plan = NULL;
	if (cmd.f.plan)
		status = run_plan(&s, &plan, e);
	if (!status && cmd.json)
		status = write_json(&s, &sw, plan, e);
	else
		json_decref(plan);
	if (!status && cmd.f.check)
		status = check_expectations(&s.scenario, &sw);
	sb_sweep_fini(&sw);
out:
	sb_setup_fini(&s);
	return status;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "serve"))
		return sb_cmd_serve(argc - 1, argv + 1);
	sb_setup_flags_init(&cmd.f);
	sb_cli_args args;
	sb_error err = { "" };
	int status, r = sb_cli_parse(opts, N_OPTS, argc, argv, 0, &args, &err);
	if (cmd.f.model_files.n > 0)
		cmd.f.model_file = cmd.f.model_files.v[0];
	if (r < 0) {
		status = fail(&err, r);
	} else if (args.help) {
		usage(stdout);
		status = 0;
	} else if (cmd.version) {
		printf("sbsim %s\n", SB_VERSION);
		status = 0;
	} else if (cmd.compare) {
		status = run_compare(&args, &err);
	} else if (cmd.trace) {
		status = run_trace(&args, &err);
	} else if (cmd.trace_window || cmd.trace_speedup > 0) {
		sb_error_set(&err, "--trace-speedup and --trace-window go with --trace FILE");
		status = fail(&err, -EINVAL);
	} else if (cmd.second_model) {
		sb_error_set(&err, "--second-model goes with --compare MEASURED.json");
		status = fail(&err, -EINVAL);
	} else {
		status = run_sweep(&err);
	}
	sb_cli_args_fini(&args);
	sb_cli_strings_fini(&cmd.f.model_files);
	sb_cli_list_fini(&cmd.f.rate);
	sb_cli_list_fini(&cmd.f.concurrency);
	sb_cli_list_fini(&cmd.f.conversations);
	sb_cli_list_fini(&cmd.f.plan_slots);
	return status;
}
