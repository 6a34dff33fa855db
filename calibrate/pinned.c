/* pinned.c — decode passes from levels pinned to slots (pinned.h). */
#include "calibrate/pinned.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/fit_linear.h"

void cal_pinned_fini(cal_pinned *p)
{
	if (!p)
		return;
	free(p->lv);
	p->lv = NULL;
	p->n_lv = 0;
}

/* A request's TPOT: the server's decode time per token after the first
 * (llama.cpp's predicted_ms covers predicted_n - 1 gaps), else the
 * client's. NaN with fewer than two output tokens. */
static double request_tpot(const sb_reqrec *q, const sb_server_timing *t)
{
	if (isfinite(t->predicted_ms) && t->predicted_n >= 2)
		return t->predicted_ms / (t->predicted_n - 1);
	if (q->output_tokens >= 2 && isfinite(q->e2e_ms) && isfinite(q->ttft_ms))
		return (q->e2e_ms - q->ttft_ms) / (double)(q->output_tokens - 1);
	return NAN;
}

/* Sorting requests by send time: their indices, by t_sent of the base. */
static _Thread_local const sb_reqrec *sort_reqs;

static int cmp_sent(const void *a, const void *b)
{
	double x = sort_reqs[*(const size_t *)a].t_sent_s, y = sort_reqs[*(const size_t *)b].t_sent_s;
	return (x > y) - (x < y);
}

/* The means of the TPOTs t[0..n) (request indices idx, sorted by send
 * time) per wave: requests sent within half a request's E2E of the wave's
 * first are one wave. A wave's requests decode in the same steps, so they
 * share every step's noise: the wave, not the request, is one independent
 * measurement. Writes the means over t; returns their number. */
static long wave_means(const sb_reqrec *q, const size_t *idx, double *t, long n)
{
	long w = 0;
	for (long i = 0; i < n;) {
		const sb_reqrec *first = &q[idx[i]];
		double gap = isfinite(first->e2e_ms) ? first->e2e_ms / 2000.0 : 0;
		double s = 0;
		long k = 0;
		while (i + k < n && q[idx[i + k]].t_sent_s - first->t_sent_s <= gap) {
			s += t[i + k];
			k++;
		}
		if (k == 0) /* a NaN send time: a wave of its own */
			s = t[i], k = 1;
		t[w++] = s / (double)k;
		i += k;
	}
	return w;
}

/* Level li of pinned input f into *L; the means of its waves' TPOTs
 * appended to y (room for the level's requests). Returns the number
 * appended (L->n: the requests behind them). */
static long read_level(const sb_results *res, size_t f, size_t li, cal_pin_level *L, double *y)
{
	const sb_rlevel *rl = &res->levels[li];
	double ctx = 0;
	long n = 0;
	size_t *idx = malloc((rl->n_reqs ? rl->n_reqs : 1) * sizeof *idx);
	memset(L, 0, sizeof(*L));
	if (!idx)
		return 0;
	for (size_t i = 0; i < rl->n_reqs; i++) {
		const sb_reqrec *q = &rl->reqs[i];
		double t = q->err_class ? NAN : request_tpot(q, &rl->timing[i]);
		if (!isfinite(t))
			continue;
		double P = isfinite(rl->timing[i].prompt_n) && rl->timing[i].prompt_n >= 1
				   ? rl->timing[i].prompt_n + (isfinite(rl->timing[i].cache_n)
								       ? rl->timing[i].cache_n
								       : 0)
				   : (double)q->prompt_tokens;
		ctx += P + (double)q->output_tokens / 2.0;
		idx[n++] = i;
	}
	L->file = f;
	L->stride = (int)res->target.pin_stride;
	L->batch = (int)rl->sum.level;
	L->ctx = n ? ctx / (double)n * L->batch : NAN;
	sort_reqs = rl->reqs;
	qsort(idx, (size_t)n, sizeof *idx, cmp_sent);
	for (long i = 0; i < n; i++)
		y[i] = request_tpot(&rl->reqs[idx[i]], &rl->timing[idx[i]]);
	double *c = n ? sb_sorted_copy(y, (size_t)n) : NULL;
	if (!c) {
		free(idx);
		return 0;
	}
	L->tpot_ms = sb_median_sort(c, (size_t)n);
	free(c);
	/* a request whose decode took another's prefill step (one of the wave
	 * reached the server a step late), or ran with fewer beside it (a wave
	 * cut short), was not a pass of B: left out */
	long kept = 0;
	for (long i = 0; i < n; i++)
		if (y[i] <= 1.5 * L->tpot_ms && y[i] >= L->tpot_ms / 1.5) {
			idx[kept] = idx[i];
			y[kept++] = y[i];
		}
	L->n = kept;
	L->waves = wave_means(rl->reqs, idx, y, kept);
	free(idx);
	return L->waves;
}

/* The points (waves) of batch B (stride 1) into x/y; returns their number
 * and sets *times to how many levels (measurements) hold them, *reqs to
 * their requests. */
static size_t batch_points(const cal_pinned *p, const double *ys, const long *y0, int B,
			   double *x, double *y, int *times, long *reqs)
{
	size_t n = 0;
	*times = 0;
	*reqs = 0;
	for (size_t l = 0; l < p->n_lv; l++) {
		const cal_pin_level *L = &p->lv[l];
		if (L->stride != 1 || L->batch != B || L->n == 0)
			continue;
		(*times)++;
		*reqs += L->n;
		for (long i = 0; i < L->waves; i++) {
			x[n] = L->ctx;
			y[n++] = ys[y0[l] + i];
		}
	}
	return n;
}

/* decode_ms(B) and decode_kv(B) from n points (waves): a line when the
 * contexts are a factor 1.5 apart and its slope is not negative, else the
 * mean at kv; t->dof: the degrees of freedom of its standard errors. */
static int fit_entry(const double *x, const double *y, size_t n, double kv, cal_pin_entry *t,
		     sb_error *e)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		lo = fmin(lo, x[i]);
		hi = fmax(hi, x[i]);
	}
	if (n >= 3 && hi >= 1.5 * lo) {
		sb_linfit f;
		int r = sb_linfit_line(x, y, NULL, n, &f, e);
		if (r < 0)
			return r;
		int ok = f.coef[1] >= 0;
		if (ok) {
			t->ms = f.coef[0];
			t->ms_se = f.se[0];
			t->kv = f.coef[1];
			t->kv_se = f.se[1];
			t->ms_kv_cov = f.has_ci ? f.cov[0][1] : NAN;
			t->kv_fitted = 1;
			t->dof = (long)n - 2;
		}
		sb_linfit_fini(&f);
		if (ok)
			return 0;
		kv = 0;
	}
	double s = 0, s2 = 0;
	for (size_t i = 0; i < n; i++) {
		double v = y[i] - kv * x[i];
		s += v;
		s2 += v * v;
	}
	t->ms = s / (double)n;
	t->ms_se = n > 1 ? sqrt(fmax(0, s2 / (double)n - t->ms * t->ms) / (double)(n - 1)) : NAN;
	t->kv = kv;
	t->kv_se = NAN;
	t->ms_kv_cov = NAN;
	t->dof = (long)n - 1;
	return 0;
}

/* The layout from a stride-2 level of batch 2 (slots 0 and 2): per-slot,
 * two passes of one; unified, one pass of two. */
static void fit_layout(const cal_engine *g, cal_pinned *p)
{
	const cal_pin_entry *two = NULL;
	for (int i = 0; i < p->n_tab; i++)
		if (p->tab[i].batch == 2)
			two = &p->tab[i];
	/* a single request measured in the same part (slot 0), else the
	 * concurrency-1 fit: the pass of one the pair is compared with */
	double one = NAN;
	for (size_t l = 0; l < p->n_lv; l++)
		if (p->lv[l].stride == 2 && p->lv[l].batch == 1 && p->lv[l].n > 0)
			one = p->lv[l].tpot_ms;
	for (size_t l = 0; l < p->n_lv && two; l++) {
		const cal_pin_level *L = &p->lv[l];
		if (L->stride != 2 || L->batch != 2 || L->n == 0)
			continue;
		p->has_layout = 1;
		p->strided_ms = L->tpot_ms;
		p->per_slot_ms = isfinite(one) ? 2 * one
					       : 2 * (g->decode_1_ms + g->kv_ms_per_token * L->ctx / 2);
		p->unified_ms = two->ms + two->kv * L->ctx;
		p->layout = fabs(p->strided_ms - p->per_slot_ms) < fabs(p->strided_ms - p->unified_ms)
				    ? SB_KV_PER_SLOT
				    : SB_KV_UNIFIED;
	}
}

/* Reads the pinned inputs' levels into p->lv and their TPOTs into *ys
 * (offsets *y0, one per level). */
static int read_levels(const cal_data *d, cal_pinned *p, double **ys, long **y0, size_t *ny)
{
	size_t cap = 0, nl = 0;
	for (size_t f = 0; f < d->n_in; f++) {
		const sb_results *r = d->in[f].res;
		if (r->target.pin_stride <= 0)
			continue;
		for (size_t li = 0; li < r->n_levels; li++) {
			cap += r->levels[li].n_reqs;
			nl++;
		}
	}
	p->lv = calloc(nl ? nl : 1, sizeof(*p->lv));
	*ys = malloc((cap ? cap : 1) * sizeof(double));
	*y0 = malloc((nl ? nl : 1) * sizeof(long));
	if (!p->lv || !*ys || !*y0)
		return -ENOMEM;
	*ny = 0;
	for (size_t f = 0; f < d->n_in; f++) {
		const sb_results *r = d->in[f].res;
		if (r->target.pin_stride <= 0)
			continue;
		for (size_t li = 0; li < r->n_levels; li++) {
			if (r->levels[li].sum.mode != SB_MODE_CONCURRENCY)
				continue;
			(*y0)[p->n_lv] = (long)*ny;
			*ny += (size_t)read_level(r, f, li, &p->lv[p->n_lv], *ys + *ny);
			p->n_lv++;
		}
	}
	return 0;
}

int cal_pinned_fit(const cal_data *d, const cal_engine *g, cal_pinned *out, sb_error *e)
{
	double *ys = NULL, *x = NULL, *y = NULL;
	long *y0 = NULL;
	size_t ny = 0;
	int r = read_levels(d, out, &ys, &y0, &ny);
	x = malloc((ny ? ny : 1) * sizeof(double));
	y = malloc((ny ? ny : 1) * sizeof(double));
	if (r < 0 || !x || !y) {
		r = sb_error_code(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (int B = 2; B < SB_MODEL_MAX_DECODE && out->n_tab < SB_MODEL_MAX_DECODE; B++) {
		int times;
		long reqs;
		size_t n = batch_points(out, ys, y0, B, x, y, &times, &reqs);
		if (n == 0)
			continue;
		cal_pin_entry *t = &out->tab[out->n_tab];
		t->batch = B;
		t->remeasured = times > 2; /* two contexts make two levels */
		if ((r = fit_entry(x, y, n, g->kv_ms_per_token, t, e)) < 0)
			goto out;
		t->n = reqs;
		double prev = out->n_tab ? out->tab[out->n_tab - 1].ms : g->decode_1_ms;
		double prev_se = out->n_tab ? out->tab[out->n_tab - 1].ms_se : g->decode_1_se;
		double se = hypot(isfinite(t->ms_se) ? t->ms_se : 0, isfinite(prev_se) ? prev_se : 0);
		t->below = t->ms < prev - 2 * se;
		out->n_tab++;
	}
	fit_layout(g, out);
out:
	free(ys);
	free(y0);
	free(x);
	free(y);
	return r;
}
