/* sbsim.c — the `sbsim` command: simulate an LLM server under load. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/knee.h"
#include "core/model.h"
#include "core/parse.h"
#include "core/results.h"
#include "core/workload.h"
#include "validate/compare.h"
#include "scenario.h"
#include "sim.h"
#include "sweep.h"

#ifndef SB_VERSION
#define SB_VERSION "0.0.0"
#endif

static void usage(FILE *f)
{
	fprintf(f,
"usage: sbsim [OPTIONS]\n"
"Simulates an LLM server (slots, FIFO queue, continuous batching) under load.\n"
"\n"
"load (one of):\n"
"  --rate R[,R...]          open loop, requests/s per level\n"
"  --concurrency C[,C...]   closed loop, clients per level\n"
"  --arrival poisson|constant|gamma   open-loop gaps (default poisson)\n"
"  --arrival-cv X           gamma gaps' coefficient of variation (bursty > 1)\n"
"  --bursty CV              same as --arrival gamma --arrival-cv CV\n"
"  --think DIST             closed loop: pause between a client's requests (s)\n"
"workload:\n"
"  --input-len N|DIST  --output-len N|DIST   tokens (DIST: lognormal:MU,SIGMA ...)\n"
"  --requests N             counted requests per level (default 2000)\n"
"  --duration-s S           per level by simulated time instead of count\n"
"  --warmup N  --warmup-s S requests / initial seconds of each level simulated but\n"
"                           not counted (default 2 / 0): the start-up transient is\n"
"                           deleted (servebench run's warm-up requests instead go\n"
"                           one at a time before the level)\n"
"  --seed N  --replications K   K runs per level, 95%% confidence intervals\n"
"server:\n"
"  --model-file FILE        engine model (default: the embedded model)\n"
"  --slots S  --max-queue N  --batch-tokens N   override the model's server\n"
"  --service exp:MEAN_S|det:S|lognormal:MU,SIGMA|gamma:K,THETA\n"
"                           independent-service mode (M/G/c, no batching)\n"
"  --no-noise               no step noise or overhead spread\n"
"  --queue-cap N            open loop: stop arrivals when N wait (default 200000)\n"
"SLO and planning:\n"
"  --slo-ttft-ms X  --slo-tpot-ms X  --slo-percentile P (default 99)\n"
"  --plan                   fewest slots for the (first) rate; highest rate for the slots\n"
"  --max-slots N            planning search bound (default 256)\n"
"files:\n"
"  --scenario FILE          run a scenario file (flags override it)\n"
"  --check                  check the scenario's \"expect\" bands (exit 1 on failure)\n"
"  --json FILE              write results (schema servebench.results/1, source simulated)\n"
"  --json-requests          include per-request records (first replication)\n"
"  --compare MEASURED.json  replay a measured run through the model and print\n"
"                           measured vs predicted (--json: the prediction)\n"
"  -h, --help  --version\n");
}

/* The most simulated requests one invocation may ask for (~20 min). */
#define SB_MAX_WORK 2e9

/* The flags, each seen at most once. */
enum {
	O_SLOTS, O_MAXQ, O_BATCH, O_RATE, O_CONC, O_ARRIVAL, O_ARRCV, O_BURSTY, O_THINK,
	O_IN, O_OUT, O_REQ, O_DUR, O_WARM, O_WARMS, O_SEED, O_REPS, O_MODEL, O_SERVICE,
	O_NONOISE, O_QCAP, O_SLOT, O_SLOP, O_SLOPCT, O_PLAN, O_MAXSLOTS, O_SCEN, O_CHECK,
	O_JSON, O_JSONREQ, O_CMP, O_N
};
static const struct {
	const char *name;
	int arg;
} flags[O_N] = {
	[O_SLOTS] = { "slots", 1 },       [O_MAXQ] = { "max-queue", 1 },
	[O_BATCH] = { "batch-tokens", 1 }, [O_RATE] = { "rate", 1 },
	[O_CONC] = { "concurrency", 1 },  [O_ARRIVAL] = { "arrival", 1 },
	[O_ARRCV] = { "arrival-cv", 1 },  [O_BURSTY] = { "bursty", 1 },
	[O_THINK] = { "think", 1 },       [O_IN] = { "input-len", 1 },
	[O_OUT] = { "output-len", 1 },    [O_REQ] = { "requests", 1 },
	[O_DUR] = { "duration-s", 1 },    [O_WARM] = { "warmup", 1 },
	[O_WARMS] = { "warmup-s", 1 },    [O_SEED] = { "seed", 1 },
	[O_REPS] = { "replications", 1 }, [O_MODEL] = { "model-file", 1 },
	[O_SERVICE] = { "service", 1 },   [O_NONOISE] = { "no-noise", 0 },
	[O_QCAP] = { "queue-cap", 1 },    [O_SLOT] = { "slo-ttft-ms", 1 },
	[O_SLOP] = { "slo-tpot-ms", 1 },  [O_SLOPCT] = { "slo-percentile", 1 },
	[O_PLAN] = { "plan", 0 },         [O_MAXSLOTS] = { "max-slots", 1 },
	[O_SCEN] = { "scenario", 1 },     [O_CHECK] = { "check", 0 },
	[O_JSON] = { "json", 1 },         [O_JSONREQ] = { "json-requests", 0 },
	[O_CMP] = { "compare", 1 },
};

#define FAIL(...)                                   \
	do {                                        \
		fprintf(stderr, "sbsim: " __VA_ARGS__); \
		fputc('\n', stderr);                \
		rc = 2;                             \
		goto out;                           \
	} while (0)

static int parse_args(int argc, char **argv, const char **val, int *seen)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--", 2) != 0) {
			fprintf(stderr, "sbsim: unexpected argument '%s' (options start with --; see --help)\n", a);
			return -1;
		}
		const char *name = a + 2;
		const char *eq = strchr(name, '=');
		size_t nl = eq ? (size_t)(eq - name) : strlen(name);
		int k = -1;
		for (int j = 0; j < O_N; j++)
			if (strlen(flags[j].name) == nl && !strncmp(flags[j].name, name, nl))
				k = j;
		if (k < 0) {
			fprintf(stderr, "sbsim: unknown option '%s' (see --help)\n", a);
			return -1;
		}
		if (seen[k]) {
			fprintf(stderr, "sbsim: option --%s given twice\n", flags[k].name);
			return -1;
		}
		seen[k] = 1;
		if (!flags[k].arg) {
			if (eq) {
				fprintf(stderr, "sbsim: option --%s takes no value (got '%s')\n",
					flags[k].name, eq + 1);
				return -1;
			}
			continue;
		}
		if (eq) {
			val[k] = eq + 1;
		} else {
			if (i + 1 >= argc) {
				fprintf(stderr, "sbsim: option --%s needs a value\n", flags[k].name);
				return -1;
			}
			val[k] = argv[++i];
		}
	}
	return 0;
}

/* Formats v (and its CI half-width) into buf. */
static void cell(char *buf, size_t len, double v, double h, int prec, int ci)
{
	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (ci && isfinite(h))
		snprintf(buf, len, "%.*f±%.*f", prec, v, prec, h);
	else
		snprintf(buf, len, "%.*f", prec, v);
}

static void print_table(const sb_sweep *sw, const sb_workload *w, int has_slo, int bounded)
{
	static const struct {
		const char *head;
		sb_metric m;
		int prec;
	} cols[] = {
		{ "TTFT p50", SB_MET_TTFT_P50, 1 }, { "TTFT p90", SB_MET_TTFT_P90, 1 },
		{ "TTFT p99", SB_MET_TTFT_P99, 1 }, { "TPOT p50", SB_MET_TPOT_P50, 2 },
		{ "TPOT p99", SB_MET_TPOT_P99, 2 }, { "E2E p50", SB_MET_E2E_P50, 1 },
		{ "E2E p99", SB_MET_E2E_P99, 1 },   { "wait", SB_MET_WAIT_MEAN, 1 },
		{ "out tok/s", SB_MET_OUT_TOK_S, 1 }, { "req/s", SB_MET_REQ_S, 3 },
		{ "util", SB_MET_UTIL, 3 },         { "L=λW", SB_MET_L_LAW, 3 },
		{ "L obs", SB_MET_L_OBS, 3 },       { "goodput", SB_MET_GOODPUT, 3 },
	};
	int ncols = (int)(sizeof cols / sizeof cols[0]) - (has_slo ? 0 : 1);
	int ci = sw->replications > 1;
	int wd = ci ? 17 : 10;
	printf("%8s", w->mode == SB_MODE_RATE ? "rate" : "clients");
	for (int c = 0; c < ncols; c++) {
		/* "λ" takes two bytes but one column */
		int extra = strstr(cols[c].head, "λ") ? 1 : 0;
		printf(" %*s", wd + extra, cols[c].head);
	}
	printf("\n");
	for (int i = 0; i < sw->n_levels; i++) {
		const sb_sweep_level *l = &sw->levels[i];
		printf("%8g", l->level);
		for (int c = 0; c < ncols; c++) {
			char buf[64];
			cell(buf, sizeof buf, l->mean[cols[c].m], l->half[cols[c].m],
			     cols[c].prec, ci);
			int extra = strstr(buf, "±") ? 1 : 0;
			printf(" %*s", wd + extra, buf);
		}
		if (sw->knee == i)
			printf("  <- knee");
		if (l->diverged || (l->overloaded && !bounded))
			printf("  (unstable)");
		else if (l->overloaded)
			printf("  (overloaded)");
		printf("\n");
	}
}

static void set_created(json_t *res)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	if (!sde)
		return;
	char *end;
	long long t = strtoll(sde, &end, 10);
	if (*sde == 0 || *end != 0 || t < 0)
		return;
	time_t tt = (time_t)t;
	struct tm tm;
	char buf[32];
	if (gmtime_r(&tt, &tm) && strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
		json_object_set_new(res, "created", json_string(buf));
}

static json_t *build_json(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			  const sb_sweep *sw, const char *scen_name, int with_reqs,
			  json_t *plan)
{
	json_t *target = json_object();
	json_object_set_new(target, "simulator", json_string("sbsim " SB_VERSION));
	json_object_set_new(target, "model", sb_model_to_json(m));
	json_object_set_new(target, "service_mode",
			    json_string(o->service_mode ? "independent" : "engine"));
	if (o->service_mode) {
		char buf[128];
		sb_dist_format(&o->service, buf, sizeof buf);
		json_object_set_new(target, "service", json_string(buf));
	}
	if (scen_name)
		json_object_set_new(target, "scenario", json_string(scen_name));
	json_t *res = sb_results_new("simulated", target, w);
	if (!res)
		return NULL;
	set_created(res);
	json_t *sim = json_object();
	json_object_set_new(sim, "replications", json_integer(sw->replications));
	json_object_set_new(sim, "seed", json_integer((json_int_t)w->seed));
	json_object_set_new(sim, "capacity_req_s",
			    isfinite(sw->capacity) ? json_real(sw->capacity) : json_null());
	json_object_set_new(sim, "warmup_s", json_real(o->warmup_s));
	if (sw->knee >= 0) {
		json_t *k = json_object();
		json_object_set_new(k, "level", json_real(sw->levels[sw->knee].level));
		json_object_set_new(k, "reason", json_string(sw->knee_reason));
		json_object_set_new(sim, "knee", k);
	} else {
		json_object_set_new(sim, "knee", json_null());
	}
	if (plan)
		json_object_set_new(sim, "plan", plan);
	json_object_set_new(res, "simulation", sim);
	json_t *levels = json_object_get(res, "levels");
	for (int i = 0; i < sw->n_levels; i++) {
		const sb_sweep_level *l = &sw->levels[i];
		json_t *reqs = NULL;
		if (with_reqs && l->n_reps > 0) {
			reqs = json_array();
			const sb_sim_level *r0 = &l->reps[0];
			for (size_t j = 0; j < r0->n_recs; j++) {
				const sb_sim_rec *x = &r0->recs[j];
				sb_reqrec rr = {
					.id = x->id, .t_scheduled_s = x->t_sched_s,
					.t_sent_s = x->t_sched_s, .t_done_s = x->t_done_s,
					.ttft_ms = x->ttft_ms, .e2e_ms = x->e2e_ms,
					.wait_ms = x->wait_ms, .prompt_tokens = x->prompt_tokens,
					.output_tokens = x->output_tokens,
					.err_class = x->rejected ? "rejected" : NULL,
					.err_msg = x->rejected ? "queue full (max_queue reached)" : NULL,
				};
				json_array_append_new(reqs, sb_reqrec_to_json(&rr, NULL));
			}
		}
		if (sb_results_add_level(res, &l->summary, reqs) < 0) {
			json_decref(res);
			return NULL;
		}
		json_t *lj = json_array_get(levels, json_array_size(levels) - 1);
		json_object_set_new(lj, "utilization", json_real(l->mean[SB_MET_UTIL]));
		long rej = 0;
		json_t *seeds = json_array();
		for (int r = 0; r < l->n_reps; r++) {
			rej += l->reps[r].rejected;
			json_array_append_new(seeds, json_integer((json_int_t)l->reps[r].seed));
		}
		json_object_set_new(lj, "rejected", json_integer(rej));
		json_object_set_new(lj, "overloaded", json_boolean(l->overloaded));
		json_object_set_new(lj, "diverged", json_boolean(l->diverged));
		json_object_set_new(lj, "knee", json_boolean(sw->knee == i));
		json_object_set_new(lj, "seeds", seeds);
		if (sw->replications > 1) {
			json_t *ci = json_object();
			for (int k = 0; k < SB_MET_N; k++) {
				json_t *pair = json_array();
				double mu = l->mean[k], h = l->half[k];
				if (!isfinite(mu) || !isfinite(h)) {
					json_decref(pair);
					continue;
				}
				json_array_append_new(pair, json_real(mu - h));
				json_array_append_new(pair, json_real(mu + h));
				json_object_set_new(ci, sb_metric_name((sb_metric)k), pair);
			}
			json_object_set_new(lj, "ci95", ci);
		}
	}
	return res;
}

/* sbsim --compare: the measured file's own arrivals and lengths through the
 * model (validate/compare.h); prints the side-by-side table. Returns 0 when the
 * comparison ran, 2 with a message in e on bad input. */
static int run_compare(const sb_model *m, const char **val, sb_error *e)
{
	sb_results meas;
	if (sb_results_load(val[O_CMP], &meas, e) < 0) {
		sb_error_prefix(e, "--compare");
		return 2;
	}
	sb_compare_opts o;
	sb_compare_opts_init(&o);
	long lv;
	if (val[O_SEED]) {
		if (sb_parse_long(val[O_SEED], 0, 0x7fffffffL, &lv, "--seed", e) < 0)
			goto bad;
		o.seed = (unsigned long)lv;
	}
	if (val[O_REPS]) {
		if (sb_parse_long(val[O_REPS], 1, 10000, &lv, "--replications", e) < 0)
			goto bad;
		o.replications = (int)lv;
	}
	o.no_noise = val[O_NONOISE] != NULL || o.no_noise;
	sb_comparison c;
	if (sb_compare_run(m, &meas, &o, &c, e) < 0) {
		sb_error_prefix(e, "--compare %s", val[O_CMP]);
		goto bad;
	}
	printf("sbsim: model \"%s\" against %s\n", m->name, val[O_CMP]);
	int rc = sb_compare_report(stdout, &c, 0) < 0 ? 1 : 0;
	sb_compare_goals g;
	sb_compare_goals_init(&g);
	sb_compare_report_goals(stdout, &c, &g);
	if (val[O_JSON] && sb_json_write_file(val[O_JSON], c.simulated, e) < 0) {
		fprintf(stderr, "sbsim: %s\n", e->msg);
		rc = 1;
	}
	sb_comparison_fini(&c);
	sb_results_fini(&meas);
	return rc;
bad:
	sb_results_fini(&meas);
	return 2;
}

int main(int argc, char **argv)
{
	const char *val[O_N] = { 0 };
	int seen[O_N] = { 0 };
	int rc = 0;
	sb_error err = { "" };
	sb_model model;
	sb_scenario sc;
	sb_sweep sw;
	sb_sim_opts o;
	sb_workload w;
	json_t *plan = NULL;
	int have_model = 0, have_sc = 0, have_sw = 0;
	memset(&sc, 0, sizeof sc);
	memset(&sw, 0, sizeof sw);
	sb_sim_opts_init(&o);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("sbsim %s\n", SB_VERSION);
			return 0;
		}
	}
	if (parse_args(argc, argv, val, seen) < 0)
		return 2;
	if (seen[O_RATE] && seen[O_CONC]) {
		fprintf(stderr, "sbsim: give --rate (open loop) or --concurrency (closed loop), not both\n");
		return 2;
	}

	sb_workload_init(&w);
	w.requests = 2000;
	int reps = 1;
	if (val[O_SCEN]) {
		if (sb_scenario_load(val[O_SCEN], &sc, &err) < 0)
			FAIL("%s", err.msg);
		have_sc = 1;
		w = sc.w;
		if (sc.replications > 0)
			reps = sc.replications;
		o.warmup_s = sc.warmup_s;
		if (sc.service_mode) {
			o.service_mode = 1;
			o.service = sc.service;
		}
	} else if (seen[O_CHECK]) {
		FAIL("--check needs --scenario FILE");
	}

	sb_model_init(&model);
	have_model = 1;
	const char *mf = val[O_MODEL] ? val[O_MODEL] : (have_sc && sc.model_file[0] ? sc.model_file : NULL);
	if (mf) {
		sb_model_fini(&model);
		sb_model_init(&model);
		if (sb_model_load(mf, &model, &err) < 0)
			FAIL("%s: %s", val[O_MODEL] ? "--model-file" : "scenario model_file", err.msg);
	} else {
		if (sb_model_default(&model, &err) < 0) {
			fprintf(stderr, "sbsim: the embedded default model is broken: %s\n", err.msg);
			rc = 1;
			goto out;
		}
	}
	if (have_sc) {
		if (sc.slots > 0)
			model.slots = sc.slots;
		if (sc.max_queue != LONG_MIN)
			model.max_queue = sc.max_queue;
		if (sc.batch_tokens != LONG_MIN)
			model.batch_tokens = sc.batch_tokens;
	}

	long lv;
	double dv;
	if (val[O_SLOTS]) {
		if (sb_parse_long(val[O_SLOTS], 1, 4096, &lv, "--slots", &err) < 0)
			FAIL("%s", err.msg);
		model.slots = (int)lv;
	}
	if (val[O_CMP]) {
		for (int k = 0; k < O_N; k++) {
			if (seen[k] && k != O_CMP && k != O_MODEL && k != O_SLOTS && k != O_SEED &&
			    k != O_REPS && k != O_NONOISE && k != O_JSON)
				FAIL("--compare replays the measured workload; it takes only "
				     "--model-file, --slots, --seed, --replications, --no-noise and --json "
				     "(not --%s)", flags[k].name);
		}
		rc = run_compare(&model, val, &err);
		if (rc == 2)
			FAIL("%s", err.msg);
		goto out;
	}
	if (val[O_MAXQ]) {
		if (sb_parse_long(val[O_MAXQ], -1, 100000000, &lv, "--max-queue", &err) < 0)
			FAIL("%s (-1 means unbounded)", err.msg);
		model.max_queue = lv;
	}
	if (val[O_BATCH]) {
		if (sb_parse_long(val[O_BATCH], -1, 100000000, &lv, "--batch-tokens", &err) < 0)
			FAIL("%s", err.msg);
		model.batch_tokens = lv;
	}
	if (val[O_RATE] || val[O_CONC]) {
		double *lvls = NULL;
		size_t n = 0;
		int israte = val[O_RATE] != NULL;
		if (sb_parse_double_list(israte ? val[O_RATE] : val[O_CONC],
					 israte ? 1e-9 : 1, israte ? 1e9 : 1e6, &lvls, &n,
					 israte ? "--rate" : "--concurrency", &err) < 0)
			FAIL("%s", err.msg);
		if (n > SB_WORKLOAD_MAX_LEVELS) {
			free(lvls);
			FAIL("%s: %zu levels, at most %d", israte ? "--rate" : "--concurrency", n,
			     SB_WORKLOAD_MAX_LEVELS);
		}
		for (size_t i = 0; i < n; i++) {
			if (!israte && lvls[i] != floor(lvls[i])) {
				double bad = lvls[i];
				free(lvls);
				FAIL("--concurrency: '%g' is not a whole number of clients", bad);
			}
			w.levels[i] = lvls[i];
		}
		w.n_levels = (int)n;
		w.mode = israte ? SB_MODE_RATE : SB_MODE_CONCURRENCY;
		free(lvls);
	} else if (!have_sc) {
		FAIL("say what load to simulate: --rate R[,R...] (open loop) or --concurrency C[,C...] (closed loop), or --scenario FILE");
	}
	if (val[O_ARRIVAL] && sb_arrival_parse(val[O_ARRIVAL], &w.arrival, &err) < 0)
		FAIL("--arrival: %s", err.msg);
	if (val[O_ARRCV]) {
		if (sb_parse_double(val[O_ARRCV], 1e-3, 100, &w.arrival_cv, "--arrival-cv", &err) < 0)
			FAIL("%s", err.msg);
	}
	if (val[O_BURSTY]) {
		if (val[O_ARRIVAL] || val[O_ARRCV])
			FAIL("--bursty CV is short for --arrival gamma --arrival-cv CV; give one or the other");
		if (sb_parse_double(val[O_BURSTY], 1e-3, 100, &w.arrival_cv, "--bursty", &err) < 0)
			FAIL("%s", err.msg);
		w.arrival = SB_ARRIVAL_GAMMA;
	}
	if (val[O_THINK] && sb_dist_parse(val[O_THINK], &w.think_s, "--think", &err) < 0)
		FAIL("%s", err.msg);
	if (val[O_IN] && sb_dist_parse(val[O_IN], &w.input_len, "--input-len", &err) < 0)
		FAIL("%s", err.msg);
	if (val[O_OUT] && sb_dist_parse(val[O_OUT], &w.output_len, "--output-len", &err) < 0)
		FAIL("%s", err.msg);
	if (val[O_IN] && sb_dist_is_det(&w.input_len) &&
	    (w.input_len.a < 1 || w.input_len.a != floor(w.input_len.a) || w.input_len.a > 1e7))
		FAIL("--input-len: '%s' must be a whole number of tokens from 1 to 10000000", val[O_IN]);
	if (val[O_OUT] && sb_dist_is_det(&w.output_len) &&
	    (w.output_len.a < 1 || w.output_len.a != floor(w.output_len.a) || w.output_len.a > 1e7))
		FAIL("--output-len: '%s' must be a whole number of tokens from 1 to 10000000", val[O_OUT]);
	if (val[O_REQ]) {
		if (sb_parse_long(val[O_REQ], 1, 1000000000000L, &w.requests, "--requests", &err) < 0)
			FAIL("%s", err.msg);
	}
	if (val[O_DUR]) {
		if (sb_parse_double(val[O_DUR], 1e-6, 1e12, &w.duration_s, "--duration-s", &err) < 0)
			FAIL("%s", err.msg);
	}
	if (val[O_WARM]) {
		if (sb_parse_long(val[O_WARM], 0, 1000000000L, &w.warmup, "--warmup", &err) < 0)
			FAIL("%s", err.msg);
	}
	if (val[O_WARMS]) {
		if (sb_parse_double(val[O_WARMS], 0, 1e12, &o.warmup_s, "--warmup-s", &err) < 0)
			FAIL("%s", err.msg);
	}
	if (val[O_SEED]) {
		if (sb_parse_long(val[O_SEED], 0, 4294967295L, &lv, "--seed", &err) < 0)
			FAIL("%s", err.msg);
		w.seed = (unsigned long)lv;
	}
	if (val[O_REPS]) {
		if (sb_parse_long(val[O_REPS], 1, 10000, &lv, "--replications", &err) < 0)
			FAIL("%s", err.msg);
		reps = (int)lv;
	}
	if (val[O_SERVICE]) {
		if (sb_dist_parse(val[O_SERVICE], &o.service, "--service", &err) < 0)
			FAIL("%s", err.msg);
		if (!(sb_dist_mean(&o.service) > 0))
			FAIL("--service: '%s' has mean %g s; the mean service time must be > 0",
			     val[O_SERVICE], sb_dist_mean(&o.service));
		o.service_mode = 1;
	}
	o.no_noise = seen[O_NONOISE];
	if (val[O_QCAP]) {
		if (sb_parse_long(val[O_QCAP], 1, 100000000, &o.queue_cap, "--queue-cap", &err) < 0)
			FAIL("%s", err.msg);
	}
	if (val[O_SLOT]) {
		if (sb_parse_double(val[O_SLOT], 1e-9, 1e12, &w.slo.ttft_ms, "--slo-ttft-ms", &err) < 0)
			FAIL("%s", err.msg);
	}
	if (val[O_SLOP]) {
		if (sb_parse_double(val[O_SLOP], 1e-9, 1e12, &w.slo.tpot_ms, "--slo-tpot-ms", &err) < 0)
			FAIL("%s", err.msg);
	}
	if (val[O_SLOPCT]) {
		if (sb_parse_double(val[O_SLOPCT], 1, 99.99, &w.slo.percentile, "--slo-percentile", &err) < 0)
			FAIL("%s", err.msg);
	}
	int max_slots = 256;
	if (val[O_MAXSLOTS]) {
		if (sb_parse_long(val[O_MAXSLOTS], 1, 4096, &lv, "--max-slots", &err) < 0)
			FAIL("%s", err.msg);
		max_slots = (int)lv;
	}
	if (sb_workload_validate(&w, &err) < 0)
		FAIL("%s", err.msg);
	if (sb_model_validate(&model, &err) < 0)
		FAIL("model: %s", err.msg);
	if (seen[O_PLAN]) {
		if (!(w.slo.ttft_ms > 0) && !(w.slo.tpot_ms > 0))
			FAIL("--plan needs an SLO: --slo-ttft-ms and/or --slo-tpot-ms");
		if (w.mode != SB_MODE_RATE)
			FAIL("--plan works on open-loop traffic: give --rate R");
	}
	o.keep_records = seen[O_JSONREQ];
	(void)dv;

	/* ---- run ---- */
	char dbuf[3][96];
	sb_dist_format(&w.input_len, dbuf[0], sizeof dbuf[0]);
	sb_dist_format(&w.output_len, dbuf[1], sizeof dbuf[1]);
	printf("sbsim: model \"%s\"\n", model.name);
	if (have_sc)
		printf("scenario: %s%s%s\n", sc.name, sc.description[0] ? " — " : "", sc.description);
	/* Bounded time: at ~1.5M simulated requests/s, refuse a run that asks
	 * for more than SB_MAX_WORK requests in all (levels x replications).
	 * By duration, a level completes at most capacity x duration. */
	{
		double per_level = (double)w.requests;
		if (w.duration_s > 0) {
			double mu = NAN;
			if (sb_sim_capacity(&model, &o, &w, &mu, &err) < 0 || !isfinite(mu))
				mu = 1e6;
			per_level = mu * w.duration_s;
		}
		double work = (per_level + (double)w.warmup) * (double)w.n_levels * (double)reps;
		if (work > SB_MAX_WORK)
			FAIL("this run would simulate about %.3g requests (%d level%s x %d "
			     "replication%s x %.3g); the limit is %.0g (about 20 minutes): lower "
			     "--requests, --duration-s or --replications",
			     work, w.n_levels, w.n_levels > 1 ? "s" : "", reps, reps > 1 ? "s" : "",
			     per_level, SB_MAX_WORK);
	}
	if (o.service_mode) {
		sb_dist_format(&o.service, dbuf[2], sizeof dbuf[2]);
		printf("server: %d slots, independent service %s s (M/G/c, no batching; TTFT = response time)",
		       model.slots, dbuf[2]);
	} else {
		printf("server: %d slots, batch_tokens %ld, overhead %.1f ms", model.slots,
		       model.batch_tokens, model.overhead_ms);
		if (model.overhead_per_token_ms > 0)
			printf(" + %.4g ms per prompt token", model.overhead_per_token_ms);
	}
	if (model.max_queue >= 0)
		printf(", max_queue %ld\n", model.max_queue);
	else
		printf(", queue unbounded\n");
	if (w.mode == SB_MODE_RATE) {
		char cv[48] = "";
		if (w.arrival == SB_ARRIVAL_GAMMA)
			snprintf(cv, sizeof cv, ", cv %g", w.arrival_cv);
		printf("load: open loop, %s arrivals%s", sb_arrival_name(w.arrival), cv);
	} else {
		sb_dist_format(&w.think_s, dbuf[2], sizeof dbuf[2]);
		printf("load: closed loop, think %s s", dbuf[2]);
	}
	if (!o.service_mode)
		printf(", input %s / output %s tokens", dbuf[0], dbuf[1]);
	if (w.duration_s > 0)
		printf(", %g s per level", w.duration_s);
	else
		printf(", %ld requests per level", w.requests);
	printf(" (+%ld warm-up), seed %lu", w.warmup, w.seed);
	if (reps > 1)
		printf(", %d replications (± = 95%% CI)", reps);
	printf("\n");

	if (sb_sweep_run(&model, &o, &w, reps, &sw, &err) < 0) {
		fprintf(stderr, "sbsim: %s\n", err.msg);
		rc = err.msg[0] && strstr(err.msg, "out of memory") ? 1 : 2;
		goto out;
	}
	have_sw = 1;
	if (isfinite(sw.capacity))
		printf("capacity μ ≈ %.3f req/s (%s)\n", sw.capacity,
		       o.service_mode ? "slots / mean service time"
				      : "saturated closed-loop simulation");
	printf("times in ms%s\n\n",
	       w.slo.ttft_ms > 0 || w.slo.tpot_ms > 0 ? "; goodput = requests meeting the SLO per second" : "");
	int has_slo = w.slo.ttft_ms > 0 || w.slo.tpot_ms > 0;
	print_table(&sw, &w, has_slo, model.max_queue >= 0);
	printf("\n");
	for (int i = 0; i < sw.n_levels; i++) {
		const sb_sweep_level *l = &sw.levels[i];
		if (l->overloaded && model.max_queue >= 0)
			printf("rate %g: offered load λ=%.3f ≥ capacity μ≈%.3f req/s; the bounded queue "
			       "(max_queue %ld) turns the excess away\n",
			       l->level, l->level, sw.capacity, model.max_queue);
		else if (l->overloaded)
			printf("rate %g: queue grows without bound: λ=%.3f ≥ capacity μ≈%.3f req/s "
			       "(run bounded: up to %ld waiting; its figures describe a transient, not a steady state)\n",
			       l->level, l->level, sw.capacity, l->max_waiting);
		else if (l->diverged)
			printf("rate %g: queue grows without bound: the queue reached %ld waiting "
			       "(λ=%.3f vs capacity μ≈%.3f req/s); run stopped early\n",
			       l->level, l->max_waiting, l->level, sw.capacity);
		long rej = 0, tot = 0;
		for (int r = 0; r < l->n_reps; r++) {
			rej += l->reps[r].rejected;
			tot += l->reps[r].sum.requests_ok + l->reps[r].sum.requests_failed;
		}
		if (rej > 0)
			printf("level %g: %ld of %ld requests rejected (max_queue %ld)\n", l->level,
			       rej, tot, model.max_queue);
	}
	if (sw.knee >= 0)
		printf("knee: level %g — %s\n", sw.levels[sw.knee].level, sw.knee_reason);
	else
		printf("knee: none within the sweep (p99 TTFT never reaches %gx the lowest p99 below it%s)\n",
		       SB_KNEE_MIN_RATIO,
		       has_slo ? ", SLO met at every level" : "");

	if (seen[O_PLAN]) {
		int best = -1;
		double rmax = 0;
		double pct = w.slo.percentile > 0 ? w.slo.percentile : 99;
		printf("\nplan (SLO at p%g:", pct);
		if (w.slo.ttft_ms > 0)
			printf(" TTFT <= %g ms", w.slo.ttft_ms);
		if (w.slo.tpot_ms > 0)
			printf(" TPOT <= %g ms", w.slo.tpot_ms);
		printf("):\n");
		if (sb_plan_min_slots(&model, &o, &w, w.levels[0], reps, max_slots, &best, &err) < 0) {
			fprintf(stderr, "sbsim: --plan: %s\n", err.msg);
			rc = 1;
			goto out;
		}
		if (best > 0)
			printf("  (a) fewest slots meeting the SLO at %g req/s: %d\n", w.levels[0], best);
		else
			printf("  (a) no slot count up to %d meets the SLO at %g req/s\n", max_slots,
			       w.levels[0]);
		if (sb_plan_max_rate(&model, &o, &w, reps, &rmax, &err) < 0) {
			fprintf(stderr, "sbsim: --plan: %s\n", err.msg);
			rc = 1;
			goto out;
		}
		if (rmax > 0)
			printf("  (b) highest rate meeting the SLO with %d slots: %.3f req/s\n",
			       model.slots, rmax);
		else
			printf("  (b) with %d slots no rate meets the SLO\n", model.slots);
		plan = json_object();
		json_object_set_new(plan, "rate", json_real(w.levels[0]));
		json_object_set_new(plan, "min_slots", best > 0 ? json_integer(best) : json_null());
		json_object_set_new(plan, "slots", json_integer(model.slots));
		json_object_set_new(plan, "max_rate_req_s", json_real(rmax));
	}

	if (val[O_JSON]) {
		json_t *res = build_json(&model, &o, &w, &sw, have_sc ? sc.name : NULL,
					 seen[O_JSONREQ], plan);
		plan = NULL;
		if (!res) {
			fprintf(stderr, "sbsim: out of memory building the results\n");
			rc = 1;
			goto out;
		}
		int wr = sb_json_write_file(val[O_JSON], res, &err);
		json_decref(res);
		if (wr < 0) {
			fprintf(stderr, "sbsim: --json: %s\n", err.msg);
			rc = 1;
			goto out;
		}
	}
	if (seen[O_CHECK]) {
		char buf[8192];
		int nf = sb_scenario_check(&sc, &sw, buf, sizeof buf);
		if (nf > 0) {
			printf("\ncheck: %d of %d expectations FAILED:\n%s", nf, sc.n_expect, buf);
			rc = 1;
		} else {
			printf("\ncheck: all %d expectations met\n", sc.n_expect);
		}
	}
out:
	json_decref(plan);
	if (have_sw)
		sb_sweep_fini(&sw);
	if (have_sc)
		sb_scenario_fini(&sc);
	if (have_model)
		sb_model_fini(&model);
	return rc;
}
