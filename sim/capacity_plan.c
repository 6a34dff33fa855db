/* capacity_plan.c — sbsim --plan (see capacity_plan.h). */
#include "capacity_plan.h"

#include "sweep.h"

int sb_capacity_plan_run(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			 int reps, int max_slots, sb_capacity_plan *p, sb_error *e)
{
	p->rate = w->levels[0];
	p->max_slots = max_slots;
	p->min_slots = -1;
	p->slots = m->slots;
	p->max_rate = 0;
	p->replicas = sb_fleet_size(&o->fleet);
	p->fleet = p->replicas > 1;
	p->groups = o->fleet.n_groups > 0 ? o->fleet.n_groups : 1;
	p->route = o->fleet.route;
	p->max_replicas = SB_PLAN_MAX_REPLICAS;
	p->min_replicas = -1;
	int r = p->fleet ? sb_plan_min_replicas(m, o, w, p->rate, reps, p->max_replicas,
						 &p->min_replicas, e)
			 : sb_plan_min_slots(m, o, w, p->rate, reps, max_slots, &p->min_slots, e);
	if (r < 0)
		return r;
	return sb_plan_max_rate(m, o, w, reps, &p->max_rate, e);
}

/* A fleet's answers. */
static void print_fleet_plan(FILE *out, const sb_capacity_plan *p)
{
	const char *per = p->groups > 1 ? " per group" : "";
	if (p->min_replicas > 0)
		fprintf(out, "  (a) fewest replicas%s meeting the SLO at %g req/s (%s): %d\n", per,
			p->rate, sb_route_name(p->route), p->min_replicas);
	else
		fprintf(out, "  (a) no fleet up to %d replicas%s meets the SLO at %g req/s (%s)\n",
			p->max_replicas, per, p->rate, sb_route_name(p->route));
	if (p->max_rate > 0)
		fprintf(out, "  (b) highest rate meeting the SLO with %d replicas (%s): %.3f req/s\n",
			p->replicas, sb_route_name(p->route), p->max_rate);
	else
		fprintf(out, "  (b) with %d replicas (%s) no rate meets the SLO\n", p->replicas,
			sb_route_name(p->route));
}

void sb_capacity_plan_print(FILE *out, const sb_capacity_plan *p, const sb_slo *slo)
{
	fprintf(out, "\nplan (SLO at p%g:", slo->percentile > 0 ? slo->percentile : 99);
	if (slo->ttft_ms > 0)
		fprintf(out, " TTFT <= %g ms", slo->ttft_ms);
	if (slo->tpot_ms > 0)
		fprintf(out, " TPOT <= %g ms", slo->tpot_ms);
	fprintf(out, "):\n");
	if (p->fleet) {
		print_fleet_plan(out, p);
		return;
	}
	if (p->min_slots > 0)
		fprintf(out, "  (a) fewest slots meeting the SLO at %g req/s: %d\n", p->rate,
			p->min_slots);
	else
		fprintf(out, "  (a) no slot count up to %d meets the SLO at %g req/s\n",
			p->max_slots, p->rate);
	if (p->max_rate > 0)
		fprintf(out, "  (b) highest rate meeting the SLO with %d slots: %.3f req/s\n",
			p->slots, p->max_rate);
	else
		fprintf(out, "  (b) with %d slots no rate meets the SLO\n", p->slots);
}

json_t *sb_capacity_plan_to_json(const sb_capacity_plan *p)
{
	json_t *plan = json_object();
	if (!plan)
		return NULL;
	json_object_set_new(plan, "rate", json_real(p->rate));
	if (p->fleet) {
		json_object_set_new(plan, "min_replicas", p->min_replicas > 0
					  ? json_integer(p->min_replicas) : json_null());
		json_object_set_new(plan, "replicas", json_integer(p->replicas));
		json_object_set_new(plan, "route", json_string(sb_route_name(p->route)));
		json_object_set_new(plan, "max_rate_req_s", json_real(p->max_rate));
		return plan;
	}
	json_object_set_new(plan, "min_slots",
			    p->min_slots > 0 ? json_integer(p->min_slots) : json_null());
	json_object_set_new(plan, "slots", json_integer(p->slots));
	json_object_set_new(plan, "max_rate_req_s", json_real(p->max_rate));
	return plan;
}
