/* compare_json.c — a comparison as JSON (compare.h). */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "sim/sim.h"
#include "compare_internal.h"

/* ---- JSON ---------------------------------------------------------------- */

/* One metric of a level: measured, predicted, error (and the forecast). */
static json_t *metric_to_json(const sb_cmp_level *cl, sb_metric k)
{
	json_t *x = json_object();
	json_object_set_new(x, "measured", sb_json_number(cl->meas[k]));
	json_object_set_new(x, "predicted", sb_json_number(cl->pred[k]));
	json_object_set_new(x, "predicted_sd", sb_json_number(cl->pred_sd[k]));
	json_object_set_new(x, "error_pct", sb_json_number(cl->err_pct[k]));
	if (cl->has_forecast) {
		json_object_set_new(x, "forecast_lo", sb_json_number(cl->fc_lo[k]));
		json_object_set_new(x, "forecast_hi", sb_json_number(cl->fc_hi[k]));
		json_object_set_new(x, "inside", cl->fc_inside[k] < 0 ? json_null()
								      : json_boolean(cl->fc_inside[k]));
	}
	return x;
}

static json_t *request_to_json(const sb_cmp_req *q)
{
	return json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o}", "id", (json_int_t)q->id,
			 "prompt_tokens", (json_int_t)q->prompt_tokens, "output_tokens",
			 (json_int_t)q->output_tokens, "ttft_ms_measured", sb_json_number(q->meas_ttft_ms),
			 "ttft_ms_predicted", sb_json_number(q->pred_ttft_ms), "ttft_error_pct",
			 sb_json_number(sb_compare_err_pct(q->meas_ttft_ms, q->pred_ttft_ms)),
			 "e2e_ms_measured", sb_json_number(q->meas_e2e_ms), "e2e_ms_predicted",
			 sb_json_number(q->pred_e2e_ms), "e2e_error_pct",
			 sb_json_number(sb_compare_err_pct(q->meas_e2e_ms, q->pred_e2e_ms)));
}

/* {"ttft_p50": {...}, ...}: every compared metric of cl. */
static json_t *metrics_to_json(const sb_cmp_level *cl)
{
	json_t *mt = json_object();
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++)
		json_object_set_new(mt, sb_metric_key(sb_compare_metrics[j]),
				    metric_to_json(cl, sb_compare_metrics[j]));
	return mt;
}

/* A fleet's replica g within a level: its requests and metrics. */
static json_t *replica_to_json(const sb_cmp_level *rl, size_t g)
{
	json_t *jr = json_object();
	json_object_set_new(jr, "replica", json_integer((json_int_t)g));
	json_object_set_new(jr, "requests", json_integer(rl->n_counted));
	json_object_set_new(jr, "metrics", metrics_to_json(rl));
	return jr;
}

static json_t *level_to_json(const sb_cmp_level *cl)
{
	json_t *jl = json_object();
	json_object_set_new(jl, "level", sb_json_number(cl->level));
	json_object_set_new(jl, "mode", json_string(sb_mode_name(cl->mode)));
	json_object_set_new(jl, "method", json_string(cl->replayed ? "replay" : "forecast"));
	json_object_set_new(jl, "requests", json_integer(cl->n_counted));
	json_object_set_new(jl, "metrics", metrics_to_json(cl));
	if (cl->replayed) {
		json_object_set_new(jl, "request_ttft_mdape", sb_json_number(cl->req_ttft_mdape));
		json_object_set_new(jl, "request_e2e_mdape", sb_json_number(cl->req_e2e_mdape));
		json_t *rs = json_array();
		for (size_t j = 0; j < cl->n_reqs; j++)
			json_array_append_new(rs, request_to_json(&cl->reqs[j]));
		json_object_set_new(jl, "requests", rs);
	}
	if (cl->n_replicas) {
		json_object_set_new(jl, "replay", json_string(cl->open_loop_replay
					? "open loop at the measured send times, per replica"
					: "per replica"));
		json_t *ra = json_array();
		for (size_t g = 0; g < cl->n_replicas; g++)
			json_array_append_new(ra, replica_to_json(&cl->replicas[g], g));
		json_object_set_new(jl, "replicas", ra);
	}
	return jl;
}

/* The cross-level summaries: MdAPEs, knees, forecast coverage. */
static json_t *summary_to_json(const sb_comparison *c)
{
	json_t *s = json_object();
	json_object_set_new(s, "mdape_central_pct", sb_json_number(c->mdape_central));
	json_object_set_new(s, "mdape_tail_pct", sb_json_number(c->mdape_tail));
	json_object_set_new(s, "mdape_throughput_pct", sb_json_number(c->mdape_throughput));
	json_object_set_new(s, "capacity",
			    c->cap_mode < 0
				    ? json_null()
				    : json_pack("{s:s,s:o,s:s,s:o,s:o,s:o}", "mode",
						sb_mode_name((sb_mode)c->cap_mode), "level",
						sb_json_number(c->cap_level), "metric",
						sb_metric_key(c->cap_metric), "measured",
						sb_json_number(c->cap_meas), "predicted",
						sb_json_number(c->cap_pred), "error_pct",
						sb_json_number(c->cap_err_pct)));
	static const char *qn[SB_CMP_N_QUANT] = { "ttft", "tpot", "e2e" };
	for (int q = 0; q < SB_CMP_N_QUANT; q++) {
		char k[64];
		snprintf(k, sizeof(k), "%s_central_mdape_pct", qn[q]);
		json_object_set_new(s, k, sb_json_number(c->mdape_quant[q][0]));
		snprintf(k, sizeof(k), "%s_tail_mdape_pct", qn[q]);
		json_object_set_new(s, k, sb_json_number(c->mdape_quant[q][1]));
	}
	json_t *pm = json_object();
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++)
		json_object_set_new(pm, sb_metric_key(sb_compare_metrics[j]),
				    sb_json_number(c->mdape_metric[sb_compare_metrics[j]]));
	json_object_set_new(s, "mdape_by_metric_pct", pm);
	for (int md = 0; md < 2; md++) {
		json_t *kn = json_object();
		json_object_set_new(kn, "measured", sb_json_number(c->knee_meas[md]));
		json_object_set_new(kn, "predicted", sb_json_number(c->knee_pred[md]));
		json_object_set_new(kn, "match", c->knee_match[md] < 0 ? json_null()
								       : json_boolean(c->knee_match[md]));
		char k[64];
		snprintf(k, sizeof(k), "knee_%s", sb_mode_name((sb_mode)md));
		json_object_set_new(s, k, kn);
	}
	if (c->fc_total) {
		json_object_set_new(s, "forecast_inside", json_integer(c->fc_inside));
		json_object_set_new(s, "forecast_cells", json_integer(c->fc_total));
	}
	return s;
}

json_t *sb_comparison_to_json(const sb_comparison *c)
{
	json_t *root = json_object();
	json_t *levels = json_array();
	if (!root || !levels) {
		json_decref(root);
		json_decref(levels);
		return NULL;
	}
	json_object_set_new(root, "schema", json_string("servebench.comparison/1"));
	json_object_set_new(root, "seed", json_integer((json_int_t)c->seed));
	json_object_set_new(root, "replications", json_integer(c->replications));
	json_object_set_new(root, "model_slots", json_integer(c->model_slots));
	json_object_set_new(root, "measured_slots",
			    c->measured_slots > 0 ? json_integer(c->measured_slots) : json_null());
	if (c->cache_dropped)
		json_object_set_new(root, "replayed_without_prompt_cache", json_true());
	json_object_set_new(root, "error_definition",
			    json_string("100 * (predicted - measured) / measured"));
	for (size_t i = 0; i < c->n_levels; i++)
		json_array_append_new(levels, level_to_json(&c->levels[i]));
	json_object_set_new(root, "levels", levels);
	json_object_set_new(root, "summary", summary_to_json(c));
	if (c->routed) {
		json_t *rt = json_pack("{s:s,s:i}", "route",
				       sb_route_name((sb_route)c->routed_route), "replicas",
				       c->routed_replicas);
		json_t *rls = json_array();
		for (size_t i = 0; rls && i < c->routed->n_levels; i++)
			json_array_append_new(rls, level_to_json(&c->routed->levels[i]));
		if (rt) {
			json_object_set_new(rt, "levels", rls);
			json_object_set_new(rt, "summary", summary_to_json(c->routed));
		}
		json_object_set_new(root, "routed", rt);
	}
	return root;
}

