/* prefill.c — prefill cost and client-side overhead (prefill.h). */
#include "calibrate/prefill.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/spread.h"

void cal_prefill_fini(cal_prefill *p)
{
	sb_linfit_fini(&p->lin);
	sb_linfit_fini(&p->quad);
	free(p->lvi);
	free(p->P);
	p->lvi = NULL;
	p->P = NULL;
}

const sb_linfit *cal_prefill_chosen(const cal_prefill *p)
{
	return p->attn == CAL_ATTN_KEPT ? &p->quad : &p->lin;
}

/* Working arrays of the fit, cap entries each (owned). */
typedef struct pf_points {
	double *X, *y, *yt, *w, *ov, *ovP;
	size_t n, n_t, n_ov;
} pf_points;

/* One pass over the concurrency-1 points into p and out->P/lvi: y from the
 * client's TTFT (less the decode steps), yt from the server's prompt_ms,
 * ov / ovP: TTFT - prompt_ms and the prompt tokens sent where reported. */
static void prefill_points(const cal_data *d, const cal_engine *g, pf_points *p,
			   cal_prefill *out)
{
	for (size_t l = 0; l < d->n_lv; l++) {
		const cal_level *L = &d->lvs[l];
		if (L->c != 1 || L->shape_dropped)
			continue;
		if (!L->use_reqs) {
			out->P[p->n] = L->P;
			p->y[p->n] = L->ttft - g->decode_1_ms * (double)cal_engine_prefill_steps(g, L->P);
			p->yt[p->n] = NAN;
			p->w[p->n] = MEDIAN_WEIGHT(L->n_ok);
			out->lvi[p->n++] = l;
			continue;
		}
		for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
			const cal_request *R = &d->rqs[q];
			out->P[p->n] = R->P;
			p->y[p->n] = R->ttft - g->decode_1_ms * (double)cal_engine_prefill_steps(g, R->P);
			p->yt[p->n] = R->prompt_ms;
			if (isfinite(R->prompt_ms)) {
				p->n_t++;
				p->ovP[p->n_ov] = R->Pin;
				p->ov[p->n_ov++] = R->ttft - R->prompt_ms;
			}
			p->w[p->n] = 1.0;
			out->lvi[p->n++] = l;
		}
	}
}

/* Distinct prompt lengths among P[0..n) (groups more than 10% apart: a
 * measured length jitters by a few tokens around what was asked for), and
 * the shortest and longest. Returns the count or -ENOMEM. */
static long distinct_lengths(const double *P, size_t n, double *pmin, double *pmax)
{
	double *sp = sb_sorted_copy(P, n);
	if (!sp)
		return -ENOMEM;
	long distinct = 0;
	double g0 = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (sp[i] > 1.1 * g0 + 1.0) {
			distinct++;
			g0 = sp[i];
		}
	}
	*pmin = sp[0];
	*pmax = sp[n - 1];
	free(sp);
	return distinct;
}

/* The design with p columns (steps or 1, P, P(P-1)/2) into p->X. */
static void design(const cal_engine *g, const cal_prefill *out, pf_points *p, size_t cols)
{
	for (size_t i = 0; i < p->n; i++) {
		double P = out->P[i];
		p->X[i * cols] = out->timings ? (double)cal_engine_prefill_steps(g, P) : 1.0;
		p->X[i * cols + 1] = P;
		if (cols == 3)
			p->X[i * cols + 2] = P * (P - 1.0) / 2.0;
	}
}

/* Without server timings, per-request rows get weights 1 / (their level's
 * variance of y): the client's TTFT scatters far more at long prompts (the
 * prefill's own noise grows with its size) than at short ones (the
 * overhead's), and one pooled variance would overstate the intercept's
 * standard error and understate the per-token and attention terms' (the
 * ones an extrapolation to longer prompts rests on). The variance is the
 * levels' line s^2 = a + b mean^2 (spread.h), not each level's own sample
 * variance: from 4-8 requests a level's variance is uncertain by half
 * itself, and weights that trust it made per_prefill_token's standard error
 * 1.34 times too small over 60 simulated calibrate --url data sets (1.11
 * with the line). Unchanged when a level has fewer than 2 records or no
 * scatter, or rows are summaries; per level when there are more than 64. */
static double level_var(const cal_prefill *out, const pf_points *p, size_t i, size_t *end,
			double *mean)
{
	size_t j = i;
	double s = 0, ss = 0;
	for (; j < p->n && out->lvi[j] == out->lvi[i]; j++)
		s += p->y[j];
	double m = s / (double)(j - i);
	for (size_t q = i; q < j; q++)
		ss += (p->y[q] - m) * (p->y[q] - m);
	*end = j;
	*mean = m;
	return j - i >= 2 ? ss / (double)(j - i - 1) : NAN;
}

static void level_weights(const cal_prefill *out, pf_points *p)
{
	double M2[64], V[64], D[64], m, a, b, lo, hi, top = 0;
	size_t j, nl = 0;
	for (size_t i = 0; i < p->n; i = j, nl++) { /* (rows' weights as they were: all 1 or summaries) */
		double v = level_var(out, p, i, &j, &m);
		if (!(v > 0) || p->w[i] != 1.0)
			return;
		if (nl < 64) {
			M2[nl] = m * m;
			V[nl] = v;
			D[nl] = (double)(j - i - 1);
			top = v > top ? v : top;
		}
	}
	sb_error e;
	int line = nl <= 64 && cal_spread_line(M2, V, D, nl, &a, &b, &lo, &hi, &e) >= 0;
	for (size_t i = 0; i < p->n; i = j) {
		double v = level_var(out, p, i, &j, &m);
		if (line)
			v = cal_spread_at(a, b, m * m, top);
		for (size_t q = i; q < j; q++)
			p->w[q] = 1.0 / v;
	}
}

/* The linear fit into out->lin. With server timings it is refitted with
 * weights 1/fitted^2: server prompt times scatter in proportion to their
 * size (a 2048-token prefill varies by ms where a 16-token one varies by
 * us), and the short prompts that pin down the intercept must not drown. */
static int fit_linear_terms(const cal_engine *g, pf_points *p, cal_prefill *out, sb_error *e)
{
	design(g, out, p, 2);
	if (!out->timings)
		level_weights(out, p);
	int r = sb_linfit_run(p->X, p->y, p->w, p->n, 2, &out->lin, e);
	if (r < 0 || !out->timings)
		goto out;
	int ok = 1;
	for (size_t i = 0; i < p->n; i++) {
		/* (a line can go below 0 at short prompts when prefill is
		 * superlinear: then the observed time stands in) */
		double v = out->lin.fitted[i] > 0 ? out->lin.fitted[i] : p->y[i];
		ok &= v > 0;
		p->w[i] = v > 0 ? 1.0 / (v * v) : 1.0;
	}
	sb_linfit_fini(&out->lin);
	if (!ok)
		for (size_t i = 0; i < p->n; i++)
			p->w[i] = 1.0;
	r = sb_linfit_run(p->X, p->y, p->w, p->n, 2, &out->lin, e);
out:
	if (r < 0)
		sb_error_prefix(e, "prefill fit");
	return r;
}

/* The F-test of the P(P-1)/2 term (3 lengths and 4 points needed) into
 * out->quad, attn, F and p_value. */
static int test_attention(const cal_engine *g, pf_points *p, cal_prefill *out, sb_error *e)
{
	out->F = out->p_value = NAN;
	if (out->distinct < 3 || p->n < 4) {
		out->attn = CAL_ATTN_UNTESTED;
		return 0;
	}
	design(g, out, p, 3);
	int r = sb_linfit_run(p->X, p->y, p->w, p->n, 3, &out->quad, e);
	if (r < 0) {
		sb_error_prefix(e, "prefill fit (quadratic)");
		return r;
	}
	out->p_value = sb_linfit_ftest(&out->lin, &out->quad, &out->F);
	if (out->p_value < 0.05 && out->quad.coef[2] > 0 && out->quad.ci_lo[2] > 0)
		out->attn = CAL_ATTN_KEPT;
	else
		out->attn = out->quad.coef[2] <= 0 ? CAL_ATTN_NOT_POSITIVE : CAL_ATTN_NOT_SIGNIFICANT;
	return 0;
}

/* With server timings the overhead is TTFT - prompt_ms. It grows with the
 * prompt (the server tokenises it, and the JSON gets longer, outside the
 * engine), so it is fitted as a line in the prompt tokens sent when the
 * lengths differ and the slope is positive and significant; else it is the
 * mean. Sets g's overhead terms and out's overhead, slope. */
static void overhead_from_timings(const pf_points *p, cal_engine *g, cal_prefill *out)
{
	const double *ov = p->ov, *Pin = p->ovP;
	size_t n = p->n_ov;
	double s = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		s += ov[i];
	double m = n ? s / (double)n : 0;
	for (size_t i = 0; i < n; i++)
		ss += (ov[i] - m) * (ov[i] - m);
	g->overhead_ms = m;
	g->overhead_se = n > 1 ? sqrt(ss / (double)(n - 1) / (double)n) : NAN;
	g->overhead_ms_per_token = 0;
	double to = n > 1 ? sb_linfit_t95((double)(n - 1)) : NAN;
	out->overhead = (cal_coef_value){ m, m - to * g->overhead_se, m + to * g->overhead_se };
	out->overhead_how = CAL_OVH_TIMINGS_MEAN;
	out->slope_state = CAL_SLOPE_UNTESTED;
	out->overhead_slope_se = out->overhead_slope_cov = NAN;
	int distinct = 0;
	for (size_t i = 1; i < n; i++)
		distinct |= Pin[i] > 1.1 * Pin[0] + 1 || Pin[0] > 1.1 * Pin[i] + 1;
	sb_linfit f;
	sb_error e;
	if (!(n >= 4 && distinct && sb_linfit_line(Pin, ov, NULL, n, &f, &e) == 0))
		return;
	if (f.has_ci && f.ci_lo[1] > 0 && f.coef[0] >= 0) {
		g->overhead_ms = f.coef[0];
		g->overhead_se = f.se[0];
		g->overhead_ms_per_token = f.coef[1];
		out->overhead = (cal_coef_value){ f.coef[0], f.ci_lo[0], f.ci_hi[0] };
		out->overhead_how = CAL_OVH_TIMINGS_LINE;
		out->slope_state = CAL_SLOPE_KEPT;
		out->overhead_slope = (cal_coef_value){ f.coef[1], f.ci_lo[1], f.ci_hi[1] };
		out->overhead_slope_se = f.se[1];
		out->overhead_slope_cov = f.cov[0][1];
	} else {
		out->slope_state = CAL_SLOPE_DROPPED;
		out->overhead_slope = (cal_coef_value){ 0, f.has_ci ? f.ci_lo[1] : NAN,
							f.has_ci ? f.ci_hi[1] : NAN };
	}
	sb_linfit_fini(&f);
}

/* The intercept split into prefill_base and overhead: from the server's
 * prompt_ms fit with timings (overhead_from_timings), else by taking
 * prefill_base = decode_ms(1). */
static void split_intercept(const pf_points *p, const sb_linfit *f, cal_engine *g,
			    cal_prefill *out)
{
	if (out->timings) {
		out->prefill_base = (cal_coef_value){ f->coef[0], f->has_ci ? f->ci_lo[0] : NAN,
						      f->has_ci ? f->ci_hi[0] : NAN };
		g->prefill_base_ms = f->coef[0];
		overhead_from_timings(p, g, out);
		out->prefill_base_clamped = g->prefill_base_ms < 0;
		if (out->prefill_base_clamped)
			g->prefill_base_ms = 0;
		out->overhead_clamped = g->overhead_ms < 0;
		if (out->overhead_clamped)
			g->overhead_ms = 0;
		return;
	}
	double t95 = f->has_ci ? sb_linfit_t95((double)(f->n - f->p)) : NAN;
	double icpt = f->coef[0];
	double se = f->has_ci ? sqrt(f->se[0] * f->se[0] +
				     (isfinite(g->decode_1_se) ? g->decode_1_se * g->decode_1_se : 0))
			      : NAN;
	g->prefill_base_ms = g->decode_1_ms;
	g->overhead_ms = icpt;
	g->overhead_se = se;
	out->overhead_how = CAL_OVH_INTERCEPT;
	if (icpt < 0) {
		g->overhead_ms = 0;
		g->prefill_base_ms = g->decode_1_ms + icpt > 0 ? g->decode_1_ms + icpt : 0;
		out->overhead_how = CAL_OVH_INTERCEPT_NEGATIVE;
	}
	out->overhead = (cal_coef_value){ g->overhead_ms, g->overhead_ms - t95 * se,
					  g->overhead_ms + t95 * se };
	out->prefill_base = (cal_coef_value){ g->prefill_base_ms, NAN, NAN };
}

/* The chosen fit's per-token slope into g; a slope that is not positive is
 * set to 0 when zero within its interval or negligible (under 2% of the
 * mean time over the lengths measured), else -EINVAL. */
static int take_slope(const sb_linfit *f, double ymean, double pspan, cal_engine *g,
		      cal_prefill *out, sb_error *e)
{
	g->prefill_ms_per_token = f->coef[1];
	g->prefill_attn_ms = out->attn == CAL_ATTN_KEPT ? f->coef[2] : 0.0;
	out->ppt_fitted = f->coef[1];
	if (g->prefill_ms_per_token > 0)
		return 0;
	/* Flat within the noise, or falling by less than 2% of the time over
	 * the lengths measured: a server whose prefill is too cheap to see.
	 * Clearly falling: the data are inconsistent. */
	double fall = -g->prefill_ms_per_token * pspan;
	if (!(f->has_ci && f->ci_hi[1] >= 0) && !(fall <= 0.02 * ymean))
		return sb_error_set(e, "TTFT at concurrency 1 falls as the prompt grows "
				       "(per_prefill_token = %g ms/token): the prompt-length "
				       "runs look inconsistent (cached prompts?)",
				    g->prefill_ms_per_token);
	out->ppt_zeroed = 1;
	out->ppt_fall_ms = fall;
	g->prefill_ms_per_token = 0;
	return 0;
}

/* The fit proper, once the points are in p. */
static int fit_points(const cal_data *d, cal_engine *g, pf_points *p, cal_prefill *out,
		      sb_error *e)
{
	(void)d;
	out->timings = p->n_t == p->n;
	if (out->timings)
		memcpy(p->y, p->yt, p->n * sizeof(double));
	double pmin, pmax, ymean = 0;
	for (size_t i = 0; i < p->n; i++)
		ymean += p->y[i] / (double)p->n;
	long distinct = distinct_lengths(out->P, p->n, &pmin, &pmax);
	if (distinct < 0)
		return (int)distinct;
	out->distinct = (size_t)distinct;
	if (distinct < 2)
		return sb_error_set(e, "TTFT at concurrency 1 was measured at one prompt length only "
				       "(%g tokens): per_prefill_token needs two or more, well apart "
				       "(e.g. servebench run --concurrency 1 --input-len 16 and "
				       "--input-len 2048)", pmin);
	int r = fit_linear_terms(g, p, out, e);
	if (r == 0)
		r = test_attention(g, p, out, e);
	if (r == 0)
		r = take_slope(cal_prefill_chosen(out), ymean, pmax - pmin, g, out, e);
	if (r == 0)
		split_intercept(p, cal_prefill_chosen(out), g, out);
	return r;
}

int cal_prefill_fit(const cal_data *d, cal_engine *g, cal_prefill *out, sb_error *e)
{
	size_t cap = d->n_lv + d->n_rq;
	pf_points p = { malloc(3 * cap * sizeof(double)), malloc(cap * sizeof(double)),
			malloc(cap * sizeof(double)), malloc(cap * sizeof(double)),
			malloc(cap * sizeof(double)), malloc(cap * sizeof(double)), 0, 0, 0 };
	out->P = malloc(cap * sizeof(double));
	out->lvi = malloc(cap * sizeof(size_t));
	int r;
	if (!p.X || !p.y || !p.yt || !p.w || !p.ov || !p.ovP || !out->P || !out->lvi) {
		r = -ENOMEM;
	} else {
		prefill_points(d, g, &p, out);
		out->n = p.n;
		if (p.n == 0)
			r = sb_error_set(e, "no TTFT at concurrency 1: the prefill fit needs "
					    "single-client runs at two or more prompt lengths "
					    "(servebench run --concurrency 1 --input-len 16, then 2048)");
		else
			r = fit_points(d, g, &p, out, e);
	}
	free(p.X);
	free(p.y);
	free(p.yt);
	free(p.w);
	free(p.ov);
	free(p.ovP);
	return r;
}
