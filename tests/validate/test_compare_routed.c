/* test_compare_routed.c — a fleet's routed comparison (validate/compare.h):
 * the measured arrivals replayed through the simulated router.
 *
 * The "measured" file is a noise-free simulation of two replicas of the
 * default model behind round-robin (simdoc_make_fleet), with target.replicas
 * and target.route as `servebench run --url A --url B --route R` writes
 * them. Replayed without noise:
 *  1. through round-robin, open loop and closed loop, every routed level's
 *     every metric matches (|error| < 1e-6 %: the replay is the same
 *     simulation, only the clock's origin differs, so rounding alone);
 *  2. the same file claiming "random" routing: the router model is wrong,
 *     and the routed tail error shows it (> 10%, at a load where
 *     round-robin's queues are short and random's are not), while the
 *     per-replica comparison, which takes the measured routing as given,
 *     is unchanged;
 *  3. JSON "routed" {route, replicas, levels, summary} and the report's
 *     block; a fleet file without target.route has no routed comparison and
 *     the report says why; a route that is no route is an error naming it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results.h"
#include "sim/sim.h"
#include "simdoc.h"
#include "validate/compare.h"
#include "../check.h"

static int compare_doc(const sb_model *m, json_t *doc, sb_comparison *c, sb_error *e)
{
	sb_results r;
	sb_compare_opts o;
	sb_compare_opts_init(&o);
	o.no_noise = 1;
	int ret = sb_results_from_json(doc, &r, "doc", e);
	if (ret == 0)
		ret = sb_compare_run(m, &r, &o, c, e);
	sb_results_fini(&r);
	return ret;
}

static void workload(sb_workload *w, sb_mode mode, const double *levels, int n)
{
	sb_workload_init(w);
	w->mode = mode;
	w->input_len = (sb_dist){ SB_DIST_EXP, 200, 0 };
	w->output_len = (sb_dist){ SB_DIST_DET, 48, 0 };
	w->requests = 80;
	w->warmup = 0;
	w->seed = 11;
	w->n_levels = n;
	memcpy(w->levels, levels, (size_t)n * sizeof(double));
}

/* The largest |routed error| over every level and metric. */
static double routed_max_err(const sb_comparison *c)
{
	double mx = 0;
	for (size_t i = 0; i < c->routed->n_levels; i++)
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			double x = c->routed->levels[i].err_pct[sb_compare_metrics[j]];
			mx = isfinite(x) && fabs(x) > mx ? fabs(x) : mx;
		}
	return mx;
}

static void test_exact(const sb_model *m, sb_mode mode, const double *levels, int n)
{
	sb_workload w;
	workload(&w, mode, levels, n);
	json_t *doc = simdoc_make_fleet(m, &w, 5, 2, SB_ROUTE_ROUND_ROBIN);
	sb_comparison c;
	sb_error e = { "" };
	CHECK(doc && compare_doc(m, doc, &c, &e) == 0);
	if (!doc || !c.routed) {
		fprintf(stderr, "%s\n", e.msg);
		CHECK(0);
		json_decref(doc);
		return;
	}
	CHECK(c.routed->n_levels == (size_t)n && c.routed_replicas == 2);
	double mx = routed_max_err(&c);
	CHECK(mx < 1e-6);
	CHECK(isfinite(c.routed->mdape_central) && c.routed->mdape_central < 1e-6);
	if (!(mx < 1e-6))
		fprintf(stderr, "%s: routed error up to %g%%\n", sb_mode_name(mode), mx);
	sb_comparison_fini(&c);
	json_decref(doc);
}

/* 2. and 3. on an open-loop file. */
static void test_wrong_route_and_json(const sb_model *m, double mu)
{
	double levels[] = { 0.6 * 2 * mu, 0.85 * 2 * mu };
	sb_workload w;
	workload(&w, SB_MODE_RATE, levels, 2);
	w.requests = 200;
	json_t *doc = simdoc_make_fleet(m, &w, 6, 2, SB_ROUTE_ROUND_ROBIN);
	sb_comparison rr, rnd;
	sb_error e = { "" };
	CHECK(doc && compare_doc(m, doc, &rr, &e) == 0 && rr.routed);
	json_t *t = json_object_get(doc, "target");
	json_object_set_new(t, "route", json_string("random"));
	CHECK(compare_doc(m, doc, &rnd, &e) == 0 && rnd.routed);
	if (!rr.routed || !rnd.routed) {
		json_decref(doc);
		return;
	}
	fprintf(stderr, "random claimed: routed mdape central %.1f%% tail %.1f%%; round-robin %.2g%%\n",
		rnd.routed->mdape_central, rnd.routed->mdape_tail, rr.routed->mdape_tail);
	CHECK(rnd.routed->mdape_tail > 10);
	CHECK(rnd.routed_route == SB_ROUTE_RANDOM);
	CHECK(rnd.mdape_central == rr.mdape_central && rnd.mdape_tail == rr.mdape_tail);

	json_t *j = sb_comparison_to_json(&rnd);
	json_t *jr = json_object_get(j, "routed");
	CHECK(!strcmp(json_string_value(json_object_get(jr, "route")), "random"));
	CHECK(json_integer_value(json_object_get(jr, "replicas")) == 2);
	CHECK(json_array_size(json_object_get(jr, "levels")) == 2);
	CHECK(json_is_number(json_object_get(json_object_get(jr, "summary"), "ttft_tail_mdape_pct")));
	json_decref(j);
	char *txt = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&txt, &len);
	CHECK(out && sb_compare_report(out, &rnd, 0) == 0);
	if (out)
		fclose(out);
	CHECK(txt && strstr(txt, "routed: the measured arrivals through the SIMULATED router "
				 "(random, 2 replicas)"));
	free(txt);
	sb_comparison_fini(&rr);
	sb_comparison_fini(&rnd);

	/* no route: no routed comparison, and the report says why */
	json_object_del(t, "route");
	CHECK(compare_doc(m, doc, &rr, &e) == 0 && !rr.routed);
	out = open_memstream(&txt, &len);
	CHECK(out && sb_compare_report(out, &rr, 0) == 0);
	if (out)
		fclose(out);
	CHECK(txt && strstr(txt, "no routed comparison"));
	free(txt);
	j = sb_comparison_to_json(&rr);
	CHECK(!json_object_get(j, "routed"));
	json_decref(j);
	sb_comparison_fini(&rr);
	/* a route that is none */
	json_object_set_new(t, "route", json_string("fastest"));
	CHECK(compare_doc(m, doc, &rr, &e) == -EINVAL && strstr(e.msg, "target.route") &&
	      strstr(e.msg, "fastest"));
	json_decref(doc);
}

int main(void)
{
	sb_model m;
	sb_error e = { "" };
	if (sb_model_default(&m, &e) < 0) {
		fprintf(stderr, "default model: %s\n", e.msg);
		return 1;
	}
	sb_workload w;
	double one = 1;
	workload(&w, SB_MODE_RATE, &one, 1);
	sb_sim_opts so;
	sb_sim_opts_init(&so);
	double mu = 0;
	CHECK(sb_sim_capacity(&m, &so, &w, &mu, &e) == 0 && mu > 0);
	double open[] = { 0.5 * 2 * mu, 0.9 * 2 * mu }, closed[] = { 2, 2.0 * m.slots + 1 };
	test_exact(&m, SB_MODE_RATE, open, 2);
	test_exact(&m, SB_MODE_CONCURRENCY, closed, 2);
	test_wrong_route_and_json(&m, mu);
	sb_model_fini(&m);
	CHECK_DONE();
}
