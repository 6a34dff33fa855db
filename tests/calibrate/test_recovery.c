/* test_recovery.c — calibration recovers known coefficients from data that
 * sbsim simulated with them.
 *
 * usage: test_recovery SBSIM TRUTH-MODEL.json
 *
 * Data: sbsim runs single-client levels at four prompt lengths (prefill,
 * TPOT against context) and a closed-loop sweep through the slot count and
 * past it (decode per batch size, slot inference, admission delay), with
 * per-request records and fixed seeds: the same data on every run.
 *
 * Criterion: each fitted coefficient lies within TWICE its reported 95%
 * half-width of the truth (about 3.9 standard errors). For a calibrator
 * without bias the chance that any of the eight checked coefficients misses
 * is about 8 x 1e-4 for an arbitrary seed (the seeds are fixed, so the test
 * is deterministic); a bias of more than two half-widths (here 0.2-0.5% on
 * the step times) fails it. The intervals must also be useful: a relative
 * half-width below 5% for the step times, prefill cost and overhead, below
 * 25% for the small KV and attention terms.
 * Coefficients without a statistical interval are checked against what
 * limits them: the admission delay within one decode step (launches are
 * quantised to step boundaries) and inside the range the queued launches
 * bracket, overhead_sd within 4 standard errors of a
 * sample standard deviation from 100 single-client requests (0.3 ms).
 * The truth splits no group of requests sent together (split_prob 0): the
 * fitted share must be 0 with an interval from 0. Then the same truth with
 * split_prob 0.3 and split_prob_crowded 0.7 simulates 20 short levels at
 * concurrency 2, 10 at 4 and 25 at 5 (each starts with requests sent
 * together to an idle engine; at 5 one waits for a slot): each exact
 * binomial 95% interval must hold its truth and be narrower than +-0.12. Last, a
 * truth whose prefill costs mostly its step base and whose first tokens
 * reach the client with 2 ms of jitter splits nothing: the fit may count at
 * most 5% (a threshold of TTFT / 2m alone counted 23%). And a per-slot
 * truth measured with requests pinned to slots (pinned_case), and one
 * whose slots stay held 40 ms after each last token (release_case). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"
#include "../check.h"
#include "core/model.h"
#include "runcmd.h"
#include "simdata.h"
#include "core/results.h"

static void within_ci(const json_t *coefs, const char *name, double truth, double max_rel)
{
	const json_t *c = json_object_get(coefs, name);
	const json_t *ci = json_object_get(c, "ci95");
	double v = json_number_value(json_object_get(c, "value"));
	double lo = json_number_value(json_array_get(ci, 0));
	double hi = json_number_value(json_array_get(ci, 1));
	if (!json_is_number(json_array_get(ci, 0)) || !json_is_number(json_array_get(ci, 1))) {
		fprintf(stderr, "%s: no confidence interval reported\n", name);
		check_failures++;
		return;
	}
	double half = (hi - lo) / 2;
	int ok = fabs(v - truth) <= 2 * half;
	int narrow = half <= max_rel * fabs(truth);
	fprintf(stderr, "%-18s truth %-12.6g fitted %-12.6g 95%% CI [%.6g, %.6g]%s%s\n", name,
		truth, v, lo, hi, ok ? "" : "  <-- off by more than 2 half-widths",
		narrow ? "" : "  <-- interval too wide");
	if (!ok || !narrow)
		check_failures++;
}

static int simulate(const char *sbsim, const char *truth, const char *dir, char **files)
{
	return cal_test_simulate(sbsim, truth, dir, files, 0);
}

/* The fitted split probability's (NAME's) interval holds `truth` and is at
 * most 0.24 wide. */
static void split_within(const json_t *coefs, const char *name, double truth)
{
	const json_t *c = json_object_get(coefs, name);
	const json_t *ci = json_object_get(c, "ci95");
	double v = json_number_value(json_object_get(c, "value"));
	double lo = json_number_value(json_array_get(ci, 0));
	double hi = json_number_value(json_array_get(ci, 1));
	int ok = json_is_number(json_array_get(ci, 0)) && lo <= truth && truth <= hi &&
		 hi - lo <= 0.24;
	fprintf(stderr, "%-18s truth %-12.6g fitted %-12.6g 95%% CI [%.4g, %.4g]%s\n", name,
		truth, v, lo, hi, ok ? "" : "  <-- truth outside or too wide");
	if (!ok)
		check_failures++;
}

/* Short closed-loop levels (20 at concurrency 2, 10 at 4 and 25 at 5 on 4
 * slots, each starting with requests sent together to an idle engine) from
 * `truth`, calibrated with the single-client files[0..3]; the fitted
 * split_prob and split_prob_crowded must hold `want` and `want_crowded` in
 * their intervals (split_within), or with max_value >= 0 be at most that. */
static void split_case(const char *sbsim, const char *truth, const char *dir, char **files,
		       double want, double want_crowded, double max_value)
{
	char sweep[4096], levels[192] = "";
	snprintf(sweep, sizeof(sweep), "%s/split.json", dir);
	for (int i = 0; i < 55; i++)
		strcat(levels, i ? (i < 20 ? ",2" : i < 30 ? ",4" : ",5") : "2");
	char *sp[] = { (char *)sbsim, "--model-file", (char *)truth, "--concurrency", levels,
		       "--input-len", "256", "--output-len", "64", "--requests", "12",
		       "--warmup", "0", "--seed", "11", "--json", sweep, "--json-requests", NULL };
	int rc = run_cmd(sp, NULL);
	CHECK(rc == 0);
	sb_results res[5];
	sb_calib_input in[5];
	size_t n = 0;
	sb_error e;
	for (size_t i = 0; rc == 0 && i < 5; i++) {
		if (sb_results_load(i < 4 ? files[i] : sweep, &res[n], &e) < 0) {
			fprintf(stderr, "%s\n", e.msg);
			check_failures++;
			break;
		}
		in[n].name = i < 4 ? files[i] : sweep;
		in[n].res = &res[n];
		n++;
	}
	if (n == 5) {
		sb_calib_opts o;
		sb_calib_opts_init(&o);
		o.slots = 4;
		sb_model m;
		if (sb_calibrate_fit(in, n, &o, &m, &e) < 0) {
			fprintf(stderr, "calibration of %s failed: %s\n", truth, e.msg);
			check_failures++;
		} else {
			const json_t *coefs = json_object_get(m.fit, "coefficients");
			if (max_value < 0) {
				split_within(coefs, "split_prob", want);
				split_within(coefs, "split_prob_crowded", want_crowded);
			} else {
				fprintf(stderr, "%-18s truth %-12.6g fitted %g, crowded %g "
						"(allowed: up to %g)\n", "split_prob", want,
					m.split_prob, m.split_prob_crowded, max_value);
				CHECK(m.split_prob <= max_value);
				CHECK(m.split_prob_crowded <= max_value);
			}
			sb_model_fini(&m);
		}
	}
	for (size_t i = 0; i < n; i++)
		sb_results_fini(&res[i]);
	unlink(sweep);
}

/* Writes t (changed by the caller) as DIR/NAME for sbsim. */
static const char *write_truth(const sb_model *t, const char *dir, const char *name,
			       char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	json_t *tj = sb_model_to_json(t);
	CHECK(tj && json_dump_file(tj, path, 0) == 0);
	json_decref(tj);
	return path;
}

/* Runs sbsim on TRUTH for one pinned part (closed loop at B clients pinned
 * with stride k, prompts of `in` tokens) into DIR/NAME; 0 or -1. */
static int pinned_part(const char *sbsim, const char *truth, const char *path, int B, int k,
		       const char *in, const char *out, int waves)
{
	char bs[16], ks[16], ns[16];
	snprintf(bs, sizeof(bs), "%d", B);
	snprintf(ks, sizeof(ks), "%d", k);
	snprintf(ns, sizeof(ns), "%d", waves * B); /* whole waves, as the plan sends */
	char *argv[] = { (char *)sbsim, "--model-file", (char *)truth, "--concurrency", bs,
			 "--pin-slots", ks, "--input-len", (char *)in, "--output-len",
			 (char *)out, "--requests", ns, "--warmup", "0", "--seed", bs,
			 "--json", (char *)path, "--json-requests", NULL };
	return run_cmd(argv, NULL) == 0 ? 0 : -1;
}

/* A per-slot truth whose decode passes jump from one sequence to two (a
 * kernel change, as measured on the local target) and whose context costs
 * more per token in larger passes, measured as calibrate --url's plan does:
 * levels B = 2..4 pinned to slots 0..B-1 at 32- and 384-token prompts, and
 * two requests pinned to slots 0 and 2, beside the single-client files and
 * the (unpinned) sweep. Each pinned decode_ms(B) must lie within twice its
 * 95% half-width of the truth (half-width below 5%), each decode_kv(B)
 * within four standard errors, and the layout must come out per-slot. */
static void pinned_case(const char *sbsim, sb_model *t, const char *dir, char **files, size_t n0)
{
	static const double dec[4] = { 5.0, 12.0, 13.0, 13.5 }, kv[4] = { 2e-4, 3e-4, 3e-4, 6e-4 };
	t->kv_cache = SB_KV_PER_SLOT;
	t->n_decode = t->n_decode_kv = 4;
	for (int i = 0; i < 4; i++) {
		t->decode[i] = (sb_decode_point){ i + 1, dec[i] };
		t->decode_kv[i] = (sb_decode_point){ i + 1, kv[i] };
	}
	t->per_kv_token_ms = kv[0];
	char tp[4096];
	write_truth(t, dir, "truth-pinned.json", tp, sizeof(tp));
	static char paths[8][4096];
	size_t n = 0;
	int ok = simulate(sbsim, tp, dir, files) == 0;
	for (int B = 2; ok && B <= 4; B++) {
		snprintf(paths[n], 4096, "%s/pin-%d-short.json", dir, B);
		ok = pinned_part(sbsim, tp, paths[n++], B, 1, "32", "32", 12) == 0;
		snprintf(paths[n], 4096, "%s/pin-%d-long.json", dir, B);
		ok = ok && pinned_part(sbsim, tp, paths[n++], B, 1, "384", "48", 6) == 0;
	}
	snprintf(paths[n], 4096, "%s/pin-0-2.json", dir);
	ok = ok && pinned_part(sbsim, tp, paths[n++], 2, 2, "32", "32", 10) == 0;
	sb_results res[16];
	sb_calib_input in[16];
	sb_error e;
	size_t m = 0;
	for (size_t i = 0; ok && i < n0 + n; i++, m++) {
		const char *f = i < n0 ? files[i] : paths[i - n0];
		ok = sb_results_load(f, &res[i], &e) == 0;
		in[i] = (sb_calib_input){ f, &res[i] };
	}
	sb_model fit;
	sb_calib_opts o;
	sb_calib_opts_init(&o);
	o.slots = 4;
	if (!ok || sb_calibrate_fit(in, m, &o, &fit, &e) < 0) {
		fprintf(stderr, "pinned case: %s\n", ok ? e.msg : "simulating or loading failed");
		check_failures++;
		m = ok ? m : 0;
	} else {
		const json_t *coefs = json_object_get(fit.fit, "coefficients");
		const json_t *tab = json_object_get(json_object_get(fit.fit, "pinned"), "table");
		for (int B = 2; B <= 4; B++) {
			char key[32];
			snprintf(key, sizeof(key), "decode_ms[%d]", B);
			within_ci(coefs, key, dec[B - 1], 0.05);
			const json_t *row = json_array_get(tab, (size_t)B - 2);
			double v = json_number_value(json_object_get(row, "decode_kv"));
			double se = json_number_value(json_object_get(row, "decode_kv_se"));
			fprintf(stderr, "%-18s truth %-12.6g fitted %-12.6g se %.3g\n", "decode_kv", kv[B - 1],
				v, se);
			CHECK(fabs(v - kv[B - 1]) <= 4 * se);
		}
		CHECK(fit.kv_cache == SB_KV_PER_SLOT);
		sb_model_fini(&fit);
	}
	for (size_t i = 0; i < m; i++)
		sb_results_fini(&res[i]);
	for (size_t i = 0; i < n; i++)
		unlink(paths[i]);
	unlink(tp);
}

/* The base truth t's coefficients as fitted from m: each within twice its
 * 95% half-width, admit_delay within one step and its bracket, overhead_sd
 * within 0.3 ms, no split. */
static void check_base_fit(const sb_model *t, const sb_model *m)
{
	const json_t *coefs = json_object_get(m->fit, "coefficients");
	const json_t *sl = json_object_get(m->fit, "slots");
	CHECK(m->slots == t->slots);
	CHECK(!strcmp(json_string_value(json_object_get(sl, "confidence")), "high"));
	within_ci(coefs, "decode_ms[1]", sb_model_decode_ms(t, 1), 0.05);
	within_ci(coefs, "decode_ms[2]", sb_model_decode_ms(t, 2), 0.05);
	within_ci(coefs, "decode_ms[4]", sb_model_decode_ms(t, 4), 0.05);
	within_ci(coefs, "per_kv_token", t->per_kv_token_ms, 0.25);
	within_ci(coefs, "per_prefill_token", t->per_prefill_token_ms, 0.05);
	within_ci(coefs, "per_prefill_attn", t->per_prefill_attn_ms, 0.25);
	/* without server timings the intercept is split with prefill_base =
	 * decode_ms(1); the truth model follows that convention */
	within_ci(coefs, "overhead_ms", t->overhead_ms + t->prefill_base_ms - sb_model_decode_ms(t, 1),
		  0.2);
	within_ci(coefs, "noise_cv", t->noise_cv, 0.25);
	/* prefill steps scatter with their own cv, told apart from the
	 * overhead by the four prompt lengths */
	within_ci(coefs, "prefill_cv", t->noise_prefill_cv, 0.5);
	double quantum = sb_model_decode_ms(t, t->slots - 1);
	fprintf(stderr, "%-18s truth %-12.6g fitted %.6g (allowed: one step, %.3g ms)\n",
		"admit_delay_ms", t->admit_delay_ms, m->admit_delay_ms, quantum);
	CHECK(fabs(m->admit_delay_ms - t->admit_delay_ms) <= quantum);
	/* and the range the launches bracket holds the truth */
	const json_t *ar = json_object_get(json_object_get(coefs, "admit_delay_ms"), "ci95");
	double alo = json_number_value(json_array_get(ar, 0));
	double ahi = json_number_value(json_array_get(ar, 1));
	fprintf(stderr, "%-18s bracketed range [%.4g, %.4g]\n", "admit_delay_ms", alo, ahi);
	CHECK(alo <= t->admit_delay_ms && t->admit_delay_ms <= ahi);
	fprintf(stderr, "%-18s truth %-12.6g fitted %.6g (allowed: 0.3 ms)\n", "overhead_sd_ms",
		t->overhead_sd_ms, m->overhead_sd_ms);
	CHECK(fabs(m->overhead_sd_ms - t->overhead_sd_ms) <= 0.3);
	CHECK(m->n_decode == 3 && m->batch_tokens == t->batch_tokens);
	split_within(coefs, "split_prob", 0);
	CHECK(m->split_prob == 0 && m->split_prob_crowded == 0);
}

/* The base case: the n files sbsim simulates from the truth file (model t)
 * into dir, calibrated with the slot count inferred, give back t's
 * coefficients. Returns 0, or -1 (message printed) when the files cannot be
 * made, loaded or fitted. */
static int base_case(const char *sbsim, const char *truth, const sb_model *t, const char *dir,
		     char **files, size_t n)
{
	sb_error e;
	int sim_ok = simulate(sbsim, truth, dir, files) == 0;
	sb_results *res = calloc(n, sizeof(*res));
	sb_calib_input *in = calloc(n, sizeof(*in));
	size_t n_loaded = 0;
	int rc = sim_ok && res && in ? 0 : -1;
	for (; rc == 0 && n_loaded < n; n_loaded++) {
		const char *f = files[n_loaded];
		if ((rc = sb_results_load(f, &res[n_loaded], &e)) < 0) {
			fprintf(stderr, "%s\n", e.msg);
			break;
		}
		in[n_loaded] = (sb_calib_input){ f, &res[n_loaded] };
	}
	sb_calib_opts o;
	sb_calib_opts_init(&o); /* slots inferred, not given */
	sb_model m;
	if (rc == 0 && (rc = sb_calibrate_fit(in, n, &o, &m, &e)) < 0)
		fprintf(stderr, "calibration failed: %s\n", e.msg);
	if (rc == 0) {
		check_base_fit(t, &m);
		sb_model_fini(&m);
	}
	for (size_t i = 0; i < n_loaded; i++)
		sb_results_fini(&res[i]);
	free(res);
	free(in);
	return rc;
}

/* The split cases, from truth t (changed): 30% of the requests sent
 * together split, 70% when more came than the slots; then a server whose
 * steps cost mostly their base, with 2 ms of first-token jitter, where none
 * may count as split. */
static void split_cases(const char *sbsim, sb_model *t, const char *dir, char **files)
{
	char tp[4096];
	t->split_prob = 0.3;
	t->split_prob_crowded = 0.7;
	split_case(sbsim, write_truth(t, dir, "truth-split.json", tp, sizeof(tp)), dir, files,
		   0.3, 0.7, -1);
	unlink(tp);
	/* a server whose steps cost mostly their base (prefill of 256 tokens
	 * 16 ms, of 4 x 256 in one step 19 ms) and whose first tokens reach
	 * the client with 2 ms of jitter: requests prefilled together arrive
	 * up to ~8 ms apart, under half a prefill step; none may count as
	 * split (a share of TTFT / 2m, 2.4 ms at m = 4, would count a third) */
	t->split_prob = t->split_prob_crowded = 0;
	t->overhead_ms = 2.0;
	t->overhead_sd_ms = 2.0;
	t->prefill_base_ms = 15.0;
	for (int i = 0; i < t->n_decode; i++) /* without server timings calibrate puts */
		t->decode[i].ms += 10.0;      /* the base at decode_ms(1): 15 ms */
	t->per_prefill_token_ms = 0.004;
	t->per_prefill_attn_ms = 0;
	write_truth(t, dir, "truth-jitter.json", tp, sizeof(tp));
	if (simulate(sbsim, tp, dir, files) == 0)
		split_case(sbsim, tp, dir, files, 0, 0, 0.05);
	else
		check_failures++;
	unlink(tp);
}

/* The end-of-request cost: truth t (changed) holds each slot 40 ms after
 * its last token; three runs of 1-4 clients on its 4 slots (records) and a
 * single-client run at another prompt length. release_ms[4]'s interval
 * (Student t over the levels' per-request medians) must hold the truth,
 * within 1 us of float rounding (the simulated gap is exact, so the
 * interval may have zero width), and the model must carry it. */
static void release_case(const char *sbsim, sb_model *t, const char *dir)
{
	char tp[4096];
	static char paths[4][4096];
	t->release[0] = (sb_decode_point){ 1, 40.0 };
	t->n_release = 1;
	write_truth(t, dir, "truth-release.json", tp, sizeof(tp));
	static const char *const seeds[3] = { "11", "12", "13" };
	sb_results res[4];
	sb_calib_input in[4];
	size_t n = 0;
	sb_error e;
	for (size_t i = 0; i < 4; i++) {
		snprintf(paths[i], sizeof paths[i], "%s/release-%zu.json", dir, i);
		char *cl[] = { (char *)sbsim, "--model-file", tp, "--concurrency", "1,2,3,4",
			       "--input-len", "256", "--output-len", "128", "--requests", "200",
			       "--seed", (char *)seeds[i % 3], "--json", paths[i], "--json-requests",
			       NULL };
		char *c1[] = { (char *)sbsim, "--model-file", tp, "--concurrency", "1",
			       "--input-len", "2048", "--output-len", "64", "--requests", "100",
			       "--seed", "5", "--json", paths[i], "--json-requests", NULL };
		if (run_cmd(i < 3 ? cl : c1, NULL) != 0 ||
		    sb_results_load(paths[i], &res[n], &e) < 0) {
			fprintf(stderr, "release case: could not make %s\n", paths[i]);
			check_failures++;
			break;
		}
		in[n] = (sb_calib_input){ paths[i], &res[n] };
		n++;
	}
	sb_calib_opts o;
	sb_calib_opts_init(&o);
	o.slots = 4;
	sb_model m;
	if (n == 4 && sb_calibrate_fit(in, n, &o, &m, &e) == 0) {
		const json_t *c = json_object_get(json_object_get(m.fit, "coefficients"),
						  "release_ms[4]");
		const json_t *ci = json_object_get(c, "ci95");
		double lo = json_number_value(json_array_get(ci, 0));
		double hi = json_number_value(json_array_get(ci, 1));
		fprintf(stderr, "%-18s truth 40 fitted %.6g 95%% CI [%.6g, %.6g]\n", "release_ms[4]",
			json_number_value(json_object_get(c, "value")), lo, hi);
		CHECK(json_is_number(json_array_get(ci, 0)) && lo - 1e-3 <= 40 && 40 <= hi + 1e-3);
		CHECK(m.n_release == 1 && fabs(sb_model_release_ms(&m, 4) - 40) <= hi - lo + 1e-3);
		sb_model_fini(&m);
	} else {
		fprintf(stderr, "release case: calibration failed: %s\n", e.msg);
		check_failures++;
	}
	for (size_t i = 0; i < n; i++) {
		sb_results_fini(&res[i]);
		unlink(paths[i]);
	}
	unlink(tp);
	t->n_release = 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SBSIM TRUTH-MODEL.json\n", argv[0]);
		return 2;
	}
	sb_error e;
	sb_model t;
	if (sb_model_load(argv[2], &t, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	char dir[] = "/tmp/sb-recovery.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	static char paths[5][4096];
	char *files[5] = { paths[0], paths[1], paths[2], paths[3], paths[4] };
	size_t n = 5;
	if (base_case(argv[1], argv[2], &t, dir, files, n) < 0)
		return 1;
	split_cases(argv[1], &t, dir, files);
	sb_model_fini(&t);
	if (sb_model_load(argv[2], &t, &e) < 0)
		return 1;
	pinned_case(argv[1], &t, dir, files, n);
	release_case(argv[1], &t, dir);
	for (size_t i = 0; i < n; i++)
		unlink(files[i]);
	rmdir(dir);
	sb_model_fini(&t);
	CHECK_DONE();
}
