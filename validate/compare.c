/* compare.c — measured results against the simulator's replay (compare.h). */
#include "compare.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/knee.h"
#include "core/stats.h"
#include "sim/sim.h"
#include "compare_internal.h"

/* ---- the metrics compared ------------------------------------------ */

const sb_metric sb_compare_metrics[SB_COMPARE_N_METRICS] = {
	SB_MET_TTFT_MEAN, SB_MET_TTFT_P50, SB_MET_TTFT_P90, SB_MET_TTFT_P99,
	SB_MET_TPOT_MEAN, SB_MET_TPOT_P50, SB_MET_TPOT_P90, SB_MET_TPOT_P99,
	SB_MET_E2E_MEAN,  SB_MET_E2E_P50,  SB_MET_E2E_P90,  SB_MET_E2E_P99,
	SB_MET_OUT_TOK_S, SB_MET_REQ_S,
};

int sb_compare_metric_class(sb_metric k)
{
	switch (sb_metric_stat(k)) {
	case SB_STAT_MEAN:
	case SB_STAT_P50: return SB_CMP_CENTRAL;
	case SB_STAT_P90:
	case SB_STAT_P99: return SB_CMP_TAIL;
	case SB_STAT_NONE: break;
	}
	return SB_CMP_THROUGHPUT;
}

/* ---- maths ----------------------------------------------------------- */

double sb_compare_err_pct(double meas, double pred)
{
	if (!isfinite(meas) || !isfinite(pred) || !(meas > 0))
		return NAN;
	return 100.0 * (pred - meas) / meas;
}

double sb_compare_median_abs(const double *x, size_t n)
{
	double *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return NAN;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (isfinite(x[i]))
			v[k++] = fabs(x[i]);
	}
	qsort(v, k, sizeof(*v), sb_cmp_double);
	double m = sb_sorted_quantile(v, k, 0.5);
	free(v);
	return m;
}

/* ---- options, goals -------------------------------------------------- */

void sb_compare_opts_init(sb_compare_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->replications = 20;
	o->seed = 1;
	o->forecast_reps = 200;
	o->knee_min_ratio = SB_KNEE_MIN_RATIO;
}

void sb_compare_goals_init(sb_compare_goals *g)
{
	g->central_pct = 5;
	g->tail_pct = 10;
	g->require_knee = 1;
}

/* ---- forecast -------------------------------------------------------- */

/* Fresh-traffic replications of a run of n_req counted requests (after
 * warmup) at this level. Fills pred/pred_sd (when fill_pred) and the
 * interval. sum0 receives replication 0's summary (may be NULL). */
static int forecast_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			  size_t li, long n_req, long warmup, long len_in, long len_out,
			  sb_cmp_level *cl, int fill_pred, sb_level *sum0, sb_error *e)
{
	int reps = o->forecast_reps > 0 ? o->forecast_reps : 200;
	if (o->no_noise && fill_pred && !o->forecast)
		reps = 1;
	sb_workload w = meas->workload;
	w.mode = cl->mode;
	w.n_levels = 1;
	w.levels[0] = cl->level;
	w.requests = n_req > 0 ? n_req : 1;
	w.duration_s = 0;
	w.warmup = warmup >= 0 ? warmup : 0;
	if (len_in > 0)
		w.input_len = (sb_dist){ SB_DIST_DET, (double)len_in, 0 };
	if (len_out > 0)
		w.output_len = (sb_dist){ SB_DIST_DET, (double)len_out, 0 };
	if (cl->mode == SB_MODE_CONCURRENCY && o->think_s > 0)
		w.think_s = (sb_dist){ SB_DIST_DET, o->think_s, 0 };
	sb_sim_opts so;
	sb_sim_opts_init(&so);
	so.no_noise = o->no_noise;
	double *vals = malloc((size_t)reps * SB_COMPARE_N_METRICS * sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (int rep = 0; rep < reps; rep++) {
		sb_sim_level sl;
		memset(&sl, 0, sizeof(sl));
		unsigned long seed = sb_seed_derive(o->seed, li | FORECAST_STREAM, (unsigned long)rep);
		int r = sb_sim_run_level(m, &so, &w, cl->level, seed, &sl, e);
		if (r < 0) {
			free(vals);
			sb_error_prefix(e, "forecast of level %g", cl->level);
			return r;
		}
		for (size_t i = 0; i < SB_COMPARE_N_METRICS; i++)
			vals[i * (size_t)reps + (size_t)rep] =
				sb_metric_get(&sl.sum, sb_compare_metrics[i]);
		if (rep == 0 && sum0)
			*sum0 = sl.sum;
		sb_sim_level_fini(&sl);
	}
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
		sb_metric k = sb_compare_metrics[j];
		double *v = vals + j * (size_t)reps;
		welford wf = { 0, 0, 0 };
		size_t nf = 0;
		for (int i = 0; i < reps; i++) {
			welford_add(&wf, v[i]);
			if (isfinite(v[i]))
				v[nf++] = v[i];
		}
		qsort(v, nf, sizeof(*v), sb_cmp_double);
		cl->fc_lo[k] = sb_sorted_quantile(v, nf, 0.025);
		cl->fc_hi[k] = sb_sorted_quantile(v, nf, 0.975);
		double mv = cl->meas[k];
		cl->fc_inside[k] = (isfinite(mv) && nf)
					   ? (mv >= cl->fc_lo[k] && mv <= cl->fc_hi[k])
					   : -1;
		if (fill_pred) {
			cl->pred[k] = welford_mean(&wf);
			cl->pred_sd[k] = welford_sd(&wf);
		}
	}
	cl->has_forecast = 1;
	free(vals);
	return 0;
}

/* ---- the whole comparison ---------------------------------------------- */

static json_t *sim_target(const sb_model *m, const sb_compare_opts *o, const sb_results *meas)
{
	json_t *t = json_object();
	json_object_set_new(t, "model", json_string(m->name));
	json_object_set_new(t, "slots", json_integer(m->slots));
	json_object_set_new(t, "engine_model", sb_model_to_json(m));
	json_object_set_new(t, "method", json_string("replay of the measured requests"));
	json_object_set_new(t, "replications", json_integer(o->no_noise ? 1 : o->replications));
	json_object_set_new(t, "seed", json_integer((json_int_t)o->seed));
	json_object_set_new(t, "note", json_string(
		"level summaries are the mean over replications of the replay; the request "
		"records are replication 0"));
	const json_t *mt = json_object_get(meas->root, "target");
	if (mt)
		json_object_set(t, "measured_target", (json_t *)mt);
	return t;
}

/* Level li before its prediction: the measured summary's metrics, the
 * rest NaN. */
static void level_init(sb_cmp_level *cl, const sb_rlevel *rl)
{
	cl->level = rl->sum.level;
	cl->mode = rl->sum.mode;
	cl->req_ttft_mdape = cl->req_e2e_mdape = NAN;
	for (int k = 0; k < SB_MET_N; k++) {
		cl->meas[k] = cl->pred[k] = cl->pred_sd[k] = cl->err_pct[k] = NAN;
		cl->fc_lo[k] = cl->fc_hi[k] = NAN;
		cl->fc_inside[k] = -1;
	}
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++)
		cl->meas[sb_compare_metrics[j]] = sb_metric_get(&rl->sum, sb_compare_metrics[j]);
}

/* Predicts level li: a replay of its records (and the forecast when asked),
 * or a forecast when it has none. *reqs: the predicted records (new array,
 * NULL for a forecast); *sum0: replication 0's summary. */
static int predict_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			 size_t li, sb_cmp_level *cl, json_t **reqs, sb_level *sum0, sb_error *e)
{
	const sb_rlevel *rl = &meas->levels[li];
	long warm = (long)meas->workload.warmup, len_in = -1, len_out = -1;
	if (rl->n_reqs == 0) {
		cl->n_counted = rl->sum.requests_ok > 0 ? rl->sum.requests_ok : meas->workload.requests;
		return forecast_level(m, meas, o, li, cl->n_counted, warm, -1, -1, cl, 1, sum0, e);
	}
	*reqs = json_array();
	if (!*reqs)
		return -ENOMEM;
	int r = sb_cmp_replay_level(m, meas, o, li, cl, *reqs, sum0, &warm, &len_in, &len_out, e);
	if (r == 0 && o->forecast)
		r = forecast_level(m, meas, o, li, cl->n_counted, warm, len_in, len_out, cl, 0,
				   NULL, e);
	if (r < 0) {
		json_decref(*reqs);
		*reqs = NULL;
	}
	return r;
}

/* Compares level li of meas into out->levels[li] and adds its prediction
 * to out->simulated. */
static int compare_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			 size_t li, sb_comparison *out, sb_error *e)
{
	sb_cmp_level *cl = &out->levels[li];
	level_init(cl, &meas->levels[li]);
	sb_level sum0;
	memset(&sum0, 0, sizeof(sum0));
	json_t *reqs = NULL;
	int r = predict_level(m, meas, o, li, cl, &reqs, &sum0, e);
	if (r < 0)
		return r;
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
		sb_metric k = sb_compare_metrics[j];
		cl->err_pct[k] = sb_compare_err_pct(cl->meas[k], cl->pred[k]);
		sb_metric_set(&sum0, k, cl->pred[k]);
		if (cl->fc_inside[k] >= 0) {
			out->fc_total++;
			out->fc_inside += cl->fc_inside[k];
		}
	}
	sum0.level = cl->level;
	sum0.mode = cl->mode;
	return sb_results_add_level(out->simulated, &sum0, reqs);
}

/* The slot count every replica of a fleet reports; 0 when they differ or
 * one is unknown. */
static long fleet_slots(const sb_target_info *t)
{
	for (size_t g = 1; g < t->n_replicas; g++)
		if (t->replica_slots[g] != t->replica_slots[0])
			return 0;
	return t->replica_slots[0] > 0 ? t->replica_slots[0] : 0;
}

int sb_compare_run(const sb_model *m, const sb_results *meas, const sb_compare_opts *opts,
		   sb_comparison *out, sb_error *e)
{
	memset(out, 0, sizeof(*out));
	sb_compare_opts o;
	if (opts)
		o = *opts;
	else
		sb_compare_opts_init(&o);
	if (o.knee_min_ratio <= 0)
		o.knee_min_ratio = SB_KNEE_MIN_RATIO;
	if (meas->n_levels == 0)
		return sb_error_set(e, "the measured results have no levels");
	int r = sb_model_validate(m, e);
	if (r < 0)
		return r;
	/* a run that asked the server not to reuse prompts is replayed without
	 * the model's prompt cache */
	sb_model uncached;
	int own = meas->target.cache_prompt == 0 && m->prompt_cache != SB_PCACHE_NONE;
	if (own) {
		sb_model_copy(&uncached, m);
		uncached.prompt_cache = SB_PCACHE_NONE;
		m = &uncached;
	}
	out->cache_dropped = own;
	out->seed = o.seed;
	out->replications = o.no_noise ? 1 : o.replications;
	out->model_slots = m->slots;
	out->measured_slots = meas->target.slots >= 0 ? (int)meas->target.slots : 0;
	if (meas->target.n_replicas) /* a fleet: its replicas' count when they agree */
		out->measured_slots = (int)fleet_slots(&meas->target);
	out->levels = calloc(meas->n_levels, sizeof(*out->levels));
	out->simulated = sb_results_new("simulated", sim_target(m, &o, meas), &meas->workload);
	if (!out->levels || !out->simulated) {
		r = -ENOMEM;
		goto fail;
	}
	out->n_levels = meas->n_levels;
	for (size_t li = 0; li < meas->n_levels; li++) {
		r = compare_level(m, meas, &o, li, out, e);
		if (r < 0)
			goto fail;
	}
	sb_compare_summarize(out, o.knee_min_ratio);
	if ((r = sb_cmp_routed_compare(m, meas, &o, out, e)) < 0)
		goto fail;
	if (own)
		sb_model_fini(&uncached);
	return 0;
fail:
	sb_comparison_fini(out);
	if (own)
		sb_model_fini(&uncached);
	return r;
}

void sb_comparison_fini(sb_comparison *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->levels && i < c->n_levels; i++) {
		free(c->levels[i].reqs);
		free(c->levels[i].replicas);
	}
	free(c->levels);
	json_decref(c->simulated);
	if (c->routed) {
		sb_comparison_fini(c->routed);
		free(c->routed);
	}
	memset(c, 0, sizeof(*c));
}

