/* sweep_json.c — a sweep as a results document (see sweep_json.h). */
#include "sweep_json.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/level.h"
#include "core/results.h"
#include "extrap.h"
#include "uncertainty.h"

/* "created" from SOURCE_DATE_EPOCH, when it holds a valid time. */
static void set_created(json_t *res)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	if (!sde)
		return;
	char *end;
	long long t = strtoll(sde, &end, 10);
	if (*sde == 0 || *end != 0 || t < 0)
		return;
	time_t tt = (time_t)t;
	struct tm tm;
	char buf[32];
	if (gmtime_r(&tt, &tm) && strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
		json_object_set_new(res, "created", json_string(buf));
}

/* target.fleet: {"replicas", "route", "groups": [{"model", "count",
 * "slots"}]} (groups: one entry for copies of the model). */
static json_t *fleet_json(const sb_sweep_doc *d)
{
	const sb_fleet *f = &d->opts->fleet;
	json_t *groups = json_array();
	int n = f->n_groups ? f->n_groups : 1;
	for (int g = 0; g < n; g++) {
		const sb_model *m = f->n_groups && f->groups[g].model ? f->groups[g].model : d->model;
		json_t *o = json_pack("{s:s, s:i, s:i}", "model", m->name, "count",
				      f->n_groups ? f->groups[g].count : f->replicas, "slots", m->slots);
		if (f->n_groups && d->opts->uncert && d->opts->uncert->n > 0)
			json_object_set_new(o, "draws", json_string(sb_fleet_group_draws(f, g)));
		json_array_append_new(groups, o);
	}
	return json_pack("{s:i, s:s, s:o}", "replicas", sb_fleet_size(f), "route",
			 sb_route_name(f->route), "groups", groups);
}

static json_t *target_json(const sb_sweep_doc *d)
{
	json_t *target = json_object();
	json_object_set_new(target, "simulator", json_string("sbsim " SB_VERSION));
	json_object_set_new(target, "model", sb_model_to_json(d->model));
	json_object_set_new(target, "service_mode",
			    json_string(d->opts->service_mode ? "independent" : "engine"));
	if (d->opts->service_mode) {
		char buf[128];
		sb_dist_format(&d->opts->service, buf, sizeof buf);
		json_object_set_new(target, "service", json_string(buf));
	}
	if (d->scenario)
		json_object_set_new(target, "scenario", json_string(d->scenario));
	if (d->opts->pin_stride > 0)
		json_object_set_new(target, "pin_stride", json_integer(d->opts->pin_stride));
	if (sb_fleet_size(&d->opts->fleet) > 1)
		json_object_set_new(target, "fleet", fleet_json(d));
	return target;
}

/* [lo, hi] per metric with a finite 90% interval (parameter draws). */
static json_t *pi90_json(const sb_sweep_level *l)
{
	json_t *pi = json_object();
	for (int k = 0; k < SB_MET_N; k++) {
		if (!isfinite(l->lo90[k]) || !isfinite(l->hi90[k]))
			continue;
		json_object_set_new(pi, sb_metric_name((sb_metric)k),
				    json_pack("[f,f]", l->lo90[k], l->hi90[k]));
	}
	return pi;
}

/* The simulation's "uncertainty" object: the coefficients drawn and how
 * the intervals were made. */
static json_t *uncertainty_json(const sb_sweep *sw, const sb_uncert *u)
{
	json_t *names = json_array();
	for (int i = 0; i < u->n; i++)
		json_array_append_new(names, json_string(u->names[i]));
	return json_pack("{s:i,s:o,s:s}", "draws", sw->replications, "params", names,
			 "interval", "pi90: the replications' 5% and 95% prediction quantiles "
				     "(positions p(k+1)), each replication with its own parameter draw");
}

static json_t *simulation_json(const sb_sweep *sw, const sb_sweep_doc *d, json_t *plan)
{
	json_t *sim = json_object();
	json_object_set_new(sim, "replications", json_integer(sw->replications));
	json_object_set_new(sim, "seed", json_integer((json_int_t)d->w->seed));
	json_object_set_new(sim, "capacity_req_s",
			    sb_json_number(sw->capacity));
	json_object_set_new(sim, "warmup_s", sb_json_number(d->opts->warmup_s));
	if (sw->knee >= 0) {
		json_t *k = json_object();
		json_object_set_new(k, "level", sb_json_number(sw->levels[sw->knee].level));
		json_object_set_new(k, "reason", json_string(sw->knee_reason));
		json_object_set_new(sim, "knee", k);
	} else {
		json_object_set_new(sim, "knee", json_null());
	}
	json_t *beyond = sb_extrap_data_json(d->model, d->w);
	if (beyond)
		json_object_set_new(sim, "beyond_data", beyond);
	if (sw->uncertain && d->opts->uncert)
		json_object_set_new(sim, "uncertainty", uncertainty_json(sw, d->opts->uncert));
	if (plan)
		json_object_set_new(sim, "plan", plan);
	return sim;
}

/* What a llama.cpp server reports of request x's prompt, for a request
 * of a shared-prefix workload (what calibrate reads of the prompt cache),
 * else NULL. */
static json_t *timings_json(const sb_sim_rec *x)
{
	if (x->prefix_group < 0 || x->rejected)
		return NULL;
	return json_pack("{s:I,s:I,s:f}", "prompt_n",
			 (json_int_t)(x->prompt_tokens - x->cached_tokens), "cache_n",
			 (json_int_t)x->cached_tokens, "prompt_ms", x->prompt_ms);
}

/* The per-request records of a level's first replication (with shared
 * prefixes: each one's group, slot and the server's prompt timings). */
static json_t *requests_json(const sb_sweep_level *l, int d_pinned)
{
	json_t *reqs = json_array();
	const sb_sim_level *r0 = &l->reps[0];
	for (size_t j = 0; j < r0->n_recs; j++) {
		const sb_sim_rec *x = &r0->recs[j];
		sb_reqrec rr = {
			.id = x->id, .t_scheduled_s = x->t_sched_s,
			.t_sent_s = x->t_sched_s, .t_done_s = x->t_done_s,
			.ttft_ms = x->ttft_ms, .e2e_ms = x->e2e_ms,
			.wait_ms = x->wait_ms, .prompt_tokens = x->prompt_tokens,
			.output_tokens = x->output_tokens,
			.err_class = x->rejected ? "rejected" : NULL,
			.err_msg = x->rejected ? sb_sim_reject_msg(x->rejected) : NULL,
			.slot = d_pinned ? x->slot : -1,
		};
		json_t *rec = sb_reqrec_to_json(&rr, timings_json(x));
		if (rec && x->prefix_group >= 0) {
			sb_reqrec_set_sharing(rec, x->prefix_group, x->prefix_tokens, x->turn);
			json_object_set_new(rec, "slot", json_integer(x->slot));
		}
		json_array_append_new(reqs, rec);
	}
	return reqs;
}

/* [mean - h, mean + h] per metric with a finite interval. */
static json_t *ci95_json(const sb_sweep_level *l)
{
	json_t *ci = json_object();
	for (int k = 0; k < SB_MET_N; k++) {
		double mu = l->mean[k], h = l->half[k];
		if (!isfinite(mu) || !isfinite(h))
			continue;
		json_t *pair = json_array();
		json_array_append_new(pair, sb_json_number(mu - h));
		json_array_append_new(pair, sb_json_number(mu + h));
		json_object_set_new(ci, sb_metric_name((sb_metric)k), pair);
	}
	return ci;
}

/* The context's counts over the replications (too_long is part of
 * rejected), when the model has a context per slot. */
static void context_counts(json_t *lj, const sb_sweep_level *l)
{
	long tl = 0, tr = 0, cut = 0, pre = 0;
	for (int r = 0; r < l->n_reps; r++) {
		tl += l->reps[r].too_long;
		tr += l->reps[r].truncated;
		cut += l->reps[r].output_cut;
		pre += l->reps[r].preempted;
	}
	json_object_set_new(lj, "too_long", json_integer(tl));
	json_object_set_new(lj, "truncated", json_integer(tr));
	json_object_set_new(lj, "output_cut", json_integer(cut));
	json_object_set_new(lj, "preempted", json_integer(pre));
}

/* The prompt cache's reuse over the replications: "prompt_cache":
 * {"cached_tokens", "prompt_tokens"} of the counted requests. */
static void cache_counts(json_t *lj, const sb_sweep_level *l)
{
	long c = 0, p = 0;
	for (int r = 0; r < l->n_reps; r++) {
		c += l->reps[r].cached_tokens;
		p += l->reps[r].prompt_tokens;
	}
	json_object_set_new(lj, "prompt_cache", json_pack("{s:I,s:I}", "cached_tokens",
							  (json_int_t)c, "prompt_tokens",
							  (json_int_t)p));
}

/* A fleet level's "replicas" array and "fleet" unevenness (means across
 * replications). */
static void replicas_json(json_t *lj, const sb_sweep_level *l)
{
	json_t *arr = json_array();
	for (int i = 0; i < l->n_replicas; i++) {
		const sb_sim_replica *p = &l->replicas[i];
		json_t *o = json_object();
		json_object_set_new(o, "replica", json_integer(i));
		json_object_set_new(o, "group", json_integer(p->group));
		json_object_set_new(o, "slots", json_integer(p->slots));
		json_object_set_new(o, "requests", json_integer(p->requests));
		json_object_set_new(o, "share", sb_json_number(p->share));
		json_object_set_new(o, "utilization", sb_json_number(p->utilization));
		json_object_set_new(o, "req_s", sb_json_number(p->req_s));
		json_object_set_new(o, "l_observed", sb_json_number(p->mean_inflight));
		json_object_set_new(o, "l_law", sb_json_number(p->l_law));
		json_array_append_new(arr, o);
	}
	json_object_set_new(lj, "replicas", arr);
	json_t *f = json_object();
	json_object_set_new(f, "share_max_min", sb_json_number(l->share_ratio));
	json_object_set_new(f, "utilization_cv", sb_json_number(l->util_cv));
	json_object_set_new(lj, "fleet", f);
}

/* The simulator's own fields of level i's entry lj. */
static void level_extras(json_t *lj, const sb_sweep *sw, const sb_model *m, int i)
{
	const sb_sweep_level *l = &sw->levels[i];
	json_t *x = sb_extrap_json(l, m);
	if (x)
		json_object_set_new(lj, "extrapolated", x);
	json_object_set_new(lj, "utilization", sb_json_number(l->mean[SB_MET_UTIL]));
	long rej = 0;
	json_t *seeds = json_array();
	for (int r = 0; r < l->n_reps; r++) {
		rej += l->reps[r].rejected;
		json_array_append_new(seeds, json_integer((json_int_t)l->reps[r].seed));
	}
	json_object_set_new(lj, "rejected", json_integer(rej));
	context_counts(lj, l);
	if (m->prompt_cache != SB_PCACHE_NONE)
		cache_counts(lj, l);
	json_object_set_new(lj, "overloaded", json_boolean(l->overloaded));
	json_object_set_new(lj, "diverged", json_boolean(l->diverged));
	json_object_set_new(lj, "knee", json_boolean(sw->knee == i));
	json_object_set_new(lj, "seeds", seeds);
	if (sw->replications > 1)
		json_object_set_new(lj, "ci95", ci95_json(l));
	if (sw->uncertain)
		json_object_set_new(lj, "pi90", pi90_json(l));
	if (l->n_replicas > 0)
		replicas_json(lj, l);
}

json_t *sb_sweep_to_results(const sb_sweep *sw, const sb_sweep_doc *d, json_t *plan)
{
	json_t *res = sb_results_new("simulated", target_json(d), d->w);
	if (!res) {
		json_decref(plan);
		return NULL;
	}
	set_created(res);
	json_object_set_new(res, "simulation", simulation_json(sw, d, plan));
	json_t *levels = json_object_get(res, "levels");
	for (int i = 0; i < sw->n_levels; i++) {
		const sb_sweep_level *l = &sw->levels[i];
		json_t *reqs = d->with_requests && l->n_reps > 0 ? requests_json(l, d->opts->pin_stride > 0) : NULL;
		if (sb_results_add_level(res, &l->summary, reqs) < 0) {
			json_decref(res);
			return NULL;
		}
		level_extras(json_array_get(levels, json_array_size(levels) - 1), sw, d->model, i);
	}
	return res;
}
