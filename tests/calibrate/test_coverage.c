/* test_coverage.c — the honesty check of the error bars: do sbsim's 90%
 * intervals from a calibrated model's fit.covariance hold the truth about
 * as often as they say, for each configuration the calibration never
 * measured?
 *
 * usage: test_coverage SBSIM TRUTH-MODEL.json [CALIBRATIONS]
 *
 * CALIBRATIONS (default 100) times: sbsim simulates calibration data from
 * the truth model with the sizes `calibrate --url` uses (simdata.h, replica
 * i: its own seeds), calibrate fits a model (written to a file, read back
 * as sbsim reads it), and sbsim predicts, with parameter draws and
 * SB_SETUP_UNCERT_REPS replications, four configurations outside the data:
 *   A  8 slots at concurrency 8 (the data went up to 4 slots: decode_ms(8)
 *      is extrapolated from the table), 256 + 128 tokens, TPOT p50, the
 *      decode table's rule taken as exact (form_decode's spread left out:
 *      the truth extrapolates by the model's own rule);
 *   A+ the same with form_decode's spread (a table of 3 points gets the
 *      prior of calibrate/covariance.h): at least 80%, and its width is
 *      printed (on a truth of the model's own form it over-covers);
 *   B  one client with 4096-token prompts (the data went up to 2048: two
 *      prefill steps), 64 output tokens, TTFT p50;
 *   C  one client with 512-token prompts (between the measured 256 and
 *      1024), 64 output tokens, TTFT p50.
 * The interval is one for a run's figure (sim/sweep.h: the replications'
 * spread holds the calibration's uncertainty and the workload's randomness),
 * so the truth it must hold is one run of the truth model with the same
 * flags and a seed of its own (5000 + i), not the truth model's mean. The
 * test asserts, for each configuration separately, that 80%..98% of the
 * intervals hold it. With a true coverage of 90% and 100 calibrations the
 * chance of falling outside that band is 0.08% below and 0.03% above for
 * one configuration (binomial), 0.3% for any of them. It also prints
 * the mean prediction against the truth model's mean over TRUTH_REPS
 * replications (a bias shows there). Deterministic (fixed seeds). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "calibrate/calibrate.h"
#include "core/jsonfile.h"
#include "core/model.h"
#include "core/results.h"
#include "sim/setup.h"
#include "sim/sweep.h"
#include "simdata.h"

#define TRUTH_REPS 200

/* A configuration predicted: sbsim's flags and the metric checked. */
typedef struct config {
	const char *name;
	int exact_rule;        /* 1: predicted without form_decode's spread;
				  -1: with it, where the truth's rule is the
				  model's: coverage at least 80%, no upper end */
	long slots;
	double conc;
	const char *input, *output;
	long requests;
	sb_metric metric;
	const char *metric_name;
} config;

#define NCONF 4
static const config configs[NCONF] = {
	{ "A: 8 slots, concurrency 8", 1, 8, 8, "256", "128", 100, SB_MET_TPOT_P50, "TPOT p50" },
	{ "B: 1 client, 4096-token prompts", 0, 1, 1, "4096", "64", 30, SB_MET_TTFT_P50,
	  "TTFT p50" },
	{ "C: 1 client, 512-token prompts", 0, 1, 1, "512", "64", 30, SB_MET_TTFT_P50,
	  "TTFT p50" },
	{ "A+: A with the decode rule's prior", -1, 8, 8, "256", "128", 100, SB_MET_TPOT_P50,
	  "TPOT p50" },
};

/* A copy of the model file at path without form_decode in fit.covariance
 * (the decode rule taken as exact), at out. Returns 0 or -1. */
static int strip_form(const char *path, const char *out)
{
	sb_error e;
	json_t *m = sb_json_load_file(path, &e);
	json_t *cov = m ? json_object_get(json_object_get(m, "fit"), "covariance") : NULL;
	json_t *names = json_object_get(cov, "params"), *mx = json_object_get(cov, "matrix");
	size_t k = json_array_size(names), i;
	for (i = 0; i < k; i++)
		if (!strcmp(json_string_value(json_array_get(names, i)) ?: "", "form_decode"))
			break;
	if (i < k) {
		json_array_remove(names, i);
		json_array_remove(mx, i);
		for (size_t r = 0; r < json_array_size(mx); r++)
			json_array_remove(json_array_get(mx, r), i);
	}
	int rc = m && sb_json_write_file(out, m, &e) == 0 ? 0 : -1;
	json_decref(m);
	return rc;
}

/* Simulates configuration c from model_file: the level's mean and 90%
 * interval of c's metric (interval NaN without draws). reps <= 0: the
 * default. Returns 0 or -1 (message printed). */
static int predict(const char *model_file, const config *c, long reps, long seed,
		   double *mean, double *lo, double *hi)
{
	sb_setup_flags f;
	sb_setup_flags_init(&f);
	double lv = c->conc;
	f.model_file = model_file;
	f.concurrency = (sb_cli_list){ &lv, 1 };
	f.slots = c->slots;
	f.input_len = c->input;
	f.output_len = c->output;
	f.requests = c->requests;
	f.seed = seed;
	if (reps > 0)
		f.replications = reps;
	sb_setup s;
	sb_sweep sw;
	sb_error e;
	if (sb_setup_build(&f, &s, &e) < 0) {
		fprintf(stderr, "%s: %s\n", model_file, e.msg);
		return -1;
	}
	int r = sb_sweep_run(&s.model, &s.opts, &s.w, s.reps, &sw, &e);
	if (r == 0) {
		*mean = sw.levels[0].mean[c->metric];
		*lo = sw.levels[0].lo90[c->metric];
		*hi = sw.levels[0].hi90[c->metric];
		sb_sweep_fini(&sw);
	} else {
		fprintf(stderr, "%s: %s\n", model_file, e.msg);
	}
	sb_setup_fini(&s);
	return r == 0 ? 0 : -1;
}

/* Calibrates from the 5 files into model_path. Returns 0 or -1. */
static int calibrate_files(char **files, const char *model_path)
{
	sb_results res[5];
	sb_calib_input in[5];
	sb_error e;
	size_t n = 0;
	int rc = 0;
	for (; n < 5; n++) {
		if (sb_results_load(files[n], &res[n], &e) < 0) {
			fprintf(stderr, "%s\n", e.msg);
			rc = -1;
			break;
		}
		in[n] = (sb_calib_input){ files[n], &res[n] };
	}
	sb_calib_opts o;
	sb_calib_opts_init(&o);
	sb_model m;
	if (rc == 0 && sb_calibrate_fit(in, n, &o, &m, &e) < 0) {
		fprintf(stderr, "calibration failed: %s\n", e.msg);
		rc = -1;
	} else if (rc == 0) {
		json_t *j = sb_model_to_json(&m);
		rc = j && sb_json_write_file(model_path, j, &e) == 0 ? 0 : -1;
		json_decref(j);
		sb_model_fini(&m);
	}
	for (size_t i = 0; i < n; i++)
		sb_results_fini(&res[i]);
	return rc;
}

/* Calibration i's predictions of every configuration against one run of
 * the truth model each: hits and widths added, the means into pmean.
 * Returns 0 or -1. */
static int check_calibration(const char *truth_file, const char *model_path, int i, int *hits,
			     double *width, double *pmean)
{
	for (int k = 0; k < NCONF; k++) {
		const config *c = &configs[k];
		double mean, lo, hi, run, l1, h1;
		char exact[4200];
		snprintf(exact, sizeof exact, "%s.exact", model_path);
		if ((c->exact_rule > 0 && strip_form(model_path, exact) < 0) ||
		    predict(c->exact_rule > 0 ? exact : model_path, c, 0, 1000 + i, &mean, &lo, &hi) < 0 ||
		    predict(truth_file, c, 1, 5000 + i, &run, &l1, &h1) < 0)
			return -1;
		int in = run >= lo && run <= hi;
		hits[k] += in;
		width[k] += (hi - lo) / run;
		pmean[k] += mean;
		if (!in)
			fprintf(stderr, "  calibration %d, %s %s: %.4g [%.4g, %.4g] misses %.4g\n",
				i, c->name, c->metric_name, mean, lo, hi, run);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SBSIM TRUTH-MODEL.json [CALIBRATIONS]\n", argv[0]);
		return 2;
	}
	int n_cal = argc > 3 ? atoi(argv[3]) : 100;
	char dir[] = "/tmp/sb-coverage.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	static char paths[5][4096];
	char *files[5] = { paths[0], paths[1], paths[2], paths[3], paths[4] };
	char model_path[4200];
	snprintf(model_path, sizeof model_path, "%s/model.json", dir);
	double truth[NCONF], lo, hi;
	for (int k = 0; k < NCONF; k++) {
		if (predict(argv[2], &configs[k], TRUTH_REPS, 99, &truth[k], &lo, &hi) < 0)
			return 1;
		fprintf(stderr, "%s: truth model's mean %s %.4g ms\n", configs[k].name,
			configs[k].metric_name, truth[k]);
	}
	int hits[NCONF] = { 0 }, done = 0;
	double width[NCONF] = { 0 }, pmean[NCONF] = { 0 };
	for (int i = 1; i <= n_cal; i++) {
		if (cal_test_simulate(argv[1], argv[2], dir, files, i) < 0 ||
		    calibrate_files(files, model_path) < 0 ||
		    check_calibration(argv[2], model_path, i, hits, width, pmean) < 0) {
			check_failures++;
			break;
		}
		done++;
	}
	for (int k = 0; k < NCONF && done > 0; k++) {
		double cov = (double)hits[k] / done;
		printf("coverage %s, %s: %d of %d 90%% intervals hold a run of the truth (%.0f%%), "
		       "mean width %.1f%%; mean prediction %.4g ms, truth model's mean %.4g ms\n",
		       configs[k].name, configs[k].metric_name, hits[k], done, 100 * cov,
		       100 * width[k] / done, pmean[k] / done, truth[k]);
		CHECK(cov >= 0.80 && (configs[k].exact_rule < 0 || cov <= 0.98));
	}
	CHECK(done == n_cal);
	for (int i = 0; i < 5; i++)
		unlink(files[i]);
	if (!getenv("SB_KEEP")) {
		unlink(model_path);
		char exact[4200];
		snprintf(exact, sizeof exact, "%s.exact", model_path);
		unlink(exact);
	}
	rmdir(dir);
	CHECK_DONE();
}
