/* test_capacity.c — capacity planning (sim/capacity.h: sb_capacity_min_slots,
 * sb_capacity_max_rate) returns the boundary it promises.
 *
 * Each answer is checked against the sweep itself, with the planner's own
 * replications and seeds (level 0 of the workload's seed): the fewest slots
 * S meet the SLO at the rate and S - 1 do not (or are past capacity); the
 * highest rate r meets it and 1.05 r does not (the bisection stops within
 * 0.5%; the margin keeps the check off the last bisection step). An SLO no
 * configuration meets gives -1 slots and rate 0, and planning without an SLO
 * is refused. The model is noiseless, so every figure is exact for its seed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "fixtures.h"
#include "sim/capacity.h"
#include "sim/sweep.h"

/* Whether `slots` slots meet w's SLO at `rate` as the planner judges it:
 * below capacity, and the sweep's level meets the SLO. */
static int meets(const sb_model *m0, const sb_sim_opts *o, const sb_workload *w0, int slots,
		 double rate, int reps)
{
	sb_model m = *m0;
	m.fit = NULL;
	m.slots = slots;
	sb_workload w = *w0;
	w.levels[0] = rate;
	w.n_levels = 1;
	sb_error e = { "" };
	double cap;
	CHECK(sb_sim_capacity(&m, o, &w, &cap, &e) == 0);
	if (rate >= cap)
		return 0;
	sb_sweep sw;
	CHECK(sb_sweep_run(&m, o, &w, reps, &sw, &e) == 0);
	int ok = sb_sweep_level_meets(&sw.levels[0], &w.slo);
	sb_sweep_fini(&sw);
	return ok;
}

int main(void)
{
	sb_model m;
	simfix_model(&m, 4, "plan test");
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	o.no_noise = 1;
	sb_workload w;
	simfix_plan_workload(&w);
	sb_error e = { "" };
	const int reps = 3;
	const double rate = 3.0;
	int slots = 0;
	CHECK(sb_capacity_min_slots(&m, &o, &w, rate, reps, 64, &slots, &e) == 0);
	fprintf(stderr, "fewest slots at %g req/s: %d\n", rate, slots);
	CHECK(slots > 1);
	CHECK(meets(&m, &o, &w, slots, rate, reps));
	CHECK(!meets(&m, &o, &w, slots - 1, rate, reps));

	double r = 0;
	CHECK(sb_capacity_max_rate(&m, &o, &w, reps, &r, &e) == 0);
	fprintf(stderr, "highest rate on %d slots: %g req/s\n", m.slots, r);
	CHECK(r > 0);
	CHECK(meets(&m, &o, &w, m.slots, r, reps));
	CHECK(!meets(&m, &o, &w, m.slots, 1.05 * r, reps));

	/* an SLO below the overhead itself: nothing meets it */
	w.slo.ttft_ms = 10;
	CHECK(sb_capacity_min_slots(&m, &o, &w, rate, reps, 16, &slots, &e) == 0 && slots == -1);
	CHECK(sb_capacity_max_rate(&m, &o, &w, reps, &r, &e) == 0 && r == 0);
	/* and without an SLO there is nothing to plan for */
	w.slo.ttft_ms = 0;
	CHECK(sb_capacity_min_slots(&m, &o, &w, rate, reps, 16, &slots, &e) == -EINVAL);
	CHECK(strstr(e.msg, "SLO") != NULL);
	sb_model_fini(&m);
	CHECK_DONE();
}
