/* replayfit_out.c — what the replay fit (replayfit.h) hands out: the model
 * with its fit object (coefficients with 90% intervals, the covariance under
 * model_param.h's names, what the file did not pin down), the in-sample and
 * held-out errors, and the report in words. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_rng.h>

#include "calibrate/replayfit_internal.h"
#include "core/jsonfile.h"
#include "core/stats.h"
#include "sim/uncertainty.h"

#define Z90 1.6448536269514722
#define DRAWS 40

enum { MT_TTFT = 0, MT_TTFT_P90, MT_E2E, MT_TPOT, MT_N };
static const char *const metric_names[MT_N] = { "ttft_mean_ms", "ttft_p90_ms", "e2e_mean_ms",
						"tpot_mean_ms" };

/* The four figures over each level's requests [from fit ? 0 : n_fit,
 * fit ? n_fit : n), measured (pred 0) or as last replayed. NaN when there
 * are none. */
static int figures(const rf_level *lv, size_t n_lv, int fit, int pred, double *out)
{
	size_t n = 0, nt = 0, np = 0;
	for (size_t i = 0; i < n_lv; i++)
		n += lv[i].n;
	double *t = malloc((n + 1) * sizeof(double));
	if (!t)
		return -ENOMEM;
	double e2e = 0, tpot = 0, ttft = 0;
	for (size_t i = 0; i < n_lv; i++) {
		const rf_level *L = &lv[i];
		for (size_t j = fit ? 0 : L->n_fit; j < (fit ? L->n_fit : L->n); j++) {
			double a = pred ? L->pd[j].ttft_ms : L->ttft[j];
			double tp = pred ? L->pd[j].tpot_ms : L->tpot[j];
			t[nt++] = a;
			ttft += a;
			e2e += pred ? L->pd[j].e2e_ms : L->e2e[j];
			if (isfinite(tp)) {
				tpot += tp;
				np++;
			}
		}
	}
	qsort(t, nt, sizeof(double), sb_cmp_double);
	out[MT_TTFT] = nt ? ttft / (double)nt : NAN;
	out[MT_TTFT_P90] = nt ? sb_sorted_quantile(t, nt, 0.9) : NAN;
	out[MT_E2E] = nt ? e2e / (double)nt : NAN;
	out[MT_TPOT] = np ? tpot / (double)np : NAN; /* requests of 2+ tokens */
	free(t);
	return 0;
}

/* fit.support: the 5th and 95th percentiles of the fitted requests'
 * prompt tokens and of their prompt + output tokens (the context at a
 * request's end), so that sbsim says how far beyond them a workload goes
 * (sim/extrap.h); JSON null when out of memory. */
static json_t *support_json(const rf_problem *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_lv; i++)
		n += p->lv[i].n_fit;
	double *pt = malloc((n + 1) * sizeof(double)), *ct = malloc((n + 1) * sizeof(double));
	json_t *o = json_null();
	if (pt && ct && n > 0) {
		size_t k = 0;
		for (size_t i = 0; i < p->n_lv; i++)
			for (size_t j = 0; j < p->lv[i].n_fit; j++, k++) {
				const sb_replay_req *q = &p->lv[i].rq[j];
				pt[k] = (double)q->prompt_tokens;
				ct[k] = (double)(q->prompt_tokens + q->output_tokens);
			}
		qsort(pt, n, sizeof(double), sb_cmp_double);
		qsort(ct, n, sizeof(double), sb_cmp_double);
		o = json_pack("{s:[f,f],s:[f,f],s:s}", "prompt_tokens",
			      sb_sorted_quantile(pt, n, 0.05), sb_sorted_quantile(pt, n, 0.95),
			      "context_tokens", sb_sorted_quantile(ct, n, 0.05),
			      sb_sorted_quantile(ct, n, 0.95), "from",
			      "the fitted requests' 5th to 95th percentiles: prompt tokens, and "
			      "prompt + output tokens (the context at a request's end)");
	}
	free(pt);
	free(ct);
	return o;
}

/* The covariance under model_param.h's names (base and per_seq name the
 * vllm decode line). A coefficient with an infinite variance (a direction
 * the file does not move) is left out: it stays at its value in draws.
 * JSON null when none is left. */
static json_t *cov_json(const rf_problem *p)
{
	int idx[RF_NP], keep[RF_NP], na = 0, nk = 0;
	for (int i = 0; i < RF_NP; i++)
		if (rf_active(p, i))
			idx[na++] = i;
	for (int a = 0; a < na; a++) {
		double v = gsl_matrix_get(p->cov, (size_t)a, (size_t)a);
		if (isfinite(v) && v > 0)
			keep[nk++] = a;
	}
	if (nk == 0)
		return json_null();
	json_t *params = json_array(), *mat = json_array();
	for (int a = 0; a < nk; a++) {
		json_array_append_new(params, json_string(rf_param_names[idx[keep[a]]]));
		json_t *row = json_array();
		for (int b = 0; b < nk; b++)
			json_array_append_new(row, sb_json_number(gsl_matrix_get(
							   p->cov, (size_t)keep[a], (size_t)keep[b])));
		json_array_append_new(mat, row);
	}
	/* truncated: draws are coefficients >= 0, correlations kept (the file
	 * pins sums such as base + B per_seq better than either) */
	return json_pack("{s:o,s:o,s:b}", "params", params, "matrix", mat, "truncated", 1);
}

/* Why a coefficient may not be pinned down (for the notes). */
static const char *why_loose(int i)
{
	switch (i) {
	case RF_SEQ:
		return "the file's batches varied too little to tell per_seq from base";
	case RF_KV:
		return "the contexts varied too little to tell what a context token costs";
	case RF_ATTN:
		return "the prompts' lengths did not separate the quadratic term";
	case RF_OVH:
		return "too few requests met an idle engine to tell the overhead";
	default:
		return "the file's load did not separate it from the other terms";
	}
}

/* "coefficients": value and 90% interval of each active coefficient, and
 * the notes on those wider than their value. */
static void coef_json(const rf_problem *p, const double *c, json_t *fit)
{
	json_t *co = json_object(), *notes = json_array();
	for (int i = 0, k = 0; i < RF_NP; i++) {
		if (p->held[i]) {
			char s[160];
			json_object_set_new(co, rf_param_names[i],
					    json_pack("{s:f,s:b}", "value", 0.0, "held_at_zero", 1));
			snprintf(s, sizeof(s), "%s is held at 0: the fit drove it there and leaving "
					       "it out costs under 0.1%% of the residuals",
				 rf_param_names[i]);
			json_array_append_new(notes, json_string(s));
		}
		if (!rf_active(p, i))
			continue;
		double sd = sqrt(gsl_matrix_get(p->cov, (size_t)k, (size_t)k));
		k++;
		int pinned = isfinite(sd) && Z90 * sd <= c[i];
		json_t *ci = json_pack("[o,o]", sb_json_number(c[i] - Z90 * sd),
				       sb_json_number(c[i] + Z90 * sd));
		json_object_set_new(co, rf_param_names[i],
				    json_pack("{s:o,s:o,s:b}", "value", sb_json_number(c[i]), "ci90",
					      ci, "pinned", pinned));
		if (!pinned) {
			char s[256];
			snprintf(s, sizeof(s), "%s is not pinned down by the file (90%% interval wider "
					       "than its value): %s",
				 rf_param_names[i], why_loose(i));
			json_array_append_new(notes, json_string(s));
		}
	}
	json_object_set_new(fit, "coefficients", co);
	json_object_set_new(fit, "notes", notes);
}

/* {"measured", "predicted", "error"} of each figure, with "ci90" and
 * "inside" when lo/hi are given. */
static json_t *errors_json(const double *meas, const double *pred, const double *lo,
			   const double *hi)
{
	json_t *o = json_object();
	for (int k = 0; k < MT_N; k++) {
		json_t *f = json_pack("{s:o,s:o,s:o}", "measured", sb_json_number(meas[k]),
				      "predicted", sb_json_number(pred[k]), "error",
				      sb_json_number(pred[k] / meas[k] - 1));
		if (lo && isfinite(lo[k])) {
			json_object_set_new(f, "ci90", json_pack("[o,o]", sb_json_number(lo[k]),
								 sb_json_number(hi[k])));
			json_object_set_new(f, "inside", json_boolean(meas[k] >= lo[k] &&
									  meas[k] <= hi[k]));
		}
		json_object_set_new(o, metric_names[k], f);
	}
	return o;
}

/* The held-out figures' 90% intervals: DRAWS models drawn from the
 * covariance u around m, each replayed; the 5th and 95th percentiles. */
static int draw_intervals(rf_problem *p, const sb_model *m, const sb_uncert *u, double *lo,
			  double *hi, sb_error *e)
{
	double v[MT_N][DRAWS];
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	if (!r)
		return sb_error_code(e, -ENOMEM, "out of memory");
	gsl_rng_set(r, 1);
	int rc = 0, nd = 0;
	for (int d = 0; d < DRAWS && rc == 0; d++) {
		sb_model dm;
		if (sb_uncert_draw(u, m, r, &dm, e) < 0) {
			sb_model_fini(&dm);
			continue; /* an invalid draw is skipped (as sbsim does not) */
		}
		double f[MT_N];
		rc = rf_replay(p->lv, p->n_lv, &dm, (unsigned long)d + 1, e);
		if (rc == 0)
			rc = figures(p->lv, p->n_lv, 0, 1, f);
		for (int k = 0; rc == 0 && k < MT_N; k++)
			v[k][nd] = f[k];
		nd += rc == 0;
		sb_model_fini(&dm);
	}
	gsl_rng_free(r);
	for (int k = 0; k < MT_N; k++) {
		qsort(v[k], (size_t)nd, sizeof(double), sb_cmp_double);
		lo[k] = nd >= 10 ? sb_sorted_quantile(v[k], (size_t)nd, 0.05) : NAN;
		hi[k] = nd >= 10 ? sb_sorted_quantile(v[k], (size_t)nd, 0.95) : NAN;
	}
	return rc;
}

/* The predicted figures of the fitted requests (fit) or of the rest: their
 * mean over the replays of m (with its step noise) from the seeds the fit
 * averaged, as the coefficients were fitted. */
static int predicted(rf_problem *p, const sb_model *m, int fit, double *pred, sb_error *e)
{
	memset(pred, 0, MT_N * sizeof(double));
	for (int k = 0; k < RF_AVG_SEEDS; k++) {
		double f[MT_N];
		int rc = rf_replay(p->lv, p->n_lv, m, RF_AVG_SEED + (unsigned long)k, e);
		if (rc == 0 && figures(p->lv, p->n_lv, fit, 1, f) < 0)
			rc = sb_error_code(e, -ENOMEM, "out of memory");
		if (rc < 0)
			return rc;
		for (int i = 0; i < MT_N; i++)
			pred[i] += f[i] / RF_AVG_SEEDS;
	}
	return 0;
}

/* "in_sample" and (when some requests were held out) "held_out". */
static int errors_of_fit(rf_problem *p, const sb_model *m, json_t *fit, sb_error *e)
{
	double meas[MT_N], pred[MT_N];
	if (figures(p->lv, p->n_lv, 1, 0, meas) < 0)
		return sb_error_code(e, -ENOMEM, "out of memory");
	int rc = predicted(p, m, 1, pred, e);
	if (rc < 0)
		return rc;
	json_object_set_new(fit, "in_sample", errors_json(meas, pred, NULL, NULL));
	size_t held = 0;
	for (size_t i = 0; i < p->n_lv; i++)
		held += p->lv[i].n - p->lv[i].n_fit;
	if (held == 0)
		return 0;
	if (figures(p->lv, p->n_lv, 0, 0, meas) < 0)
		return sb_error_code(e, -ENOMEM, "out of memory");
	rc = predicted(p, m, 0, pred, e);
	if (rc < 0)
		return rc;
	sb_uncert u;
	double lo[MT_N], hi[MT_N];
	rc = sb_uncert_from_model(&u, m, e);
	int drawn = rc == 0 && u.n > 0;
	if (drawn)
		rc = draw_intervals(p, m, &u, lo, hi, e);
	sb_uncert_fini(&u);
	if (rc < 0)
		return rc;
	json_t *h = errors_json(meas, pred, drawn ? lo : NULL, hi);
	json_object_set_new(h, "requests", json_integer((json_int_t)held));
	json_object_set_new(fit, "held_out", h);
	return 0;
}

static json_t *inputs_json(const rf_problem *p, const sb_calib_input *in)
{
	json_t *a = json_array();
	for (size_t i = 0; i < p->n_lv; i++) {
		const rf_level *L = &p->lv[i];
		json_array_append_new(
			a, json_pack("{s:s,s:o,s:s,s:I,s:I,s:I}", "file", in[L->file].name, "level",
				     sb_json_number(L->level), "mode",
				     L->ro.mode == SB_MODE_RATE ? "rate" : "concurrency", "requests",
				     (json_int_t)L->n, "fitted", (json_int_t)L->n_fit, "windows",
				     (json_int_t)L->n_win));
	}
	return a;
}

int rf_build(rf_problem *p, const double *c, const sb_calib_input *in, sb_model *out,
	     sb_error *e)
{
	sb_model_copy(out, &p->m);
	rf_set_model(out, c);
	out->noise_kind = SB_NOISE_LOGNORMAL;
	out->noise_cv = out->noise_prefill_cv = p->noise_cv;
	json_t *fit = json_pack("{s:s,s:s,s:s,s:o,s:I,s:o,s:o,s:o}", "method", "replay", "engine",
				sb_engine_name(out->engine), "form", sb_rf_form_name(p->o.form),
				"inputs", inputs_json(p, in), "replays", (json_int_t)p->evals, "rss",
				sb_json_number(p->rss), "lag1", sb_json_number(p->rho),
				"residual_var", sb_json_number(p->s2));
	if (!fit)
		return sb_error_code(e, -ENOMEM, "out of memory");
	coef_json(p, c, fit);
	if (p->head_reqs)
		json_object_set_new(fit, "search_requests", json_integer((json_int_t)p->head_reqs));
	json_object_set_new(fit, "support", support_json(p));
	json_object_set_new(fit, "replicas", json_integer(p->o.replicas));
	json_object_set_new(fit, "covariance", cov_json(p));
	json_decref(out->fit);
	out->fit = fit;
	return errors_of_fit(p, out, fit, e);
}

/* ---- the report -------------------------------------------------------- */

static void report_errors(FILE *f, const json_t *o, const char *what)
{
	if (!o)
		return;
	fprintf(f, "%s:\n", what);
	for (int k = 0; k < MT_N; k++) {
		const json_t *m = json_object_get(o, metric_names[k]);
		const json_t *ci = json_object_get(m, "ci90");
		fprintf(f, "  %-13s measured %10.1f  predicted %10.1f  (%+.1f%%)", metric_names[k],
			json_number_value(json_object_get(m, "measured")),
			json_number_value(json_object_get(m, "predicted")),
			100 * json_number_value(json_object_get(m, "error")));
		if (ci)
			fprintf(f, "  90%% [%.1f, %.1f] %s",
				json_number_value(json_array_get(ci, 0)),
				json_number_value(json_array_get(ci, 1)),
				json_is_true(json_object_get(m, "inside")) ? "inside" : "OUTSIDE");
		fprintf(f, "\n");
	}
}

void sb_rf_report(FILE *f, const sb_model *m)
{
	const json_t *fit = m->fit;
	fprintf(f, "engine %s: max_num_seqs %d, max_num_batched_tokens %ld, block_size %ld, "
		   "gpu_blocks %ld%s\n",
		sb_engine_name(m->engine), m->slots, m->batch_tokens, m->block_size, m->gpu_blocks,
		m->gpu_blocks ? "" : " (unlimited)");
	fprintf(f, "step form \"%s\", fitted by %lld replays of the file",
		json_string_value(json_object_get(fit, "form")),
		(long long)json_integer_value(json_object_get(fit, "replays")));
	const json_t *head = json_object_get(fit, "search_requests");
	if (head)
		fprintf(f, " (the search and the bootstrap on its first %lld fitted requests)",
			(long long)json_integer_value(head));
	fprintf(f, "; per coefficient, 90%% interval:\n");
	const char *k;
	const json_t *v;
	json_object_foreach(json_object_get(fit, "coefficients"), k, v) {
		const json_t *ci = json_object_get(v, "ci90");
		double lo = json_number_value(json_array_get(ci, 0));
		double hi = json_number_value(json_array_get(ci, 1));
		fprintf(f, "  %-18s %12.6g ms", k, json_number_value(json_object_get(v, "value")));
		if (!ci)
			fprintf(f, "  (held at 0)\n");
		else if (json_is_number(json_array_get(ci, 1)))
			fprintf(f, "  [%.4g, %.4g]%s\n", lo, hi,
				json_is_true(json_object_get(v, "pinned")) ? "" : "  not pinned down");
		else
			fprintf(f, "  [unbounded]  not pinned down\n");
	}
	long long reps = (long long)json_integer_value(json_object_get(fit, "replicas"));
	if (reps > 1)
		fprintf(f, "the file's server: %lld such engines behind one front end (the model is "
			   "one; sbsim --replicas %lld --route least-outstanding)\n",
			reps, reps);
	report_errors(f, json_object_get(fit, "in_sample"), "fitted requests");
	const json_t *h = json_object_get(fit, "held_out");
	if (h) {
		char what[96];
		snprintf(what, sizeof(what), "held-out requests (%lld, predicted by replay)",
			 (long long)json_integer_value(json_object_get(h, "requests")));
		report_errors(f, h, what);
	}
	size_t i;
	json_array_foreach(json_object_get(fit, "notes"), i, v)
		fprintf(f, "note: %s\n", json_string_value(v));
}
