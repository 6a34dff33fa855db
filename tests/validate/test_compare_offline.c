/* test_compare_offline.c — sb_compare_run against a known truth.
 *
 * The "measurement" is itself a simulation of model M (records kept). Then:
 *  1. Replaying it with the same M must agree up to the simulator's own
 *     noise. The replay predicts each metric as the mean over R noise seeds
 *     with the same arrivals and lengths; the measured value is one more
 *     draw of that same distribution, so (measured - predicted) has sd
 *     sd_R * sqrt(1 + 1/R), where sd_R is the spread over the replications
 *     (reported by the comparison). Each metric must lie within 5 such sds
 *     (plus 1e-6 relative for rounding): a normal variable exceeds 5 sd with
 *     probability 6e-7, so 126 cells pass unless the replay is wrong. The
 *     seeds are fixed, so the outcome is reproducible, not a coin toss.
 *  2. A model whose decode steps are 2x slower must be flagged: TPOT errors
 *     near +100%, the goal check fails, and most TPOT cells lie > 5 sd out.
 *  3. Forecast intervals (central 95% of 200 fresh runs): a fresh run of
 *     the true model is inside in about 95% of cells (binomial sd ~2.5
 *     cells of 126; cells of one level are correlated, so we ask >= 80%);
 *     with the wrong model most TPOT/E2E/throughput cells fall outside
 *     (coverage < 60%).
 *  4. The simulated document round-trips through the results loader.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results.h"
#include "validate/compare.h"
#include "sim/sim.h"
#include "simdoc.h"
#include "../check.h"

static void workload(sb_workload *w, sb_mode mode)
{
	sb_workload_init(w);
	w->mode = mode;
	w->input_len = (sb_dist){ SB_DIST_DET, 256, 0 };
	w->output_len = (sb_dist){ SB_DIST_DET, 64, 0 };
	w->requests = 40;
	w->warmup = 0;
	w->seed = 7;
}

/* The report's text for c (malloc'd). */
static char *report_text(const sb_comparison *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	sb_compare_report(f, c, 0);
	fclose(f);
	return buf;
}

/* Counts cells with |meas - pred| > 5 sd (see above); returns the number of
 * finite cells in *n. */

static int count_outliers(const sb_comparison *c, int metric_lo, int metric_hi, int *n,
			  int verbose)
{
	int out = 0;
	*n = 0;
	for (size_t i = 0; i < c->n_levels; i++) {
		const sb_cmp_level *l = &c->levels[i];
		for (int k = metric_lo; k <= metric_hi; k++) {
			if (!isfinite(l->meas[k]) || !isfinite(l->pred[k]))
				continue;
			(*n)++;
			double sd = l->pred_sd[k] * sqrt(1.0 + 1.0 / c->replications);
			double tol = 5 * sd + 1e-6 * fabs(l->meas[k]);
			if (fabs(l->meas[k] - l->pred[k]) > tol) {
				out++;
				if (verbose)
					fprintf(stderr, "  %s %g %s: measured %g predicted %g sd %g\n",
						sb_mode_name(l->mode), l->level,
						sb_metric_key((sb_metric)k), l->meas[k], l->pred[k], sd);
			}
		}
	}
	return out;
}

/* The "measurement": model m simulated with records kept, closed loop at
 * 1..2S clients and open loop at 30/60/90% of capacity, in one document,
 * loaded into *meas. Returns 0, or -1 (checks failed) when it cannot be had. */
static int make_measured(const sb_model *m, sb_results *meas)
{
	sb_error e = { "" };
	sb_workload wc, wo;
	workload(&wc, SB_MODE_CONCURRENCY);
	double cl[] = { 1, 2, 3, 4, 5, 6, 8 };
	wc.n_levels = 7;
	memcpy(wc.levels, cl, sizeof(cl));
	workload(&wo, SB_MODE_RATE);
	sb_sim_opts so;
	sb_sim_opts_init(&so);
	double mu = 0;
	CHECK(sb_sim_capacity(m, &so, &wc, &mu, &e) == 0 && mu > 0);
	wo.n_levels = 3;
	wo.levels[0] = 0.3 * mu;
	wo.levels[1] = 0.6 * mu;
	wo.levels[2] = 0.9 * mu;

	json_t *dc = simdoc_make(m, &wc, 11);
	json_t *dopen = simdoc_make(m, &wo, 12);
	CHECK(dc && dopen);
	if (!dc || !dopen)
		return -1;
	/* one document with both modes */
	json_array_extend(json_object_get(dc, "levels"), json_object_get(dopen, "levels"));
	json_decref(dopen);
	int r = sb_results_from_json(dc, meas, "simdoc", &e);
	json_decref(dc);
	CHECK(r == 0);
	if (r < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return -1;
	}
	return 0;
}

/* 1. and 4.: the same model agrees within the noise, the forecast covers,
 * the counts line up, the simulated document loads back. Returns 0, or -1
 * (checks failed) when the comparison cannot be run. */
static int test_same_model(const sb_model *m, const sb_results *meas, const sb_compare_opts *o)
{
	sb_error e = { "" };
	sb_comparison c;
	int r = sb_compare_run(m, meas, o, &c, &e);
	CHECK(r == 0);
	if (r < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return -1;
	}
	sb_compare_report(stdout, &c, 0);
	int n = 0;
	int out = count_outliers(&c, 0, SB_MET_N - 1, &n, 1);
	printf("same model: %d of %d cells beyond 5 sd; forecast %ld/%ld inside\n", out, n,
	       c.fc_inside, c.fc_total);
	CHECK(n >= 10 * 12); /* every level compared */
	CHECK(out == 0);
	CHECK(c.fc_inside >= 0.80 * (double)c.fc_total);
	CHECK(c.knee_match[SB_MODE_CONCURRENCY] == 1);
	/* the level and request counts line up */
	CHECK(c.n_levels == 10);
	for (size_t i = 0; i < c.n_levels; i++) {
		CHECK(c.levels[i].replayed == 1);
		CHECK(c.levels[i].n_counted == 40);
		CHECK(c.levels[i].n_reqs == 40);
	}
	/* the simulated document loads back with the same levels */
	sb_results sim;
	r = sb_results_from_json(c.simulated, &sim, "simulated", &e);
	CHECK(r == 0);
	if (r == 0) {
		CHECK(!strcmp(sim.source, "simulated"));
		CHECK(sim.n_levels == 10);
		CHECK(sim.levels[3].n_reqs == 40);
		CHECK_NEAR(sim.levels[3].sum.ttft_ms.p50, c.levels[3].pred[SB_MET_TTFT_P50], 1e-9);
		sb_results_fini(&sim);
	}
	/* the right model: no note that the server's speed moved */
	char *txt = report_text(&c);
	CHECK(txt && !strstr(txt, "note: with one client"));
	free(txt);
	sb_comparison_fini(&c);
	return 0;
}

/* 2.: decode steps 2x slower than m's are flagged (errors, the goal check,
 * the forecast, the one-client TPOT note). */
static void test_slow_decode(const sb_model *m, const sb_results *meas, const sb_compare_opts *o)
{
	sb_error e = { "" };
	sb_comparison c;
	sb_model bad;
	sb_model_copy(&bad, m);
	for (int i = 0; i < bad.n_decode; i++)
		bad.decode[i].ms *= 2;
	int r = sb_compare_run(&bad, meas, o, &c, &e);
	CHECK(r == 0);
	if (r == 0) {
		int nt = 0;
		int out_t = count_outliers(&c, SB_MET_TPOT_MEAN, SB_MET_TPOT_P99, &nt, 0);
		printf("2x decode: TPOT central MdAPE %.1f%%, %d of %d TPOT cells beyond 5 sd; "
		       "forecast %ld/%ld inside\n",
		       c.mdape_quant[SB_QTY_TPOT][0], out_t, nt, c.fc_inside, c.fc_total);
		CHECK(c.mdape_quant[SB_QTY_TPOT][0] > 50);
		CHECK(c.mdape_quant[SB_QTY_E2E][0] > 30);
		CHECK(out_t >= nt * 9 / 10);
		CHECK(sb_compare_check(&c, NULL, NULL, 0) == 0);
		CHECK(c.fc_inside < 0.60 * (double)c.fc_total);
		/* one client's TPOT twice the measured: the note says so */
		char *txt = report_text(&c);
		const char *note = txt ? strstr(txt, "note: with one client the model's TPOT is ") : NULL;
		CHECK(note && strstr(note, "% above the measured one"));
		CHECK(txt && !strstr(txt, "model's TTFT is"));
		free(txt);
		sb_comparison_fini(&c);
	}
	sb_model_fini(&bad);
}

/* Prefill 20% slower than m's: the one-client TTFT note, and not the TPOT
 * one. */
static void test_slow_prefill(const sb_model *m, const sb_results *meas, const sb_compare_opts *o)
{
	sb_error e = { "" };
	sb_comparison c;
	sb_model bad;
	sb_model_copy(&bad, m);
	bad.per_prefill_token_ms *= 1.2;
	bad.prefill_base_ms *= 1.2;
	int r = sb_compare_run(&bad, meas, o, &c, &e);
	CHECK(r == 0);
	if (r == 0) {
		char *txt = report_text(&c);
		CHECK(txt && strstr(txt, "note: with one client the model's TTFT is "));
		CHECK(txt && !strstr(txt, "model's TPOT is"));
		free(txt);
		sb_comparison_fini(&c);
	}
	sb_model_fini(&bad);
}

int main(void)
{
	sb_model m;
	sb_error e = { "" };
	if (sb_model_default(&m, &e) < 0) {
		fprintf(stderr, "default model: %s\n", e.msg);
		return 1;
	}
	sb_results meas;
	if (make_measured(&m, &meas) < 0)
		CHECK_DONE();
	sb_compare_opts o;
	sb_compare_opts_init(&o);
	o.forecast = 1;
	if (test_same_model(&m, &meas, &o) < 0)
		CHECK_DONE();
	test_slow_decode(&m, &meas, &o);
	test_slow_prefill(&m, &meas, &o);
	sb_results_fini(&meas);
	sb_model_fini(&m);
	CHECK_DONE();
}
