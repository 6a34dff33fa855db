/* simdoc.c — see simdoc.h. */
#include "simdoc.h"

#include <math.h>
#include <stdio.h>

#include "core/results.h"
#include "sim/sim.h"

/* Every level of w simulated with options so into doc (records tagged with
 * their replica when fleet). 0, or -1 with a message printed. */
static int simdoc_levels(json_t *doc, const sb_model *m, const sb_workload *w,
			 unsigned long seed, const sb_sim_opts *so, int fleet)
{
	for (int i = 0; i < w->n_levels; i++) {
		sb_sim_level sl;
		sb_error e = { "" };
		if (sb_sim_run_level(m, so, w, w->levels[i], sb_seed_derive(seed, i, 0), &sl, &e) < 0) {
			fprintf(stderr, "simdoc: level %g: %s\n", w->levels[i], e.msg);
			return -1;
		}
		json_t *reqs = json_array();
		for (size_t j = 0; j < sl.n_recs; j++) {
			const sb_sim_rec *r = &sl.recs[j];
			sb_reqrec q = {
				.id = r->id, .t_scheduled_s = r->t_sched_s, .t_sent_s = r->t_sched_s,
				.t_done_s = r->t_done_s, .ttft_ms = r->ttft_ms, .e2e_ms = r->e2e_ms,
				.wait_ms = r->wait_ms, .prompt_tokens = r->prompt_tokens,
				.output_tokens = r->output_tokens,
				.err_class = r->rejected ? "rejected" : NULL,
			};
			json_t *jq = sb_reqrec_to_json(&q, NULL);
			if (fleet)
				json_object_set_new(jq, "replica", json_integer(r->replica));
			json_array_append_new(reqs, jq);
		}
		sb_results_add_level(doc, &sl.sum, reqs);
		sb_sim_level_fini(&sl);
	}
	return 0;
}

json_t *simdoc_make(const sb_model *m, const sb_workload *w, unsigned long seed)
{
	json_t *doc = sb_results_new("measured", json_pack("{s:s}", "model", "simulated truth"), w);
	if (!doc)
		return NULL;
	sb_sim_opts so;
	sb_sim_opts_init(&so);
	so.keep_records = 1;
	if (simdoc_levels(doc, m, w, seed, &so, 0) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

json_t *simdoc_make_fleet(const sb_model *m, const sb_workload *w, unsigned long seed,
			  int replicas, sb_route route)
{
	json_t *reps = json_array();
	for (int i = 0; i < replicas; i++)
		json_array_append_new(reps, json_pack("{s:s,s:i}", "url", "sim", "slots", m->slots));
	json_t *t = json_pack("{s:s,s:o,s:s}", "model", "simulated truth", "replicas", reps,
			      "route", sb_route_name(route));
	json_t *doc = sb_results_new("measured", t, w);
	if (!doc)
		return NULL;
	sb_sim_opts so;
	sb_sim_opts_init(&so);
	so.keep_records = 1;
	so.no_noise = 1;
	so.fleet.replicas = replicas;
	so.fleet.route = route;
	if (simdoc_levels(doc, m, w, seed, &so, 1) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}
