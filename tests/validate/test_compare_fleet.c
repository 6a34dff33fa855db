/* test_compare_fleet.c — sb_compare_run on a fleet (validate/compare.h):
 * each replica's requests replayed on their own server.
 *
 * The "measured" fleet is two simulations of the default model, A and B
 * (different seeds), merged level by level into one document whose
 * records say "replica": 0 (A's) or 1 (B's) and whose target lists two
 * replicas. Deterministic replays (no_noise) make exact checks possible:
 *  1. replica 0's measured figures are exactly those of the comparison of
 *     A alone, replica 1's those of B alone, and the fleet-wide level
 *     counts both; open loop the predicted ones are exactly the same too
 *     (to 1e-9 relative: only the clock's origin may differ) — had the
 *     replicas shared one server, B's requests would queue with A's;
 *     closed loop a fleet is replayed open loop (2.), A alone closed
 *     loop, so there the predictions need not agree;
 *  2. closed-loop levels are replayed open loop at the measured send times
 *     (the field and the report say so);
 *  3. a model with 2x slower decode steps misses TPOT by > 50% on each
 *     replica; the comparison JSON has levels[].replicas.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results.h"
#include "sim/sim.h"
#include "simdoc.h"
#include "validate/compare.h"
#include "../check.h"

#define REQS 30

/* Documents A (seed 21) and B (seed 22) of w on m. */
static int make_pair(const sb_model *m, const sb_workload *w, json_t **a, json_t **b)
{
	*a = simdoc_make(m, w, 21);
	*b = simdoc_make(m, w, 22);
	CHECK(*a && *b);
	return *a && *b ? 0 : -1;
}

/* A new document: a's levels with b's records appended (ids shifted by
 * REQS), every record tagged with its replica, target.replicas of two. */
static json_t *merge(const json_t *a, const json_t *b, long slots)
{
	json_t *f = json_deep_copy(a);
	json_t *t = json_object_get(f, "target");
	json_t *reps = json_pack("[{s:s,s:I},{s:s,s:I}]", "url", "a", "slots", (json_int_t)slots,
				 "url", "b", "slots", (json_int_t)slots);
	json_object_set_new(t, "replicas", reps);
	size_t i;
	json_t *lv;
	json_array_foreach(json_object_get(f, "levels"), i, lv)
	{
		json_t *rs = json_object_get(lv, "requests"), *q;
		size_t j;
		json_array_foreach(rs, j, q)
			json_object_set_new(q, "replica", json_integer(0));
		json_t *lb = json_array_get(json_object_get(b, "levels"), i);
		json_array_foreach(json_object_get(lb, "requests"), j, q)
		{
			json_t *c = json_deep_copy(q);
			json_object_set_new(c, "id", json_integer(REQS + (json_int_t)j));
			json_object_set_new(c, "replica", json_integer(1));
			json_array_append_new(rs, c);
		}
	}
	return f;
}

static int compare_doc(const sb_model *m, json_t *doc, sb_comparison *c)
{
	sb_error e = { "" };
	sb_results r;
	sb_compare_opts o;
	sb_compare_opts_init(&o);
	o.no_noise = 1;
	int ret = sb_results_from_json(doc, &r, "doc", &e);
	if (ret == 0)
		ret = sb_compare_run(m, &r, &o, c, &e);
	if (ret < 0)
		fprintf(stderr, "compare: %s\n", e.msg);
	sb_results_fini(&r);
	CHECK(ret == 0);
	return ret;
}

static int rel_eq(double x, double y)
{
	return (isnan(x) && isnan(y)) || fabs(x - y) <= 1e-9 * fmax(1, fabs(y));
}

/* 1.: each replica of fleet f is the single comparison s of its own
 * records (the predictions too when pred). */
static void check_replica(const sb_comparison *f, const sb_comparison *s, size_t g, int pred)
{
	for (size_t i = 0; i < f->n_levels; i++) {
		const sb_cmp_level *rl = &f->levels[i].replicas[g], *sl = &s->levels[i];
		CHECK(f->levels[i].n_replicas == 2 && rl->n_counted == sl->n_counted);
		int same = 1;
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			sb_metric k = sb_compare_metrics[j];
			same &= rel_eq(rl->meas[k], sl->meas[k]) &&
				(!pred || rel_eq(rl->pred[k], sl->pred[k]));
		}
		CHECK(same);
		if (!same)
			fprintf(stderr, "level %zu replica %zu: TTFT p99 %g/%g, single %g/%g\n", i, g,
				rl->meas[SB_MET_TTFT_P99], rl->pred[SB_MET_TTFT_P99],
				sl->meas[SB_MET_TTFT_P99], sl->pred[SB_MET_TTFT_P99]);
	}
}

static void test_mode(const sb_model *m, sb_mode mode, const double *levels, int n)
{
	sb_workload w;
	sb_workload_init(&w);
	w.mode = mode;
	w.input_len = (sb_dist){ SB_DIST_DET, 256, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, 64, 0 };
	w.requests = REQS;
	w.warmup = 0;
	w.seed = 7;
	w.n_levels = n;
	memcpy(w.levels, levels, (size_t)n * sizeof(double));
	json_t *a, *b;
	if (make_pair(m, &w, &a, &b) < 0)
		return;
	json_t *f = merge(a, b, m->slots);
	sb_comparison cf, ca, cb;
	if (compare_doc(m, f, &cf) == 0 && compare_doc(m, a, &ca) == 0 &&
	    compare_doc(m, b, &cb) == 0) {
		check_replica(&cf, &ca, 0, mode == SB_MODE_RATE);
		check_replica(&cf, &cb, 1, mode == SB_MODE_RATE);
		for (size_t i = 0; i < cf.n_levels; i++) {
			CHECK(cf.levels[i].n_counted == 2 * REQS);
			CHECK(cf.levels[i].open_loop_replay == (mode == SB_MODE_CONCURRENCY));
		}
		json_t *j = sb_comparison_to_json(&cf);
		json_t *r1 = json_array_get(json_object_get(json_array_get(json_object_get(j, "levels"),
									     0), "replicas"), 1);
		CHECK(json_integer_value(json_object_get(r1, "replica")) == 1 &&
		      json_integer_value(json_object_get(r1, "requests")) == REQS);
		json_decref(j);
		sb_comparison_fini(&cf);
		sb_comparison_fini(&ca);
		sb_comparison_fini(&cb);
	}
	json_decref(f);
	json_decref(a);
	json_decref(b);
}

/* 2. and 3.: the report says how closed loop was replayed; a 2x slower
 * decode is flagged on each replica. */
static void test_report_and_slow(const sb_model *m)
{
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_CONCURRENCY;
	w.input_len = (sb_dist){ SB_DIST_DET, 128, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, 32, 0 };
	w.requests = REQS;
	w.warmup = 0;
	w.seed = 9;
	w.n_levels = 1;
	w.levels[0] = 2;
	json_t *a, *b;
	if (make_pair(m, &w, &a, &b) < 0)
		return;
	json_t *f = merge(a, b, m->slots);
	sb_model bad;
	sb_model_copy(&bad, m);
	for (int i = 0; i < bad.n_decode; i++)
		bad.decode[i].ms *= 2;
	sb_comparison c;
	if (compare_doc(&bad, f, &c) == 0) {
		for (size_t g = 0; g < 2; g++)
			CHECK(c.levels[0].replicas[g].err_pct[SB_MET_TPOT_MEAN] > 50);
		char *txt = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&txt, &len);
		CHECK(out && sb_compare_report(out, &c, 0) == 0);
		if (out)
			fclose(out);
		CHECK(txt && strstr(txt, "fleet of 2: each replica replayed OPEN LOOP") &&
		      strstr(txt, "replica 1 (30 req)"));
		free(txt);
		sb_comparison_fini(&c);
	}
	sb_model_fini(&bad);
	json_decref(f);
	json_decref(a);
	json_decref(b);
}

int main(void)
{
	sb_model m;
	sb_error e = { "" };
	if (sb_model_default(&m, &e) < 0) {
		fprintf(stderr, "default model: %s\n", e.msg);
		return 1;
	}
	double closed[] = { 1, 4, 8 }, open[] = { 2, 8 };
	test_mode(&m, SB_MODE_CONCURRENCY, closed, 3);
	test_mode(&m, SB_MODE_RATE, open, 2);
	test_report_and_slow(&m);
	sb_model_fini(&m);
	CHECK_DONE();
}
