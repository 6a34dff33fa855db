/* release.c — the end-of-request cost from closed-loop throughput (see
 * release.h). */
#include "calibrate/release.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>

/* A cycle shorter than E2E by more than this share cannot be a closed-loop
 * client's (it waits for its response): that throughput is not the level's
 * completion rate (the guide's Experiment 2 prints a per-stream decode rate). */
#define IMPLAUSIBLE 0.05

/* With records: the median over k of send[c + k] - done[k] (times sorted):
 * with c clients the k-th completion is followed by the (c + k)-th send.
 * NaN when there are too few requests or no memory. */
static double records_gap(const cal_data *d, const cal_level *L)
{
	size_t n = L->nrq, c = (size_t)L->c;
	if (n < c + 2)
		return NAN;
	double *s = malloc(2 * n * sizeof *s), *t = s + n;
	if (!s)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		s[i] = d->rqs[L->rq0 + i].t_sent;
		t[i] = d->rqs[L->rq0 + i].t_done;
	}
	qsort(s, n, sizeof *s, sb_cmp_double);
	qsort(t, n, sizeof *t, sb_cmp_double);
	for (size_t k = 0; k + c < n; k++)
		t[k] = (s[k + c] - t[k]) * 1000.0;
	qsort(t, n - c, sizeof *t, sb_cmp_double);
	size_t m = n - c;
	double med = m % 2 ? t[m / 2] : (t[m / 2 - 1] + t[m / 2]) / 2;
	free(s);
	return med;
}

/* The gap of level L (NaN when its throughput or lengths are missing or it
 * queued): from its records when it has them, else from its summary. */
static double level_gap(const cal_data *d, const cal_level *L, int slots, double *cycle)
{
	*cycle = NAN;
	if (L->c > slots || !isfinite(L->e2e))
		return NAN;
	if (L->use_reqs) {
		double g = records_gap(d, L);
		*cycle = L->e2e + g;
		return g;
	}
	if (!(L->out_tok_s > 0) || !(L->N >= 1))
		return NAN;
	*cycle = L->c * L->N / L->out_tok_s * 1000.0;
	return *cycle - L->e2e;
}

/* Mean and t interval of the gaps of slot count S into t. */
static void entry_of(const cal_release *r, int S, cal_release_entry *t)
{
	double s = 0, ss = 0;
	int n = 0;
	for (size_t i = 0; i < r->n_pts; i++)
		if (r->pts[i].slots == S) {
			s += r->pts[i].gap_ms;
			n++;
		}
	double mean = s / n;
	for (size_t i = 0; i < r->n_pts; i++)
		if (r->pts[i].slots == S)
			ss += (r->pts[i].gap_ms - mean) * (r->pts[i].gap_ms - mean);
	t->slots = S;
	t->n = n;
	t->value_ms = mean > 0 ? mean : 0;
	t->lo_ms = t->hi_ms = NAN;
	if (n >= 2) {
		double h = gsl_cdf_tdist_Pinv(0.975, n - 1) * sqrt(ss / (n - 1) / n);
		t->lo_ms = mean - h;
		t->hi_ms = mean + h;
	}
}

int cal_release_fit(const cal_data *d, const cal_slots *s, cal_release *out)
{
	out->pts = calloc(d->n_lv ? d->n_lv : 1, sizeof *out->pts);
	if (!out->pts)
		return -ENOMEM;
	for (size_t l = 0; l < d->n_lv; l++) {
		const cal_level *L = &d->lvs[l];
		int S = s->files[L->file].slots;
		cal_release_point p = { l, S, NAN, L->e2e, NAN };
		p.gap_ms = level_gap(d, L, S, &p.cycle_ms);
		if (p.gap_ms < -IMPLAUSIBLE * p.e2e_ms)
			out->n_dropped++;
		else if (isfinite(p.gap_ms))
			out->pts[out->n_pts++] = p;
	}
	/* slot counts ascending, one entry each */
	int last = 0;
	while (out->n_tab < SB_MODEL_MAX_DECODE) {
		int next = 0;
		for (size_t i = 0; i < out->n_pts; i++)
			if (out->pts[i].slots > last && (!next || out->pts[i].slots < next))
				next = out->pts[i].slots;
		if (!next)
			break;
		entry_of(out, next, &out->tab[out->n_tab++]);
		last = next;
	}
	return 0;
}

void cal_release_fini(cal_release *r)
{
	free(r->pts);
	r->pts = NULL;
	r->n_pts = 0;
}
