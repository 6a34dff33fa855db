/* cache.c — the prompt cache from shared-prefix measurements (cache.h). */
#include "calibrate/cache.h"

#include <math.h>
#include <string.h>

#include "calibrate/fit_linear.h"

/* What the engine says a request's TTFT is without its c reused tokens:
 * the overhead for the Pin tokens it sent, the prefill of the p tokens it
 * processed (cal_engine_prefill_ms), and the attention those p tokens pay
 * to the c reused ones before them. */
static double rest_ms(const cal_engine *g, double Pin, double p, double c)
{
	return cal_engine_overhead_ms(g, Pin) + cal_engine_prefill_ms(g, p) +
	       g->prefill_attn_ms * c * p;
}

/* The variance of rest_ms for p tokens processed after c reused ones: the
 * prefill fit's covariance over its columns (prefill.c: steps or 1, P,
 * P(P-1)/2 for the attention term when kept), an attention term tested and
 * dropped with the spread its three-term fit gave it (as covariance.c
 * keeps it: reused tokens' positions make it count), and the overhead's
 * with server timings (fitted apart); NaN when the fit has none. */
static double rest_var(const cal_engine *g, const cal_prefill *pf, double p, double c)
{
	const sb_linfit *f = cal_prefill_chosen(pf);
	if (!f || !f->has_ci)
		return NAN;
	double x[3] = { pf->timings ? (double)cal_engine_prefill_steps(g, p) : 1.0, p,
			c * p + p * (p - 1.0) / 2.0 };
	size_t k = f->p < 3 ? f->p : 3;
	double v = 0;
	for (size_t i = 0; i < k; i++)
		for (size_t j = 0; j < k; j++)
			v += x[i] * x[j] * f->cov[i][j];
	if (k == 2 && (pf->attn == CAL_ATTN_NOT_POSITIVE || pf->attn == CAL_ATTN_NOT_SIGNIFICANT) &&
	    pf->quad.has_ci && isfinite(pf->quad.se[2]))
		v += x[2] * x[2] * pf->quad.se[2] * pf->quad.se[2];
	if (pf->timings)
		v += isfinite(g->overhead_se) ? g->overhead_se * g->overhead_se : NAN;
	return v;
}

/* Sums over the usable requests: the reusing ones' line through 0 (x the
 * reused tokens, y the TTFT left over) and the others' excess. */
typedef struct acc {
	double sxx, sxy, syy, n_hit, cached, processed, miss, miss2, miss_p, n_miss;
} acc;

/* The hits of a and b together (their misses too). */
static acc acc_sum(const acc *a, const acc *b)
{
	return (acc){ a->sxx + b->sxx,	       a->sxy + b->sxy,	    a->syy + b->syy,
		      a->n_hit + b->n_hit,     a->cached + b->cached, a->processed + b->processed,
		      a->miss + b->miss,       a->miss2 + b->miss2,   a->miss_p + b->miss_p,
		      a->n_miss + b->n_miss };
}

/* The prefix groups by recency (stack[0] the last one sent), n of them. */
enum { GROUPS = 256 };
typedef struct recency {
	long stack[GROUPS];
	int n;
} recency;

/* Counts where request q's reuse fell (when `count`) by its group's
 * recency, the other groups sent since its last request, and returns 1
 * when that is beyond the S most recent groups (a reuse there is a restore
 * from a cache beyond the slots), else 0. One client on S slots that each
 * keep their last prompt holds the S most recent groups (a prompt takes
 * the slot holding its prefix, else the one released longest ago), so a
 * reuse beyond them needs a shared cache, and a group sent before but
 * beyond them reusing nothing says there is none. Then q's group is the
 * most recent. Warm-up requests only move it. */
static int place(const sb_reqrec *q, int hit, int count, long S, recency *r, cal_cache *out)
{
	long g = q->prefix_group;
	if (g < 0)
		return 0;
	int at = 0;
	while (at < r->n && r->stack[at] != g)
		at++;
	int beyond = S > 0 && at < r->n && at >= S;
	if (count && beyond) {
		if (hit)
			out->beyond_slots++;
		else
			out->missed_beyond++;
	} else if (count && hit) {
		out->within_slots++;
	}
	if (at == r->n && r->n < GROUPS)
		r->n++;
	for (int i = at < r->n ? at : r->n - 1; i > 0; i--)
		r->stack[i] = r->stack[i - 1];
	r->stack[0] = g;
	return beyond;
}

/* Reads r's one-client levels into a[0] (reuses among the slots' last
 * prompts, and the requests that reused nothing) and a[1] (reuses beyond
 * them: restores). */
static void read_file(const sb_results *r, const cal_engine *g, long slots, cal_cache *out,
		      acc *a2)
{
	long S = r->target.slots > 0 ? r->target.slots : slots;
	for (size_t li = 0; li < r->n_levels; li++) {
		const sb_rlevel *rl = &r->levels[li];
		if (rl->sum.mode != SB_MODE_CONCURRENCY || rl->sum.level != 1)
			continue;
		recency rec = { .n = 0 };
		for (size_t i = 0; i < rl->n_reqs; i++) {
			const sb_reqrec *q = &rl->reqs[i];
			const sb_server_timing *t = &rl->timing[i];
			int timed = t->prompt_n >= 1 && t->cache_n >= 0;
			/* a reuse of its prefix, not of a chat template's first
			 * tokens that every prompt shares */
			int hit = timed && t->cache_n >= 0.5 * (double)r->workload.prefix_len;
			int beyond = !q->err_class && timed && place(q, hit, !q->warmup, S, &rec, out);
			acc *a = &a2[hit && beyond];
			if (q->warmup || q->err_class || !isfinite(q->ttft_ms))
				continue;
			if (!timed) {
				out->untimed++;
				continue;
			}
			out->requests++;
			double c = t->cache_n, Pin = q->prompt_tokens >= 1 ? (double)q->prompt_tokens
									: t->prompt_n + c;
			double y = q->ttft_ms - rest_ms(g, Pin, t->prompt_n, c);
			if (hit) {
				a->sxx += c * c;
				a->sxy += c * y;
				a->syy += y * y;
				a->n_hit++;
				a->cached += c;
				a->processed += t->prompt_n;
			} else {
				a->miss += y;
				a->miss2 += y * y;
				a->miss_p += t->prompt_n;
				a->n_miss++;
			}
		}
	}
}

/* The line through 0 of a's hits (at least one): *v the cost per reused
 * token (with its 95% interval from 2 hits on), *se its standard error
 * (the line's own and the rest's at the hits' mean shape, over their mean
 * reused tokens: every hit shares that error, so it does not average
 * down), *clamped when negative. */
static void cost_line(const acc *a, const cal_engine *g, const cal_prefill *pf,
		      cal_coef_value *v, double *se, int *clamped)
{
	double b = a->sxy / a->sxx, mean = a->cached / a->n_hit;
	*v = (cal_coef_value){ b, NAN, NAN };
	*se = NAN;
	if (a->n_hit >= 2) {
		double ss = a->syy - b * a->sxy; /* sum of (y - b x)^2 */
		double own = (ss > 0 ? ss : 0) / (a->n_hit - 1) / a->sxx;
		double rest = rest_var(g, pf, a->processed / a->n_hit, mean) / (mean * mean);
		*se = sqrt(own + (isfinite(rest) ? rest : 0));
		double h = sb_linfit_t95(a->n_hit - 1) * *se;
		v->lo = b - h;
		v->hi = b + h;
	}
	*clamped = b < 0;
}

void cal_cache_fit(const cal_data *d, const cal_engine *g, const cal_prefill *pf, int slots,
		   cal_cache *out)
{
	memset(out, 0, sizeof(*out));
	out->miss_excess_ms = out->mean_cached = out->per_token_se = NAN;
	out->per_restored_se = out->restored_t = NAN;
	out->per_token = out->per_restored = (cal_coef_value){ NAN, NAN, NAN };
	acc a[2];
	memset(a, 0, sizeof(a));
	for (size_t f = 0; f < d->n_in; f++) {
		const sb_results *r = d->in[f].res;
		if (!r->has_workload || r->workload.prefix_len <= 0)
			continue;
		out->files++;
		read_file(r, g, slots, out, a);
	}
	acc all = acc_sum(&a[0], &a[1]);
	out->hits = (long)all.n_hit;
	out->miss_excess_h95 = NAN;
	if (all.n_miss > 0)
		out->miss_excess_ms = all.miss / all.n_miss;
	if (all.n_miss >= 2) {
		double m = out->miss_excess_ms;
		double s2 = (all.miss2 - all.n_miss * m * m) / (all.n_miss - 1);
		double v = (s2 > 0 ? s2 : 0) / all.n_miss + rest_var(g, pf, all.miss_p / all.n_miss, 0);
		out->miss_excess_h95 = sb_linfit_t95(all.n_miss - 1) * sqrt(v);
	}
	if (out->requests == 0)
		return; /* no timings: the cache is not measured */
	out->kind = out->hits == 0 ? SB_PCACHE_NONE
		    : out->beyond_slots > out->missed_beyond ? SB_PCACHE_RAM
							 : SB_PCACHE_SLOT;
	if (out->hits == 0)
		return;
	out->mean_cached = all.cached / all.n_hit;
	/* a ram cache with reuses both ways: a slot's own and a restore apart
	 * when their costs differ beyond their errors (95%, Student t on the
	 * smaller line's degrees of freedom), else one line for both */
	if (out->kind == SB_PCACHE_RAM && a[0].n_hit >= 2 && a[1].n_hit >= 2) {
		cal_coef_value v[2];
		double se[2];
		int cl[2];
		for (int i = 0; i < 2; i++)
			cost_line(&a[i], g, pf, &v[i], &se[i], &cl[i]);
		double n = a[0].n_hit < a[1].n_hit ? a[0].n_hit : a[1].n_hit;
		out->restored_t = (v[1].value - v[0].value) / sqrt(se[0] * se[0] + se[1] * se[1]);
		if (fabs(out->restored_t) > sb_linfit_t95(n - 1)) {
			out->per_token = v[0];
			out->per_token_se = se[0];
			out->clamped = cl[0];
			out->per_restored = v[1];
			out->per_restored_se = se[1];
			out->restored_clamped = cl[1];
			return;
		}
	}
	cost_line(&all, g, pf, &out->per_token, &out->per_token_se, &out->clamped);
}
