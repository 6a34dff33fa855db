/* test_fleet_capacity.c — fleets in sweeps and plans.
 *
 *  - the fleet plan returns the boundary it promises, checked against the
 *    sweep itself with the planner's replications and seeds (as
 *    test_capacity.c does for slots): the fewest replicas R meet the SLO at the
 *    rate and R - 1 do not; the highest rate r of the given fleet meets it
 *    and 1.05 r does not (the bisection stops within 0.5%);
 *  - a sweep's figures do not depend on o.jobs (1, 2, 5 threads give the
 *    same bits), for one server and for a fleet;
 *  - a "fleet" of one replica is the single server (same bits, no
 *    per-replica figures).
 * The model is noiseless, so every figure is exact for its seed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "fixtures.h"
#include "sim/capacity.h"
#include "sim/sweep.h"

/* The shared model (fixtures.h) on 2 slots, its decode table cut to
 * batches 1 and 4. */
static void plan_model(sb_model *m)
{
	simfix_model(m, 2, "fleet plan test");
	m->decode[2] = (sb_decode_point){ 0, 0 };
	m->n_decode = 2;
}

/* Whether `replicas` replicas meet w's SLO at `rate` as the planner
 * judges it. */
static int meets(const sb_model *m, const sb_sim_opts *o0, const sb_workload *w0, int replicas,
		 double rate, int reps)
{
	sb_sim_opts o = *o0;
	sb_fleet_set_count(&o.fleet, replicas);
	sb_workload w = *w0;
	w.levels[0] = rate;
	w.n_levels = 1;
	sb_error e = { "" };
	double cap;
	CHECK(sb_sim_capacity(m, &o, &w, &cap, &e) == 0);
	if (rate >= cap)
		return 0;
	sb_sweep sw;
	CHECK(sb_sweep_run(m, &o, &w, reps, &sw, &e) == 0);
	int ok = sb_sweep_level_meets(&sw.levels[0], &w.slo);
	sb_sweep_fini(&sw);
	return ok;
}

static void check_plan(const sb_model *m, sb_sim_opts *o, sb_workload *w)
{
	sb_error e = { "" };
	const int reps = 3;
	const double rate = 40.0;
	int n = 0;
	CHECK(sb_capacity_min_replicas(m, o, w, rate, reps, 256, &n, &e) == 0);
	fprintf(stderr, "fewest replicas at %g req/s (%s): %d\n", rate,
		sb_route_name(o->fleet.route), n);
	CHECK(n > 1);
	CHECK(meets(m, o, w, n, rate, reps));
	CHECK(!meets(m, o, w, n - 1, rate, reps));
	double r = 0;
	CHECK(sb_capacity_max_rate(m, o, w, reps, &r, &e) == 0);
	fprintf(stderr, "highest rate on %d replicas: %g req/s\n", sb_fleet_size(&o->fleet), r);
	CHECK(r > 0);
	CHECK(meets(m, o, w, o->fleet.replicas, r, reps));
	CHECK(!meets(m, o, w, o->fleet.replicas, 1.05 * r, reps));
	w->slo.ttft_ms = 10; /* below the overhead: nothing meets it */
	CHECK(sb_capacity_min_replicas(m, o, w, rate, reps, 8, &n, &e) == 0 && n == -1);
	w->slo.ttft_ms = 400;
}

/* Same bits from sweeps run on 1, 2 and 5 threads. */
static void check_jobs(const sb_model *m, sb_sim_opts o, sb_workload w)
{
	double ref[SB_MET_N * 3];
	w.levels[0] = 10;
	w.levels[1] = 20;
	w.levels[2] = 30;
	w.n_levels = 3;
	static const int jobs[] = { 1, 2, 5 };
	for (int j = 0; j < 3; j++) {
		o.jobs = jobs[j];
		sb_sweep sw;
		sb_error e = { "" };
		CHECK(sb_sweep_run(m, &o, &w, 4, &sw, &e) == 0);
		for (int i = 0; i < 3; i++)
			for (int k = 0; k < SB_MET_N; k++) {
				double v = sw.levels[i].mean[k];
				if (j == 0)
					ref[i * SB_MET_N + k] = v;
				else
					CHECK(memcmp(&v, &ref[i * SB_MET_N + k], sizeof v) == 0);
			}
		sb_sweep_fini(&sw);
	}
}

/* A fleet of one replica runs as the single server. */
static void check_one_replica(const sb_model *m, const sb_sim_opts *o0, const sb_workload *w)
{
	sb_sim_opts o = *o0;
	sb_fleet_init(&o.fleet);
	sb_sim_level a, b;
	sb_error e = { "" };
	CHECK(sb_sim_run_level(m, &o, w, 5, 11, &a, &e) == 0);
	o.fleet.replicas = 1;
	o.fleet.route = SB_ROUTE_P2C;
	CHECK(sb_sim_run_level(m, &o, w, 5, 11, &b, &e) == 0);
	CHECK(b.n_replicas == 0 && b.replicas == NULL);
	CHECK(memcmp(&a.sum.ttft_ms, &b.sum.ttft_ms, sizeof a.sum.ttft_ms) == 0);
	CHECK(memcmp(&a.utilization, &b.utilization, sizeof a.utilization) == 0);
	sb_sim_level_fini(&a);
	sb_sim_level_fini(&b);
}

int main(void)
{
	sb_model m;
	plan_model(&m);
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	o.no_noise = 1;
	o.fleet.replicas = 4;
	o.fleet.route = SB_ROUTE_LEAST_OUTSTANDING;
	sb_workload w;
	simfix_plan_workload(&w);
	check_plan(&m, &o, &w);
	o.fleet.route = SB_ROUTE_ROUND_ROBIN;
	check_plan(&m, &o, &w);
	check_jobs(&m, o, w);
	sb_sim_opts one = o;
	sb_fleet_init(&one.fleet);
	check_jobs(&m, one, w);
	check_one_replica(&m, &o, &w);
	/* planning without an SLO is refused */
	sb_error e = { "" };
	int n;
	w.slo.ttft_ms = 0;
	CHECK(sb_capacity_min_replicas(&m, &o, &w, 4, 3, 8, &n, &e) == -EINVAL);
	CHECK(strstr(e.msg, "SLO") != NULL);
	sb_model_fini(&m);
	CHECK_DONE();
}
