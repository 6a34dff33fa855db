/* capacity.c — sbsim --plan (see capacity.h). */
#include "capacity.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/jsonfile.h"
#include "sweep.h"
#include "uncertainty.h"

/* --- the search: trials at a rate, slot and replica counts ----------- */

/* Runs reps replications of w open loop at `rate` into *l (the caller
 * finis it); a rate at or past `capacity` is not run: l->overloaded. Same
 * seeds for every call (common random numbers). */
static int level_at(const sb_model *m, const sb_sim_opts *o, const sb_workload *w, double rate,
		    double capacity, int reps, sb_sweep_level *l, sb_error *e)
{
	sb_workload wc = *w;
	wc.mode = SB_MODE_RATE;
	memset(l, 0, sizeof *l);
	l->level = rate;
	l->overloaded = rate >= capacity;
	if (l->overloaded)
		return 0;
	return sb_sweep_level_run(m, o, &wc, 0, reps, l, e);
}

/* One planning trial: does (model m, options o, open loop at `rate`) meet
 * the SLO? Judged on the model as it is (the sweep's central figures), so
 * no coefficients are drawn. */
static int trial(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
		 double rate, double capacity, int reps, int *ok, sb_error *e)
{
	sb_sim_opts point = *o;
	point.uncert = NULL;
	sb_sweep_level l;
	int rc = level_at(m, &point, w, rate, capacity, reps, &l, e);
	if (rc == 0)
		*ok = !l.overloaded && sb_sweep_level_meets(&l, &w->slo);
	sb_sweep_level_fini(&l);
	return rc;
}

int sb_capacity_share_meeting(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			  int slots, double rate, int reps, double *share, sb_error *e)
{
	sb_model mc = *m;
	mc.fit = NULL;
	mc.slots = slots;
	double cap;
	int rc = sb_sim_capacity(&mc, o, w, &cap, e);
	if (rc < 0)
		return rc;
	sb_sweep_level l;
	rc = level_at(&mc, o, w, rate, cap, reps, &l, e);
	if (rc == 0)
		*share = l.overloaded ? 0 : sb_sweep_share_meeting(&l, &w->slo);
	sb_sweep_level_fini(&l);
	return rc;
}

static int need_slo(const sb_workload *w, sb_error *e)
{
	if (!(w->slo.ttft_ms > 0) && !(w->slo.tpot_ms > 0))
		return sb_error_set(e, "planning needs an SLO (--slo-ttft-ms and/or --slo-tpot-ms)");
	return 0;
}

/* What a count search varies: slots of the model, or replicas per group. */
typedef struct count_trial {
	const sb_model *m;
	const sb_sim_opts *o;
	const sb_workload *w;
	double rate;
	int reps;
	int replicas;          /* 1: vary the fleet's count; 0: the model's slots */
} count_trial;

/* Does count k (slots or replicas) meet the SLO at the rate? */
static int count_meets(const count_trial *c, int k, int *ok, sb_error *e)
{
	sb_model mc = *c->m;
	mc.fit = NULL;
	sb_sim_opts oc = *c->o;
	if (c->replicas)
		sb_fleet_set_count(&oc.fleet, k);
	else
		mc.slots = k;
	double cap;
	int rc = sb_sim_capacity(&mc, &oc, c->w, &cap, e);
	if (rc == 0)
		rc = trial(&mc, &oc, c->w, c->rate, cap, c->reps, ok, e);
	return rc;
}

/* The fewest k in 1..max meeting the SLO (doubling, then bisection; assumes
 * more never hurts): *out, or -1 when even max does not. */
static int search_min(const count_trial *c, int max, int *out, sb_error *e)
{
	int lo = 0, hi = -1, ok = 0, rc; /* lo fails (0 = none tried), hi meets */
	for (int k = 1; k <= max; k = k * 2 > max && k < max ? max : k * 2) {
		if ((rc = count_meets(c, k, &ok, e)) < 0)
			return rc;
		if (ok) {
			hi = k;
			break;
		}
		lo = k;
		if (k == max)
			break;
	}
	*out = hi;
	if (hi < 0)
		return 0;
	while (hi - lo > 1) {
		int mid = lo + (hi - lo) / 2;
		if ((rc = count_meets(c, mid, &ok, e)) < 0)
			return rc;
		if (ok)
			hi = mid;
		else
			lo = mid;
	}
	*out = hi;
	return 0;
}

/* The fewest slots (replicas 0) or replicas (replicas 1) up to max meeting
 * w's SLO at rate: both planners' checks, then search_min. */
static int min_count(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
		     double rate, int reps, int replicas, int max, int *out, sb_error *e)
{
	if (need_slo(w, e) < 0)
		return -EINVAL;
	if (!(rate > 0))
		return sb_error_set(e, "planning needs a rate > 0 (got %g)", rate);
	count_trial c = { m, o, w, rate, reps, replicas };
	return search_min(&c, max, out, e);
}

int sb_capacity_min_slots(const sb_model *m, const sb_sim_opts *o,
		      const sb_workload *w, double rate, int reps,
		      int max_slots, int *slots, sb_error *e)
{
	return min_count(m, o, w, rate, reps, 0, max_slots, slots, e);
}

int sb_capacity_min_replicas(const sb_model *m, const sb_sim_opts *o,
			 const sb_workload *w, double rate, int reps,
			 int max_replicas, int *replicas, sb_error *e)
{
	return min_count(m, o, w, rate, reps, 1, max_replicas, replicas, e);
}

int sb_capacity_max_rate(const sb_model *m, const sb_sim_opts *o,
		     const sb_workload *w, int reps, double *rate, sb_error *e)
{
	if (need_slo(w, e) < 0)
		return -EINVAL;
	double cap;
	int rc = sb_sim_capacity(m, o, w, &cap, e);
	if (rc < 0)
		return rc;
	double lo = cap / 1000, hi = cap;
	int ok = 0;
	rc = trial(m, o, w, lo, cap, reps, &ok, e);
	if (rc < 0)
		return rc;
	if (!ok) {
		*rate = 0;
		return 0;
	}
	while (hi - lo > 0.005 * hi) {
		double mid = (lo + hi) / 2;
		rc = trial(m, o, w, mid, cap, reps, &ok, e);
		if (rc < 0)
			return rc;
		if (ok)
			lo = mid;
		else
			hi = mid;
	}
	*rate = lo;
	return 0;
}

/* --- the plan: what sbsim --plan prints and writes ---------------------- */

/* The share of parameter draws in which a fleet of k replicas per group
 * meets the SLO at rate. */
static int fleet_share(const sb_model *m, const sb_sim_opts *o, const sb_workload *w, int k,
		       double rate, int reps, double *share, sb_error *e)
{
	sb_sim_opts oc = *o;
	sb_fleet_set_count(&oc.fleet, k);
	return sb_capacity_share_meeting(m, &oc, w, m->slots, rate, reps, share, e);
}

/* The plan's confidence: the share of parameter draws in which each answer
 * meets the SLO. */
static int plan_confidence(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			   int reps, sb_capacity_plan *p, sb_error *e)
{
	p->draws = reps;
	int r = 0;
	if (p->fleet) {
		int per_group = p->groups > 1 ? p->replicas / p->groups : p->replicas;
		if (p->min_replicas > 0)
			r = fleet_share(m, o, w, p->min_replicas, p->rate, reps, &p->conf_a, e);
		if (r == 0 && p->max_rate > 0)
			r = fleet_share(m, o, w, per_group, p->max_rate, reps, &p->conf_b, e);
		return r;
	}
	if (p->min_slots > 0)
		r = sb_capacity_share_meeting(m, o, w, p->min_slots, p->rate, reps, &p->conf_a, e);
	if (r == 0 && p->max_rate > 0)
		r = sb_capacity_share_meeting(m, o, w, p->slots, p->max_rate, reps, &p->conf_b, e);
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
	p->replicas = sb_fleet_size(&o->fleet);
	p->fleet = p->replicas > 1;
	p->groups = o->fleet.n_groups > 0 ? o->fleet.n_groups : 1;
	p->route = o->fleet.route;
	p->max_replicas = SB_CAPACITY_MAX_REPLICAS;
	p->min_replicas = -1;
	p->n_choices = 0;
	int r = p->fleet ? sb_capacity_min_replicas(m, o, w, p->rate, reps, p->max_replicas,
						 &p->min_replicas, e)
			 : sb_capacity_min_slots(m, o, w, p->rate, reps, max_slots, &p->min_slots, e);
	if (r == 0)
		r = sb_capacity_max_rate(m, o, w, reps, &p->max_rate, e);
	if (r < 0 || !(o->uncert && o->uncert->n > 0))
		return r;
	return plan_confidence(m, o, w, reps, p, e);
}

int sb_capacity_plan_slot_choices(const sb_model *m, const sb_sim_opts *o,
				  const sb_workload *w, int reps, const int *slots, int n,
				  sb_capacity_plan *p, sb_error *e)
{
	int draws = o->uncert && o->uncert->n > 0;
	p->n_choices = 0;
	for (int i = 0; i < n && i < SB_CAPACITY_MAX_SLOT_CHOICES; i++) {
		struct sb_capacity_choice *c = &p->choices[p->n_choices++];
		sb_model mc = *m;
		mc.fit = NULL;
		mc.slots = slots[i];
		c->slots = slots[i];
		c->min_replicas = -1;
		c->conf = NAN;
		int r = sb_capacity_min_replicas(&mc, o, w, p->rate, reps, p->max_replicas,
					     &c->min_replicas, e);
		if (r == 0 && draws && c->min_replicas > 0)
			r = fleet_share(&mc, o, w, c->min_replicas, p->rate, reps, &c->conf, e);
		if (r < 0) {
			sb_error_prefix(e, "%d slots per replica", slots[i]);
			return r;
		}
		if (draws)
			p->draws = reps;
	}
	return 0;
}

/* "      <what> meet <slo> at <rate> req/s in 95% of 40 parameter draws" */
static void print_confidence(FILE *out, const sb_capacity_plan *p, const char *what,
			     const char *slo_text, double rate, double conf)
{
	if (isfinite(conf))
		fprintf(out, "      %s meet %s at %.3g req/s in %.0f%% of %d parameter draws\n",
			what, slo_text, rate, 100 * conf, p->draws);
}

/* A fleet's answers. */
static void print_fleet_plan(FILE *out, const sb_capacity_plan *p, const char *slo_text)
{
	const char *per = p->groups > 1 ? " per group" : "";
	char what[96];
	if (p->min_replicas > 0) {
		fprintf(out, "  (a) fewest replicas%s meeting the SLO at %g req/s (%s): %d\n", per,
			p->rate, sb_route_name(p->route), p->min_replicas);
		snprintf(what, sizeof what, "%d replicas%s", p->min_replicas, per);
		print_confidence(out, p, what, slo_text, p->rate, p->conf_a);
	} else {
		fprintf(out, "  (a) no fleet up to %d replicas%s meets the SLO at %g req/s (%s)\n",
			p->max_replicas, per, p->rate, sb_route_name(p->route));
	}
	if (p->max_rate > 0) {
		fprintf(out, "  (b) highest rate meeting the SLO with %d replicas (%s): %.3f req/s\n",
			p->replicas, sb_route_name(p->route), p->max_rate);
		snprintf(what, sizeof what, "%d replicas", p->replicas);
		print_confidence(out, p, what, slo_text, p->max_rate, p->conf_b);
	} else {
		fprintf(out, "  (b) with %d replicas (%s) no rate meets the SLO\n", p->replicas,
			sb_route_name(p->route));
	}
}

/* A single server's answers. */
static void print_slots_plan(FILE *out, const sb_capacity_plan *p, const char *slo_text)
{
	char what[64];
	if (p->min_slots > 0) {
		fprintf(out, "  (a) fewest slots meeting the SLO at %g req/s: %d\n", p->rate,
			p->min_slots);
		snprintf(what, sizeof what, "%d slots", p->min_slots);
		print_confidence(out, p, what, slo_text, p->rate, p->conf_a);
	} else {
		fprintf(out, "  (a) no slot count up to %d meets the SLO at %g req/s\n",
			p->max_slots, p->rate);
	}
	if (p->max_rate > 0) {
		fprintf(out, "  (b) highest rate meeting the SLO with %d slots: %.3f req/s\n",
			p->slots, p->max_rate);
		snprintf(what, sizeof what, "%d slots", p->slots);
		print_confidence(out, p, what, slo_text, p->max_rate, p->conf_b);
	} else {
		fprintf(out, "  (b) with %d slots no rate meets the SLO\n", p->slots);
	}
}

/* (c): one line per slot count. */
static void print_choices(FILE *out, const sb_capacity_plan *p, const char *slo_text)
{
	if (p->n_choices == 0)
		return;
	fprintf(out, "  (c) fewest replicas at %g req/s (%s) by slots per replica:\n", p->rate,
		sb_route_name(p->route));
	for (int i = 0; i < p->n_choices; i++) {
		const struct sb_capacity_choice *c = &p->choices[i];
		if (c->min_replicas <= 0) {
			fprintf(out, "      %3d slots: none up to %d replicas\n", c->slots,
				p->max_replicas);
			continue;
		}
		fprintf(out, "      %3d slots: %d replicas (%d slots in all)", c->slots,
			c->min_replicas, c->slots * c->min_replicas);
		if (isfinite(c->conf))
			fprintf(out, "; meet %s in %.0f%% of %d parameter draws", slo_text,
				100 * c->conf, p->draws);
		fputc('\n', out);
	}
}

void sb_capacity_plan_print(FILE *out, const sb_capacity_plan *p, const sb_slo *slo)
{
	char slo_text[128] = "";
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
	if (p->fleet)
		print_fleet_plan(out, p, slo_text);
	else
		print_slots_plan(out, p, slo_text);
	print_choices(out, p, slo_text);
}

json_t *sb_capacity_plan_to_json(const sb_capacity_plan *p)
{
	json_t *plan = json_object();
	if (!plan)
		return NULL;
	json_object_set_new(plan, "rate", sb_json_number(p->rate));
	if (p->fleet) {
		json_object_set_new(plan, "min_replicas", p->min_replicas > 0
					  ? json_integer(p->min_replicas) : json_null());
		json_object_set_new(plan, "replicas", json_integer(p->replicas));
		json_object_set_new(plan, "route", json_string(sb_route_name(p->route)));
	} else {
		json_object_set_new(plan, "min_slots",
				    p->min_slots > 0 ? json_integer(p->min_slots) : json_null());
		json_object_set_new(plan, "slots", json_integer(p->slots));
	}
	json_object_set_new(plan, "max_rate_req_s", sb_json_number(p->max_rate));
	if (p->n_choices > 0) {
		json_t *arr = json_array();
		for (int i = 0; i < p->n_choices; i++) {
			const struct sb_capacity_choice *c = &p->choices[i];
			json_t *o = json_object();
			json_object_set_new(o, "slots", json_integer(c->slots));
			json_object_set_new(o, "min_replicas", c->min_replicas > 0
					    ? json_integer(c->min_replicas) : json_null());
			if (p->draws > 0)
				json_object_set_new(o, "confidence", sb_json_number(c->conf));
			json_array_append_new(arr, o);
		}
		json_object_set_new(plan, "slot_choices", arr);
	}
	if (p->draws > 0) {
		const char *ka = p->fleet ? "min_replicas_confidence" : "min_slots_confidence";
		json_object_set_new(plan, "draws", json_integer(p->draws));
		json_object_set_new(plan, ka, sb_json_number(p->conf_a));
		json_object_set_new(plan, "max_rate_confidence", sb_json_number(p->conf_b));
	}
	return plan;
}
