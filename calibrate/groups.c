/* groups.c — prompts prefilled together (groups.h). */
#include "calibrate/groups.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/fit_linear.h"
#include "core/model.h"

void cal_groups_fini(cal_groups *p)
{
	if (!p)
		return;
	free(p->st);
	p->st = NULL;
	p->n = 0;
}

/* One request of a group level, as the step grouping sees it. */
typedef struct grq {
	double t_first, ms, P;
	long slot;
} grq;

static int cmp_first(const void *a, const void *b)
{
	const grq *p = a, *q = b;
	return (p->t_first > q->t_first) - (p->t_first < q->t_first);
}

/* 1 when level rl is a group level: every successful request produced one
 * token, and some did. */
static int is_group_level(const sb_rlevel *rl)
{
	long ok = 0;
	for (size_t i = 0; i < rl->n_reqs; i++) {
		if (rl->reqs[i].err_class)
			continue;
		if (rl->reqs[i].output_tokens != 1)
			return 0;
		ok++;
	}
	return ok > 0 && rl->sum.mode == SB_MODE_CONCURRENCY;
}

/* The successful requests of rl into q (room for n_reqs); their step time
 * is the server's prompt_ms when every one has it (*timings 1), else TTFT
 * less g's overhead. Returns their number. */
static size_t level_requests(const sb_rlevel *rl, const cal_engine *g, grq *q, int *timings)
{
	size_t n = 0;
	*timings = 1;
	for (size_t i = 0; i < rl->n_reqs; i++)
		if (!rl->reqs[i].err_class)
			*timings &= isfinite(rl->timing[i].prompt_ms);
	for (size_t i = 0; i < rl->n_reqs; i++) {
		const sb_reqrec *r = &rl->reqs[i];
		const sb_server_timing *t = &rl->timing[i];
		if (r->err_class || !isfinite(r->ttft_ms))
			continue;
		double P = isfinite(t->prompt_n) && t->prompt_n >= 1
				   ? t->prompt_n + (isfinite(t->cache_n) ? t->cache_n : 0)
				   : (double)r->prompt_tokens;
		q[n] = (grq){ r->t_sent_s + r->ttft_ms / 1000.0,
			      *timings ? t->prompt_ms
				       : r->ttft_ms - cal_engine_overhead_ms(g, (double)r->prompt_tokens),
			      P, r->slot };
		n++;
	}
	qsort(q, n, sizeof(*q), cmp_first);
	return n;
}

/* Runs of consecutive slots among q[0..n) (1 when the slots are unknown). */
static int count_passes(const grq *q, size_t n)
{
	long s[SB_MODEL_MAX_DECODE * 4];
	size_t m = 0;
	for (size_t i = 0; i < n && m < sizeof(s) / sizeof(s[0]); i++) {
		if (q[i].slot < 0)
			return 1;
		s[m++] = q[i].slot;
	}
	for (size_t i = 1; i < m; i++) /* insertion sort: a handful of slots */
		for (size_t j = i; j > 0 && s[j] < s[j - 1]; j--) {
			long t = s[j];
			s[j] = s[j - 1];
			s[j - 1] = t;
		}
	int runs = m > 0;
	for (size_t i = 1; i < m; i++)
		runs += s[i] != s[i - 1] + 1;
	return runs;
}

/* The single-prompt model of a step: prefill_base per pass plus the prompt
 * work of each prompt. */
static double step_model(const cal_engine *g, const grq *q, size_t n, int passes)
{
	double ms = g->prefill_base_ms * passes;
	for (size_t i = 0; i < n; i++)
		ms += cal_engine_prefill_work_ms(g, q[i].P);
	return ms;
}

/* Cuts the sorted q[0..n) of input f's level `group` into steps, appended
 * to out->st: first tokens within a quarter of the shorter step time of
 * each other (and, with server timings, prompt_ms within 5%) share a step. */
static void cut_steps(const grq *q, size_t n, size_t f, double group, int timings,
		      const cal_engine *g, cal_groups *out)
{
	double tmp[SB_MODEL_MAX_DECODE * 4];
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && j - i < sizeof(tmp) / sizeof(tmp[0])) {
			double shorter = fmin(q[j].ms, q[j - 1].ms);
			int near = (q[j].t_first - q[j - 1].t_first) * 1000.0 < 0.25 * shorter;
			if (timings)
				near &= fabs(q[j].ms - q[j - 1].ms) <= 0.05 * fmax(q[j].ms, q[j - 1].ms);
			if (!near)
				break;
			j++;
		}
		size_t k = j - i;
		double tok = 0;
		for (size_t a = 0; a < k; a++) {
			tmp[a] = q[i + a].ms;
			tok += q[i + a].P;
		}
		qsort(tmp, k, sizeof(double), sb_cmp_double);
		cal_group_step *s = &out->st[out->n++];
		memset(s, 0, sizeof(*s));
		s->file = f;
		s->group = group;
		s->k = (int)k;
		s->passes = count_passes(q + i, k);
		s->tokens = tok;
		s->ms = k % 2 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2;
		s->model_ms = step_model(g, q + i, k, s->passes);
		i = j;
	}
}

/* Reads every group level of d into out->st. Returns 0 or -ENOMEM. */
static int read_steps(const cal_data *d, const cal_engine *g, cal_groups *out)
{
	size_t cap = 0;
	for (size_t f = 0; f < d->n_in; f++)
		if (d->in[f].res->target.pin_stride > 0)
			for (size_t l = 0; l < d->in[f].res->n_levels; l++)
				cap += d->in[f].res->levels[l].n_reqs;
	out->st = calloc(cap ? cap : 1, sizeof(*out->st));
	grq *q = malloc((cap ? cap : 1) * sizeof(*q));
	if (!out->st || !q) {
		free(q);
		return -ENOMEM;
	}
	out->timings = 1;
	for (size_t f = 0; f < d->n_in; f++) {
		const sb_results *r = d->in[f].res;
		if (r->target.pin_stride <= 0)
			continue;
		for (size_t l = 0; l < r->n_levels; l++) {
			if (!is_group_level(&r->levels[l]))
				continue;
			int timings;
			size_t n = level_requests(&r->levels[l], g, q, &timings);
			out->timings &= timings;
			cut_steps(q, n, f, r->levels[l].sum.level, timings, g, out);
		}
	}
	free(q);
	return 0;
}

/* The shape check: a step of k prompts cheaper than one of k - 1 (first
 * measurements: the first input holding each size). */
static int check_shape(cal_groups *out, cal_checks *chk)
{
	cal_obs *o = malloc((out->n ? out->n : 1) * sizeof(*o));
	int *drop = calloc(out->n ? out->n : 1, sizeof(int));
	int r = -ENOMEM;
	if (o && drop) {
		for (size_t i = 0; i < out->n; i++)
			o[i] = (cal_obs){ out->st[i].k, out->st[i].ms, out->st[i].file, i };
		r = cal_checks_series(o, out->n, 0.01, "prefill, prompts together",
				      "more prompts prefilled together take longer", drop, chk);
		for (size_t i = 0; r == 0 && i < out->n; i++)
			out->st[i].dropped = drop[i];
	}
	free(o);
	free(drop);
	return r;
}

/* ms = alpha * model + beta * (k - passes) over the kept steps (alpha = 1
 * when no step of one prompt tells the speed); per_prompt = beta / alpha. */
static int fit_steps(cal_groups *out, sb_error *e)
{
	size_t n = 0, singles = 0;
	double *X = malloc(2 * (out->n ? out->n : 1) * sizeof(double));
	double *y = malloc((out->n ? out->n : 1) * sizeof(double));
	double *w = malloc((out->n ? out->n : 1) * sizeof(double));
	double *ratio = malloc((out->n ? out->n : 1) * sizeof(double));
	int r = 0;
	if (!X || !y || !w || !ratio) {
		r = sb_error_code(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < out->n; i++)
		singles += !out->st[i].dropped && out->st[i].k == 1 && out->st[i].model_ms > 0;
	size_t p = singles > 0 ? 2 : 1;
	for (size_t i = 0; i < out->n; i++) {
		const cal_group_step *s = &out->st[i];
		if (s->dropped || !(s->model_ms > 0))
			continue;
		if (s->k > s->passes)
			ratio[out->n_multi++] = s->ms / s->model_ms;
		if (p == 2) {
			X[2 * n] = s->model_ms;
			X[2 * n + 1] = s->k - s->passes;
			y[n] = s->ms;
		} else {
			X[n] = s->k - s->passes;
			y[n] = s->ms - s->model_ms;
		}
		w[n++] = 1.0 / (s->model_ms * s->model_ms);
	}
	if (out->n_multi < 2 || n < p + 1)
		goto out;
	qsort(ratio, (size_t)out->n_multi, sizeof(double), sb_cmp_double);
	long m = out->n_multi;
	out->ratio_model = m % 2 ? ratio[m / 2] : (ratio[m / 2 - 1] + ratio[m / 2]) / 2;
	sb_linfit f;
	if ((r = sb_linfit_run(X, y, w, n, p, &f, e)) < 0) {
		sb_error_prefix(e, "prefill of prompts together");
		goto out;
	}
	double a = p == 2 ? f.coef[0] : 1, b = f.coef[p - 1];
	double va = p == 2 ? f.se[0] * f.se[0] : 0, vb = f.se[p - 1] * f.se[p - 1];
	double cab = p == 2 ? f.cov[0][1] : 0;
	out->speed = a;
	out->speed_se = p == 2 ? f.se[0] : NAN;
	out->per_prompt = b / a;
	out->se = sqrt(fmax(0, vb / (a * a) + b * b * va / (a * a * a * a) - 2 * b * cab / (a * a * a)));
	double t = sb_linfit_t95((double)(n - p));
	out->lo = out->per_prompt - t * out->se;
	out->hi = out->per_prompt + t * out->se;
	out->fitted = a > 0;
	sb_linfit_fini(&f);
out:
	free(X);
	free(y);
	free(w);
	free(ratio);
	return r;
}

/* out->sweep_drift: the steps of one prompt against the concurrency-1
 * requests of about the same length (within 10%) with server timings. */
static void sweep_drift(const cal_data *d, cal_groups *out)
{
	out->sweep_drift = NAN;
	size_t cap = out->n + d->n_rq, na = 0, nb = 0;
	double *a = malloc((cap ? cap : 1) * sizeof(double)), *b = a ? a + out->n : NULL;
	double P = NAN;
	for (size_t i = 0; a && i < out->n; i++)
		if (out->st[i].k == 1 && !out->st[i].dropped) {
			a[na++] = out->st[i].ms;
			P = out->st[i].tokens;
		}
	for (size_t q = 0; a && isfinite(P) && q < d->n_rq; q++) {
		const cal_request *R = &d->rqs[q];
		if (d->lvs[R->lv].c == 1 && !d->lvs[R->lv].shape_dropped &&
		    isfinite(R->prompt_ms) && fabs(R->P - P) <= 0.1 * P)
			b[nb++] = R->prompt_ms;
	}
	if (na && nb)
		out->sweep_drift = sb_median_sort(a, na) / sb_median_sort(b, nb);
	free(a);
}

int cal_groups_fit(const cal_data *d, cal_engine *g, cal_groups *out, cal_checks *chk,
		   sb_error *e)
{
	g->prefill_per_prompt_ms = 0;
	int r = read_steps(d, g, out);
	if (r == 0 && out->n > 0)
		r = check_shape(out, chk);
	if (r < 0)
		return sb_error_code(e, r, "out of memory");
	if (out->n == 0)
		return 0;
	sweep_drift(d, out);
	if ((r = fit_steps(out, e)) < 0 || !out->fitted)
		return r;
	/* kept only when its interval lies above 0: groups that cost what
	 * their prompts cost alone leave the model as it was */
	out->clamped = out->per_prompt < 0;
	out->not_significant = !out->clamped && !(out->lo > 0);
	g->prefill_per_prompt_ms = out->clamped || out->not_significant ? 0 : out->per_prompt;
	return 0;
}
