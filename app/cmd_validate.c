/* cmd_validate.c — `servebench validate`: measure a live server (or take a
 * measured results file), replay the same requests through the simulator
 * with a calibrated model, print measured against predicted side by side,
 * and check the accuracy goals.
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
#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/model.h"
#include "core/parse.h"
#include "core/results.h"
#include "core/workload.h"
#include "measure/progress.h"
#include "measure/driver.h"
#include "measure/run.h"
#include "validate/compare.h"
#include "sim/sim.h"
#include "validate/speed.h"

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

/* Parses a level list into w (or leaves it empty for "none"). */
static int parse_levels(const char *s, int rate, sb_workload *w, const char *what, sb_error *e)
{
	w->n_levels = 0;
	if (!strcmp(s, "none"))
		return 0;
	double *lv = NULL;
	size_t n = 0;
	if (sb_parse_double_list(s, rate ? 1e-6 : 1, rate ? 1e6 : 100000, &lv, &n, what, e) < 0)
		return -EINVAL;
	if (n > SB_WORKLOAD_MAX_LEVELS) {
		free(lv);
		return sb_error_set(e, "%s: at most %d levels (got %zu)", what,
				    SB_WORKLOAD_MAX_LEVELS, n);
	}
	for (size_t k = 0; k < n; k++) {
		if (!rate && lv[k] != floor(lv[k])) {
			sb_error_set(e, "%s: '%g' is not a whole number of streams", what, lv[k]);
			free(lv);
			return -EINVAL;
		}
		w->levels[k] = lv[k];
	}
	w->n_levels = (int)n;
	free(lv);
	return 0;
}

static int parse_len(const char *s, sb_dist *d, const char *what, sb_error *e)
{
	long v;
	if (sb_parse_long(s, 1, 1000000, &v, what, e) < 0)
		return -EINVAL;
	*d = (sb_dist){ SB_DIST_DET, (double)v, 0 };
	return 0;
}

/* The seed of part k of a run with seed `seed`, hashed: unrelated to every
 * small seed, so two validations with seeds 1000 and 2000 never send each
 * other's prompts (llama.cpp keeps prompts in a RAM cache and answers a
 * repeated one in milliseconds). */
static unsigned long sub_seed(unsigned long seed, unsigned long k)
{
	return (unsigned long)(sb_seed_mix((uint64_t)seed ^ ((uint64_t)k << 32)) & 0xffffffffUL);
}

/* A probe of the server's speed (speed.h); a failed one is noted and
 * skipped: it only feeds the speed trace and the adjusted prediction. */
static void take_probe(sb_speed *sp, const sb_run_config *rc, const sb_workload *w, long n,
		       unsigned long seed, double t_s, size_t before)
{
	sb_error e = { { 0 } };
	if (sb_speed_probe(sp, rc, w, n, seed, t_s, before, &e) < 0)
		fprintf(stderr, PROG ": note: a one-client speed probe failed (%s)\n", e.msg);
}

/* Makes a one-level run's workload object describe its part: all of w's
 * levels, and the validation's seed (each level's prompts are hashed from
 * it). */
static void set_levels(json_t *wj, const sb_workload *w, unsigned long seed)
{
	json_t *a = json_array();
	for (int k = 0; k < w->n_levels; k++)
		json_array_append_new(a, json_real(w->levels[k]));
	json_object_set_new(wj, "levels", a);
	json_object_set_new(wj, "seed", json_integer((json_int_t)seed));
}

/* Runs one measurement (closed or open loop). Returns the run's status
 * code (0, or a negative errno) and the document in *out. */
static int measure(const sb_run_config *base, const sb_workload *w, int quiet, json_t **out,
		   sb_error *e)
{
	sb_run_config c = *base;
	c.workload = *w;
	int tty = isatty(STDERR_FILENO) && !quiet;
	c.progress = tty ? progress_cb : NULL;
	int rc = sb_run_execute(&c, out, e);
	if (tty)
		fprintf(stderr, "\r\033[K");
	return rc;
}

int sb_cmd_validate(int argc, char **argv)
{
	const char *model_file = NULL, *measured = NULL, *conc = NULL, *rates = NULL;
	const char *json_out = NULL, *meas_out = NULL, *sim_out = NULL;
	long slots = 0, seed = -1, reps = 20;
	int quiet = 0, verbose = 0, forecast = 1, have_nreq = 0;
	long probe_n = 3;
	sb_compare_goals goals;
	sb_compare_goals_init(&goals);
	sb_run_config rc0;
	sb_run_config_init(&rc0);
	sb_workload w;
	sb_workload_init(&w);
	w.requests = 32;
	w.output_len = (sb_dist){ SB_DIST_DET, 128, 0 };
	sb_error e = { { 0 } };

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		int m, r = 0;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--quiet")) { quiet = 1; continue; }
		if (!strcmp(a, "--verbose")) { verbose = 1; continue; }
		if (!strcmp(a, "--no-forecast")) { forecast = 0; continue; }
		if (!strcmp(a, "--no-drift-check")) { probe_n = 0; continue; }
		if (!strcmp(a, "--no-knee")) { goals.require_knee = 0; continue; }
		if (!strcmp(a, "--no-cache-prompt")) { rc0.cache_prompt = 0; continue; }
#define FLAG(name) (v = sb_flag_value(argc, argv, &i, name, &m), m)
#define NEED(name) do { if (!v) { fprintf(stderr, PROG ": %s needs a value\n", name); return 2; } } while (0)
		if (FLAG("--model-file")) { NEED("--model-file"); model_file = v; }
		else if (FLAG("--url")) { NEED("--url"); rc0.url = v; }
		else if (FLAG("--model")) { NEED("--model"); rc0.model = v; }
		else if (FLAG("--measured")) { NEED("--measured"); measured = v; }
		else if (FLAG("--slots")) { NEED("--slots"); r = sb_parse_long(v, 1, 4096, &slots, "--slots", &e); }
		else if (FLAG("--concurrency")) { NEED("--concurrency"); conc = v; }
		else if (FLAG("--rates")) { NEED("--rates"); rates = v; }
		else if (FLAG("--num-requests")) {
			NEED("--num-requests");
			r = sb_parse_long(v, 1, 100000000, &w.requests, "--num-requests", &e);
			have_nreq = 1;
		} else if (FLAG("--input-len")) { NEED("--input-len"); r = parse_len(v, &w.input_len, "--input-len", &e); }
		else if (FLAG("--output-len")) { NEED("--output-len"); r = parse_len(v, &w.output_len, "--output-len", &e); }
		else if (FLAG("--warmup")) { NEED("--warmup"); r = sb_parse_long(v, 0, 1000000, &w.warmup, "--warmup", &e); }
		else if (FLAG("--seed")) { NEED("--seed"); r = sb_parse_long(v, 0, 4294967295L, &seed, "--seed", &e); }
		else if (FLAG("--probe")) { NEED("--probe"); r = sb_parse_long(v, 0, 1000, &probe_n, "--probe", &e); }
		else if (FLAG("--replications")) { NEED("--replications"); r = sb_parse_long(v, 1, 100000, &reps, "--replications", &e); }
		else if (FLAG("--goal-central")) { NEED("--goal-central"); r = sb_parse_double(v, 0, 1e6, &goals.central_pct, "--goal-central", &e); }
		else if (FLAG("--goal-tail")) { NEED("--goal-tail"); r = sb_parse_double(v, 0, 1e6, &goals.tail_pct, "--goal-tail", &e); }
		else if (FLAG("--json")) { NEED("--json"); json_out = v; }
		else if (FLAG("--out-measured")) { NEED("--out-measured"); meas_out = v; }
		else if (FLAG("--out-simulated")) { NEED("--out-simulated"); sim_out = v; }
		else if (FLAG("--api")) { NEED("--api"); r = sb_api_parse(v, &rc0.api, &e); }
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
	(void)have_nreq;
	if (!model_file) {
		fprintf(stderr, PROG ": --model-file is required (see servebench validate --help)\n");
		return 2;
	}
	if (!measured && (!rc0.url || !rc0.model)) {
		fprintf(stderr, PROG ": give --url URL --model NAME to measure, or --measured FILE\n");
		return 2;
	}
	if (measured && (rc0.url || conc || rates)) {
		fprintf(stderr, PROG ": --measured compares an existing file; it takes no --url, "
				"--concurrency or --rates\n");
		return 2;
	}
	sb_model model;
	if (sb_model_load(model_file, &model, &e) < 0) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		return 2;
	}
	if (sb_model_validate(&model, &e) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", model_file, e.msg);
		sb_model_fini(&model);
		return 2;
	}
	if (seed < 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (long)(((unsigned long)ts.tv_nsec ^ ((unsigned long)ts.tv_sec << 20) ^
			       (unsigned long)getpid()) & 0xffffffffUL);
	}
	w.seed = (unsigned long)seed;

	int status = 0;
	json_t *doc = NULL;
	sb_results meas;
	memset(&meas, 0, sizeof(meas));
	sb_comparison cmp;
	memset(&cmp, 0, sizeof(cmp));
	json_t *drift = NULL; /* how far one client's speed moved; NULL: not known */
	sb_speed speed;
	sb_speed_init(&speed);

	if (measured) {
		if (sb_results_load(measured, &meas, &e) < 0) {
			fprintf(stderr, PROG ": %s\n", e.msg);
			status = 2;
			goto out;
		}
		if (sb_speed_from_results(&speed, meas.root, &e) < 0)
			fprintf(stderr, PROG ": note: %s: %s; no speed figures\n", measured, e.msg);
	} else {
		int S = slots > 0 ? (int)slots : model.slots;
		if (slots > 0 && slots != model.slots)
			fprintf(stderr, PROG ": note: --slots %ld differs from the model's %d slots; "
					"the prediction uses the model's\n", slots, model.slots);
		sb_workload wc = w, wo = w;
		wc.mode = SB_MODE_CONCURRENCY;
		wo.mode = SB_MODE_RATE;
		/* fresh prompts for the open-loop part: with the closed loop's
		 * seed it would resend the same prompts, which llama.cpp then
		 * finds in its prompt cache (a different workload) */
		wo.seed = sub_seed(w.seed, 1);
		if (conc) {
			if (parse_levels(conc, 0, &wc, "--concurrency", &e) < 0)
				goto usage_fail;
		} else {
			int n = 2 * S > SB_WORKLOAD_MAX_LEVELS ? SB_WORKLOAD_MAX_LEVELS : 2 * S;
			for (int k = 0; k < n; k++)
				wc.levels[k] = k + 1;
			wc.n_levels = n;
		}
		if (rates) {
			if (parse_levels(rates, 1, &wo, "--rates", &e) < 0)
				goto usage_fail;
		} else {
			sb_sim_opts so;
			sb_sim_opts_init(&so);
			double mu = 0;
			if (sb_sim_capacity(&model, &so, &w, &mu, &e) < 0 || !(mu > 0)) {
				fprintf(stderr, PROG ": cannot predict the capacity for the default rates "
						"(%s); give --rates\n", e.msg);
				status = 2;
				goto out;
			}
			static const double frac[] = { 0.3, 0.5, 0.7, 0.9 };
			for (int k = 0; k < 4; k++)
				wo.levels[k] = round(frac[k] * mu * 1000) / 1000;
			wo.n_levels = 4;
			if (!quiet)
				printf("predicted capacity %.3f req/s: open-loop rates %g, %g, %g, %g req/s\n",
				       mu, wo.levels[0], wo.levels[1], wo.levels[2], wo.levels[3]);
		}
		if (wc.n_levels == 0 && wo.n_levels == 0) {
			fprintf(stderr, PROG ": no levels to measure (--concurrency none --rates none)\n");
			status = 2;
			goto out;
		}
		if ((wc.n_levels && sb_workload_validate(&wc, &e) < 0) ||
		    (wo.n_levels && sb_workload_validate(&wo, &e) < 0))
			goto usage_fail;

		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		signal(SIGPIPE, SIG_IGN);
		rc0.stop = &stop_signal;

		/* Level by level, each with its own prompts, and a one-client
		 * probe of the server's speed before each level and after the
		 * last (speed.h). */
		const sb_workload *runs[2] = { wc.n_levels ? &wc : NULL, wo.n_levels ? &wo : NULL };
		double t_start = sb_driver_now();
		size_t li = 0;
		int cut = 0;
		for (int k = 0; k < 2 && !cut; k++) {
			if (!runs[k])
				continue;
			json_t *wjson = NULL; /* the part's workload, all its levels */
			for (int l = 0; l < runs[k]->n_levels && !cut; l++, li++) {
				if (probe_n > 0 && !stop_signal)
					take_probe(&speed, &rc0, &w, probe_n, sub_seed(w.seed, 1000 + li),
						   sb_driver_now() - t_start, li);
				sb_workload one = *runs[k];
				one.levels[0] = runs[k]->levels[l];
				one.n_levels = 1;
				one.seed = sub_seed(w.seed, 16 + li);
				json_t *part = NULL;
				int r = measure(&rc0, &one, quiet, &part, &e);
				if (!part) {
					fprintf(stderr, PROG ": %s\n", e.msg);
					status = r == -ECONNREFUSED ? 3 : (r == -EINVAL || r == -EIO) ? 2 : 1;
					if (!doc) {
						json_decref(wjson);
						goto out;
					}
					/* keep and compare the levels already measured */
					fprintf(stderr, PROG ": comparing the %zu level(s) measured "
							"before it\n", li);
					cut = 1;
					break;
				}
				if (!wjson) {
					wjson = json_deep_copy(json_object_get(part, "workload"));
					set_levels(wjson, runs[k], w.seed);
				}
				if (!doc) {
					doc = part;
					json_object_set(doc, "workload", wjson);
				} else {
					json_array_extend(json_object_get(doc, "levels"),
							  json_object_get(part, "levels"));
					json_decref(part);
					if (k == 1 && runs[0])
						json_object_set(doc, "workload_rate", wjson);
				}
				if (r == -EINTR || stop_signal) {
					fprintf(stderr, PROG ": interrupted; comparing what finished\n");
					status = 128 + (stop_signal ? (int)stop_signal : SIGINT);
					cut = 1;
				}
			}
			json_decref(wjson);
		}
		if (probe_n > 0 && !stop_signal && !cut)
			take_probe(&speed, &rc0, &w, probe_n, sub_seed(w.seed, 1000 + li),
				   sb_driver_now() - t_start, li);
		if (stop_signal && !status)
			status = 128 + (int)stop_signal;
		long failed = sb_run_failed_count(doc);
		if (failed > 0)
			fprintf(stderr, PROG ": %ld request(s) failed during the measurement; "
					"they are left out of the comparison\n", failed);
		if (speed.n_probes > 0)
			json_object_set(doc, "speed_probes", speed.probes);
		if (meas_out && sb_json_write_file(meas_out, doc, &e) < 0) {
			fprintf(stderr, PROG ": %s\n", e.msg);
			status = 1;
		}
		if (sb_results_from_json(doc, &meas, "measurement", &e) < 0) {
			fprintf(stderr, PROG ": %s\n", e.msg);
			status = 1;
			goto out;
		}
	}

	sb_compare_opts o;
	sb_compare_opts_init(&o);
	o.seed = (unsigned long)seed;
	o.replications = (int)reps;
	o.forecast = forecast;
	if (sb_compare_run(&model, &meas, &o, &cmp, &e) < 0) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		status = status ? status : 2;
		goto out;
	}
	if (sb_speed_analyse(&speed, &model, &meas, &cmp, &o, &e) < 0)
		fprintf(stderr, PROG ": note: the speed probes could not be predicted (%s)\n", e.msg);
	drift = sb_speed_drift(&speed);
	if (!quiet) {
		printf("model %s (%d slots) against %s\n", model.name, model.slots,
		       measured ? measured : rc0.url);
		sb_compare_report(stdout, &cmp, verbose);
		sb_speed_report(stdout, &speed, &cmp);
	} else {
		printf("median |error|: mean/p50 %.1f%%, p90/p99 %.1f%%, throughput %.1f%%\n",
		       cmp.mdape_central, cmp.mdape_tail, cmp.mdape_throughput);
		if (speed.analysed && speed.adj.n_levels > 0)
			printf("speed-adjusted (%zu levels): mean/p50 %.1f%%, p90/p99 %.1f%%\n",
			       speed.adj.n_levels, speed.adj.mdape_central, speed.adj.mdape_tail);
	}
	if (drift) {
		double dt = json_number_value(json_object_get(drift, "ttft_pct"));
		double dp = json_number_value(json_object_get(drift, "tpot_pct"));
		printf("server drift over %.0f s: one client's TTFT %.1f -> %.1f ms (%+.1f%%), "
		       "TPOT %.2f -> %.2f ms (%+.1f%%)%s\n",
		       json_number_value(json_object_get(drift, "seconds")),
		       json_number_value(json_object_get(drift, "ttft_ms_first")),
		       json_number_value(json_object_get(drift, "ttft_ms_last")), dt,
		       json_number_value(json_object_get(drift, "tpot_ms_first")),
		       json_number_value(json_object_get(drift, "tpot_ms_last")), dp,
		       fabs(dt) > 5 || fabs(dp) > 5
			       ? ": the server's own speed moved; errors of that size are not the model's"
			       : "");
	}
	if (json_out) {
		json_t *j = sb_comparison_to_json(&cmp);
		json_object_set_new(j, "model_file", json_string(model_file));
		json_object_set_new(j, "goals", json_pack("{s:f,s:f,s:b}", "central_pct",
							  goals.central_pct, "tail_pct", goals.tail_pct,
							  "require_knee", goals.require_knee));
		int met = sb_compare_check(&cmp, &goals, NULL, 0);
		json_object_set_new(j, "goals_met", json_boolean(met));
		if (drift)
			json_object_set(j, "server_drift", drift);
		json_t *sj = sb_speed_to_json(&speed, &cmp);
		if (sj)
			json_object_set_new(j, "server_speed", sj);
		if (!j || sb_json_write_file(json_out, j, &e) < 0) {
			fprintf(stderr, PROG ": %s\n", j ? e.msg : "out of memory");
			status = status ? status : 1;
		}
		json_decref(j);
	}
	if (sim_out && sb_json_write_file(sim_out, cmp.simulated, &e) < 0) {
		fprintf(stderr, PROG ": %s\n", e.msg);
		status = status ? status : 1;
	}
	if (!sb_compare_report_goals(stdout, &cmp, &goals))
		status = status ? status : 1;
	goto out;
usage_fail:
	fprintf(stderr, PROG ": %s\n", e.msg);
	status = 2;
out:
	sb_comparison_fini(&cmp);
	sb_results_fini(&meas);
	json_decref(doc);
	json_decref(drift);
	sb_speed_fini(&speed);
	sb_model_fini(&model);
	return status;
}
