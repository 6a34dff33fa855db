/* cmd_validate.c — `servebench validate`: measure a live server (or take a
 * measured results file), replay the same requests through the simulator
 * with a calibrated model, print measured against predicted side by side,
 * and check the accuracy goals. The work is validate/validate.h's; this file
 * reads the flags, prints and picks the exit status.
 *
 * Exit status: 0 the goals are met; 1 they are not (the missed ones are
 * named) or an output could not be written; 2 bad usage or input; 3 the
 * server could not be reached; 130/143 interrupted. Failed requests are
 * reported and left out of the comparison.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "flag.h"
#include "core/jsonfile.h"
#include "core/parse.h"
#include "measure/progress.h"
#include "validate/validate.h"

#define PROG "servebench validate"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

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
		"  --model-file FILE    the calibrated model (servebench calibrate)\n"
		"  --url URL, --model NAME   the live server and the model name to request\n"
		"  --measured FILE      compare an existing results file instead of measuring\n"
		"  --slots S            the server's slot count for the default levels\n"
		"                       (default: the model's)\n"
		"  --concurrency LIST   closed-loop levels (default 1..2S); 'none' for none\n"
		"  --rates LIST         open-loop rates in req/s (default 30,50,70,90%% of the\n"
		"                       predicted capacity); 'none' for none\n"
		"  --num-requests N     measured requests per level (default 32)\n"
		"  --input-len N, --output-len N   tokens per request (default 256, 128)\n"
		"  --warmup N           unmeasured requests before each level (default 2)\n"
		"  --seed N             seed of prompts, arrivals and simulator noise\n"
		"  --replications K     replays per level (simulator noise; default 20)\n"
		"  --no-forecast        skip the fresh-traffic forecast intervals\n"
		"  --probe N            requests of the one-client speed probe taken before each\n"
		"                       level and after the last (default 3; 0: none)\n"
		"  --no-drift-check     the same as --probe 0\n"
		"  --goal-central PCT   goal for mean/p50 median |error| (default 5)\n"
		"  --goal-tail PCT      goal for p90/p99 median |error| (default 10)\n"
		"  --no-knee            do not require the knee to match\n"
		"  --json FILE          write the comparison (JSON)\n"
		"  --out-measured FILE  write the measured results\n"
		"  --out-simulated FILE write the predicted results (same schema, for plots)\n"
		"  --api A              auto|openai-chat|openai-completions|ollama-generate|ollama-chat\n"
		"  --no-cache-prompt    ask llama.cpp not to reuse its prompt cache\n"
		"  --verbose            per-request errors and replay spread\n"
		"  --quiet              only the summary and the verdict\n"
		"\n"
		"Exit status: 0 goals met, 1 goals missed, 2 bad usage,\n"
		"3 server unreachable.\n");
}

static void progress_cb(void *ud, const sb_run_progress *p)
{
	(void)ud;
	char line[200];
	sb_progress_format(p, line, sizeof(line));
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
}

/* What the flags say: the library's config and what this command prints
 * and writes. */
typedef struct options {
	sb_validate_config cfg;
	sb_compare_goals goals;
	const char *json_out, *meas_out, *sim_out;
	int quiet, verbose;
	long seed;      /* -1: from the clock */
} options;

/* Parses a level list into lv[0..*n) ("none": *n = 0). */
static int parse_levels(const char *s, int rate, double *lv, int *n, const char *what,
			sb_error *e)
{
	*n = 0;
	if (!strcmp(s, "none"))
		return 0;
	double *v = NULL;
	size_t k = 0;
	if (sb_parse_double_list(s, rate ? 1e-6 : 1, rate ? 1e6 : 100000, &v, &k, what, e) < 0)
		return -EINVAL;
	int r = 0;
	if (k > SB_WORKLOAD_MAX_LEVELS)
		r = sb_error_set(e, "%s: at most %d levels (got %zu)", what, SB_WORKLOAD_MAX_LEVELS, k);
	for (size_t i = 0; r == 0 && i < k; i++) {
		if (!rate && v[i] != floor(v[i]))
			r = sb_error_set(e, "%s: '%g' is not a whole number of streams", what, v[i]);
		lv[i] = v[i];
	}
	if (r == 0)
		*n = (int)k;
	free(v);
	return r;
}

static int parse_len(const char *s, sb_dist *d, const char *what, sb_error *e)
{
	long v;
	if (sb_parse_long(s, 1, 1000000, &v, what, e) < 0)
		return -EINVAL;
	*d = (sb_dist){ SB_DIST_DET, (double)v, 0 };
	return 0;
}

/* Fills o from argv. Returns 0, 1 for --help (printed), or 2 (bad usage,
 * printed). The one place that knows the flags. */
static int parse_flags(int argc, char **argv, options *o)
{
	sb_validate_config *c = &o->cfg;
	sb_workload *w = &c->workload;
	sb_error e = { { 0 } };
	long reps = c->replications;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		int m, r = 0;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 1; }
		if (!strcmp(a, "--quiet")) { o->quiet = 1; continue; }
		if (!strcmp(a, "--verbose")) { o->verbose = 1; continue; }
		if (!strcmp(a, "--no-forecast")) { c->forecast = 0; continue; }
		if (!strcmp(a, "--no-drift-check")) { c->probe_requests = 0; continue; }
		if (!strcmp(a, "--no-knee")) { o->goals.require_knee = 0; continue; }
		if (!strcmp(a, "--no-cache-prompt")) { c->run.cache_prompt = 0; continue; }
#define FLAG(name) (v = sb_flag_value(argc, argv, &i, name, &m), m)
#define NEED(name) do { if (!v) { fprintf(stderr, PROG ": %s needs a value\n", name); return 2; } } while (0)
		if (FLAG("--model-file")) { NEED("--model-file"); c->model_file = v; }
		else if (FLAG("--url")) { NEED("--url"); c->run.url = v; }
		else if (FLAG("--model")) { NEED("--model"); c->run.model = v; }
		else if (FLAG("--measured")) { NEED("--measured"); c->measured = v; }
		else if (FLAG("--slots")) { NEED("--slots"); r = sb_parse_long(v, 1, 4096, &c->slots, "--slots", &e); }
		else if (FLAG("--concurrency")) { NEED("--concurrency"); r = parse_levels(v, 0, c->conc, &c->n_conc, "--concurrency", &e); }
		else if (FLAG("--rates")) { NEED("--rates"); r = parse_levels(v, 1, c->rates, &c->n_rates, "--rates", &e); }
		else if (FLAG("--num-requests")) { NEED("--num-requests"); r = sb_parse_long(v, 1, 100000000, &w->requests, "--num-requests", &e); }
		else if (FLAG("--input-len")) { NEED("--input-len"); r = parse_len(v, &w->input_len, "--input-len", &e); }
		else if (FLAG("--output-len")) { NEED("--output-len"); r = parse_len(v, &w->output_len, "--output-len", &e); }
		else if (FLAG("--warmup")) { NEED("--warmup"); r = sb_parse_long(v, 0, 1000000, &w->warmup, "--warmup", &e); }
		else if (FLAG("--seed")) { NEED("--seed"); r = sb_parse_long(v, 0, 4294967295L, &o->seed, "--seed", &e); }
		else if (FLAG("--probe")) { NEED("--probe"); r = sb_parse_long(v, 0, 1000, &c->probe_requests, "--probe", &e); }
		else if (FLAG("--replications")) { NEED("--replications"); r = sb_parse_long(v, 1, 100000, &reps, "--replications", &e); }
		else if (FLAG("--goal-central")) { NEED("--goal-central"); r = sb_parse_double(v, 0, 1e6, &o->goals.central_pct, "--goal-central", &e); }
		else if (FLAG("--goal-tail")) { NEED("--goal-tail"); r = sb_parse_double(v, 0, 1e6, &o->goals.tail_pct, "--goal-tail", &e); }
		else if (FLAG("--json")) { NEED("--json"); o->json_out = v; }
		else if (FLAG("--out-measured")) { NEED("--out-measured"); o->meas_out = v; }
		else if (FLAG("--out-simulated")) { NEED("--out-simulated"); o->sim_out = v; }
		else if (FLAG("--api")) { NEED("--api"); r = sb_api_parse(v, &c->run.api, &e); }
		else {
			fprintf(stderr, PROG ": unknown option '%s' (see servebench validate --help)\n", a);
			return 2;
		}
#undef FLAG
#undef NEED
		if (r < 0) {
			fprintf(stderr, PROG ": %s\n", e.msg);
			return 2;
		}
	}
	c->replications = (int)reps;
	return 0;
}

/* Flags that do not go together, or are missing. Returns 0 or 2 (printed). */
static int check_flags(const options *o)
{
	const sb_validate_config *c = &o->cfg;
	if (!c->model_file) {
		fprintf(stderr, PROG ": --model-file is required (see servebench validate --help)\n");
		return 2;
	}
	if (!c->measured && (!c->run.url || !c->run.model)) {
		fprintf(stderr, PROG ": give --url URL --model NAME to measure, or --measured FILE\n");
		return 2;
	}
	if (c->measured && (c->run.url || c->n_conc >= 0 || c->n_rates >= 0)) {
		fprintf(stderr, PROG ": --measured compares an existing file; it takes no --url, "
				"--concurrency or --rates\n");
		return 2;
	}
	return 0;
}

/* A seed from the clock and the process id when none was given. */
static unsigned long pick_seed(long seed)
{
	if (seed >= 0)
		return (unsigned long)seed;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((unsigned long)ts.tv_nsec ^ ((unsigned long)ts.tv_sec << 20) ^
		(unsigned long)getpid()) & 0xffffffffUL;
}

/* SIGINT/SIGTERM stop the measurement (what finished is compared). */
static void catch_signals(sb_validate_config *c)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	c->run.stop = &stop_signal;
}

/* The exit status of a measurement that failed with rc. */
static int measure_status(int rc)
{
	return rc == -ECONNREFUSED ? 3 : (rc == -EINVAL || rc == -EIO) ? 2 : 1;
}

/* The exit status so far: the measurement cut short or interrupted. */
static int run_status(const sb_validate_result *res)
{
	if (res->cut_rc)
		return measure_status(res->cut_rc);
	return res->signal ? 128 + res->signal : 0;
}

/* Writes doc to path (when given); 0, or 1 with the error printed. */
static int write_json(const char *path, const json_t *doc)
{
	sb_error e = { { 0 } };
	if (!path)
		return 0;
	if (!doc || sb_json_write_file(path, doc, &e) < 0) {
		fprintf(stderr, PROG ": %s\n", doc ? e.msg : "out of memory");
		return 1;
	}
	return 0;
}

/* Prints the report and the verdict and writes the outputs. Returns the
 * exit status: `status` when set, else 1 when a goal is missed or an
 * output could not be written. */
static int finish(const options *o, const sb_validate_result *res, int status)
{
	sb_validate_report(stdout, &o->cfg, res, o->quiet, o->verbose);
	json_t *j = o->json_out ? sb_validate_to_json(&o->cfg, res, &o->goals) : NULL;
	if (write_json(o->json_out, j) && !status)
		status = 1;
	json_decref(j);
	if (write_json(o->sim_out, res->cmp.simulated) && !status)
		status = 1;
	if (!sb_compare_report_goals(stdout, &res->cmp, &o->goals) && !status)
		status = 1;
	return status;
}

/* Runs the validation o describes; the exit status. */
static int validate(options *o)
{
	sb_validate_result res;
	sb_error e = { { 0 } };
	int r = sb_validate_run(&o->cfg, &res, &e), status;
	if (r < 0 && res.stage <= SB_VALIDATE_MEASURE) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		status = res.stage == SB_VALIDATE_MEASURE ? measure_status(r) : 2;
		goto out;
	}
	status = run_status(&res);
	if (o->meas_out && res.doc && write_json(o->meas_out, res.doc))
		status = 1;
	if (r < 0) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		status = res.stage == SB_VALIDATE_RESULTS ? 1 : status ? status : 2;
		goto out;
	}
	status = finish(o, &res, status);
out:
	sb_validate_result_fini(&res);
	return status;
}

int sb_cmd_validate(int argc, char **argv)
{
	options o;
	memset(&o, 0, sizeof(o));
	sb_validate_config_init(&o.cfg);
	sb_compare_goals_init(&o.goals);
	o.seed = -1;
	int r = parse_flags(argc, argv, &o);
	if (r == 0)
		r = check_flags(&o);
	if (r)
		return r == 1 ? 0 : r;
	sb_validate_config *c = &o.cfg;
	c->workload.seed = pick_seed(o.seed);
	c->out = o.quiet ? NULL : stdout;
	c->log = stderr;
	c->log_prefix = PROG ": ";
	if (!c->measured) {
		catch_signals(c);
		c->run.progress = isatty(STDERR_FILENO) && !o.quiet ? progress_cb : NULL;
	}
	return validate(&o);
}
