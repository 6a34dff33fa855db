/* simdoc.c — see simdoc.h. */
#include "simdoc.h"

#include <math.h>
#include <stdio.h>

#include "core/results.h"
#include "sim/sim.h"

json_t *simdoc_make(const sb_model *m, const sb_workload *w, unsigned long seed)
{
	json_t *doc = sb_results_new("measured", json_pack("{s:s}", "model", "simulated truth"), w);
	if (!doc)
		return NULL;
	sb_sim_opts so;
	sb_sim_opts_init(&so);
	so.keep_records = 1;
	for (int i = 0; i < w->n_levels; i++) {
		sb_sim_level sl;
		sb_error e = { "" };
		if (sb_sim_run_level(m, &so, w, w->levels[i], sb_seed_derive(seed, i, 0), &sl, &e) < 0) {
			fprintf(stderr, "simdoc: level %g: %s\n", w->levels[i], e.msg);
			json_decref(doc);
			return NULL;
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
			json_array_append_new(reqs, sb_reqrec_to_json(&q, NULL));
		}
		sb_results_add_level(doc, &sl.sum, reqs);
		sb_sim_level_fini(&sl);
	}
	return doc;
}
