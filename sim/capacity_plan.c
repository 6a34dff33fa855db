/* capacity_plan.c — sbsim --plan (see capacity_plan.h). */
#include "capacity_plan.h"

#include <math.h>

#include "core/jsonfile.h"
#include "sweep.h"
#include "uncertainty.h"

/* The plan's confidence: the share of parameter draws in which each answer
 * meets the SLO. */
static int plan_confidence(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			   int reps, sb_capacity_plan *p, sb_error *e)
{
	p->draws = reps;
	int r = 0;
	if (p->min_slots > 0)
		r = sb_plan_share_meeting(m, o, w, p->min_slots, p->rate, reps, &p->conf_a, e);
	if (r == 0 && p->max_rate > 0)
		r = sb_plan_share_meeting(m, o, w, p->slots, p->max_rate, reps, &p->conf_b, e);
	return r;
}

int sb_capacity_plan_run(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			 int reps, int max_slots, sb_capacity_plan *p, sb_error *e)
{
	p->rate = w->levels[0];
	p->max_slots = max_slots;
	p->min_slots = -1;
	p->slots = m->slots;
	p->max_rate = 0;
	p->conf_a = p->conf_b = NAN;
	p->draws = 0;
	int r = sb_plan_min_slots(m, o, w, p->rate, reps, max_slots, &p->min_slots, e);
	if (r == 0)
		r = sb_plan_max_rate(m, o, w, reps, &p->max_rate, e);
	if (r < 0 || !(o->uncert && o->uncert->n > 0))
		return r;
	return plan_confidence(m, o, w, reps, p, e);
}

void sb_capacity_plan_print(FILE *out, const sb_capacity_plan *p, const sb_slo *slo)
{
	char slo_text[128];
	double pct = slo->percentile > 0 ? slo->percentile : 99;
	int k = 0;
	if (slo->ttft_ms > 0)
		k = snprintf(slo_text, sizeof slo_text, "p%g TTFT <= %g ms", pct, slo->ttft_ms);
	if (slo->tpot_ms > 0)
		snprintf(slo_text + k, sizeof slo_text - (size_t)k, "%sp%g TPOT <= %g ms",
			 k ? " and " : "", pct, slo->tpot_ms);
	fprintf(out, "\nplan (SLO at p%g:", pct);
	if (slo->ttft_ms > 0)
		fprintf(out, " TTFT <= %g ms", slo->ttft_ms);
	if (slo->tpot_ms > 0)
		fprintf(out, " TPOT <= %g ms", slo->tpot_ms);
	fprintf(out, "):\n");
	if (p->min_slots > 0)
		fprintf(out, "  (a) fewest slots meeting the SLO at %g req/s: %d\n", p->rate,
			p->min_slots);
	if (p->min_slots > 0 && isfinite(p->conf_a))
		fprintf(out, "      %d slots meet %s at %g req/s in %.0f%% of %d parameter draws\n",
			p->min_slots, slo_text, p->rate, 100 * p->conf_a, p->draws);
	else
		fprintf(out, "  (a) no slot count up to %d meets the SLO at %g req/s\n",
			p->max_slots, p->rate);
	if (p->max_rate > 0)
		fprintf(out, "  (b) highest rate meeting the SLO with %d slots: %.3f req/s\n",
			p->slots, p->max_rate);
	if (p->max_rate > 0 && isfinite(p->conf_b))
		fprintf(out, "      %d slots meet %s at %.3f req/s in %.0f%% of %d parameter draws\n",
			p->slots, slo_text, p->max_rate, 100 * p->conf_b, p->draws);
	else
		fprintf(out, "  (b) with %d slots no rate meets the SLO\n", p->slots);
}

json_t *sb_capacity_plan_to_json(const sb_capacity_plan *p)
{
	json_t *plan = json_object();
	if (!plan)
		return NULL;
	json_object_set_new(plan, "rate", json_real(p->rate));
	json_object_set_new(plan, "min_slots",
			    p->min_slots > 0 ? json_integer(p->min_slots) : json_null());
	json_object_set_new(plan, "slots", json_integer(p->slots));
	json_object_set_new(plan, "max_rate_req_s", json_real(p->max_rate));
	if (p->draws > 0) {
		json_object_set_new(plan, "draws", json_integer(p->draws));
		json_object_set_new(plan, "min_slots_confidence", sb_json_number(p->conf_a));
		json_object_set_new(plan, "max_rate_confidence", sb_json_number(p->conf_b));
	}
	return plan;
}
