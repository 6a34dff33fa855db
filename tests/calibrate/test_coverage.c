/* test_coverage.c — the honesty check of the error bars: do sbsim's 90%
 * intervals from a calibrated model's fit.covariance hold the truth about
 * as often as they say, for configurations the calibration never measured?
 *
 * usage: test_coverage SBSIM TRUTH-MODEL.json [CALIBRATIONS]
 *
 * CALIBRATIONS (default 60) times: sbsim simulates calibration data from
 * the truth model with the sizes `calibrate --url` uses (simdata.h, replica
 * i: its own seeds), calibrate fits a model (written to a file, read back
 * as sbsim reads it), and sbsim predicts, with parameter draws and
 * SB_SETUP_UNCERT_REPS replications, two configurations outside the data:
 *   A  8 slots at concurrency 8 (the data went up to 4 slots: decode_ms(8)
 *      is extrapolated from the table), 256 + 128 tokens;
 *   B  one client with 4096-token prompts (the data went up to 2048: two
 *      prefill steps), 64 output tokens.
 * The truth is the truth model's mean over TRUTH_REPS replications (its
 * standard error is far below the intervals' widths). For A's TPOT p50 and
 * B's TTFT p50 the test counts how often the truth lies in the 90%
 * interval, prints each, and asserts the pooled share (120 intervals) is
 * 80%..98%: with a true coverage of 90% the binomial standard error is 2.7
 * points, so the band reaches 3.7 below and 3 above. The two separately
 * are reported, not asserted: A's intervals are conservative (the decode
 * table's reported standard errors are 2-6 times the spread of the fitted
 * entries across calibrations, the fit's residuals holding the
 * interference's scatter), B's a little short (per_prefill_attn's reported
 * standard error is about 0.8 of its spread), docs/accuracy.md "Error bars".
 * Deterministic (fixed seeds). */
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
	long slots;
	double conc;
	const char *input, *output;
	long requests;
	sb_metric metric;
	const char *metric_name;
} config;

static const config configs[2] = {
	{ "A: 8 slots, concurrency 8", 8, 8, "256", "128", 100, SB_MET_TPOT_P50, "TPOT p50" },
	{ "B: 1 client, 4096-token prompts", 1, 1, "4096", "64", 30, SB_MET_TTFT_P50,
	  "TTFT p50" },
};

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

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SBSIM TRUTH-MODEL.json [CALIBRATIONS]\n", argv[0]);
		return 2;
	}
	int n_cal = argc > 3 ? atoi(argv[3]) : 60;
	char dir[] = "/tmp/sb-coverage.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	static char paths[5][4096];
	char *files[5] = { paths[0], paths[1], paths[2], paths[3], paths[4] };
	char model_path[4200];
	snprintf(model_path, sizeof model_path, "%s/model.json", dir);
	double truth[2], lo, hi;
	for (int k = 0; k < 2; k++) {
		if (predict(argv[2], &configs[k], TRUTH_REPS, 99, &truth[k], &lo, &hi) < 0)
			return 1;
		fprintf(stderr, "%s: truth %s %.4g ms\n", configs[k].name,
			configs[k].metric_name, truth[k]);
	}
	int hits[2] = { 0, 0 }, done = 0;
	double width[2] = { 0, 0 };
	for (int i = 1; i <= n_cal; i++) {
		if (cal_test_simulate(argv[1], argv[2], dir, files, i) < 0 ||
		    calibrate_files(files, model_path) < 0) {
			check_failures++;
			break;
		}
		for (int k = 0; k < 2; k++) {
			double mean;
			if (predict(model_path, &configs[k], 0, 1000 + i, &mean, &lo, &hi) < 0) {
				check_failures++;
				continue;
			}
			int in = truth[k] >= lo && truth[k] <= hi;
			hits[k] += in;
			width[k] += (hi - lo) / truth[k];
			if (!in)
				fprintf(stderr, "  calibration %d, %s: %.4g [%.4g, %.4g] misses %.4g\n",
					i, configs[k].metric_name, mean, lo, hi, truth[k]);
		}
		done++;
	}
	for (int k = 0; k < 2 && done > 0; k++)
		printf("coverage %s, %s: %d of %d 90%% intervals hold the truth (%.0f%%), mean "
		       "width %.1f%% of the truth\n", configs[k].name, configs[k].metric_name,
		       hits[k], done, 100.0 * hits[k] / done, 100 * width[k] / done);
	double pooled = done > 0 ? (double)(hits[0] + hits[1]) / (2 * done) : NAN;
	printf("coverage, both: %d of %d (%.1f%%)\n", hits[0] + hits[1], 2 * done, 100 * pooled);
	CHECK(pooled >= 0.80 && pooled <= 0.98);
	CHECK(done == n_cal);
	for (int i = 0; i < 5; i++)
		unlink(files[i]);
	if (!getenv("SB_KEEP")) unlink(model_path);
	rmdir(dir);
	CHECK_DONE();
}
