/* decode1.c — decode step time at one sequence (decode1.h). */
#include "calibrate/decode1.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cal_decode1_fini(cal_decode1 *r)
{
	sb_linfit_fini(&r->f);
	free(r->lvi);
	free(r->x);
	r->lvi = NULL;
	r->x = NULL;
}

/* The TPOT points at concurrency 1 (per request, or a level median weighted
 * 2n/pi) into x (context), y, w and lvi; returns how many. */
static size_t tpot_points(const cal_data *d, double *x, double *y, double *w, size_t *lvi)
{
	size_t n = 0;
	for (size_t l = 0; l < d->n_lv; l++) {
		const cal_level *L = &d->lvs[l];
		if (L->c != 1 || L->N < 2)
			continue;
		if (L->use_reqs) {
			for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
				if (!isfinite(d->rqs[q].tpot))
					continue;
				x[n] = d->rqs[q].P + d->rqs[q].N / 2.0;
				y[n] = d->rqs[q].tpot;
				w[n] = 1.0;
				lvi[n++] = l;
			}
		} else {
			x[n] = L->P + L->N / 2.0;
			y[n] = L->tpot;
			w[n] = MEDIAN_WEIGHT(L->n_ok);
			lvi[n++] = l;
		}
	}
	return n;
}

/* Least squares of y on (1, x) or, with !*two, on 1 alone; a negative
 * slope is dropped (recorded in out->dropped_slope, *two = 0). The
 * covariance takes each level's own scatter (sb_linfit_group_var): a
 * level of 64-token answers scatters less than one of 32, and a pooled
 * variance let the short answers' levels, which set the context slope,
 * borrow the long ones' precision (per_kv_token varied 1.37 times its
 * standard error over 60 simulated calibrations, docs/accuracy.md). */
static int fit_line(const double *x, const double *y, const double *w, size_t n, int *two,
		    cal_decode1 *out, sb_error *e)
{
	double *X = malloc(2 * n * sizeof(double));
	if (!X)
		return -ENOMEM;
	int r;
	for (;;) {
		size_t p = *two ? 2 : 1;
		for (size_t i = 0; i < n; i++) {
			X[i * p] = 1.0;
			if (*two)
				X[i * p + 1] = x[i];
		}
		r = sb_linfit_run(X, y, w, n, p, &out->f, e);
		if (r < 0) {
			sb_error_prefix(e, "TPOT at concurrency 1");
			break;
		}
		if (*two && out->f.coef[1] < 0) {
			sb_linfit_group_var(&out->f, X, w, out->lvi, e);
			out->dropped_slope = out->f.coef[1];
			for (int i = 0; i < 4; i++)
				out->dropped_cov[i / 2][i % 2] =
					out->f.has_ci ? out->f.cov[i / 2][i % 2] : NAN;
			sb_linfit_fini(&out->f);
			*two = 0;
			continue;
		}
		r = sb_linfit_group_var(&out->f, X, w, out->lvi, e);
		if (r < 0)
			sb_error_prefix(e, "TPOT at concurrency 1");
		break;
	}
	free(X);
	return r;
}

int cal_decode1_fit(const cal_data *d, cal_engine *g, cal_decode1 *out, sb_error *e)
{
	size_t cap = d->n_lv + d->n_rq;
	double *y = malloc(cap * sizeof(double)), *w = malloc(cap * sizeof(double));
	out->x = malloc(cap * sizeof(double));
	out->lvi = malloc(cap * sizeof(size_t));
	out->dropped_slope = NAN;
	out->dropped_cov[1][1] = NAN;
	int r = 0;
	if (!y || !w || !out->x || !out->lvi) {
		r = -ENOMEM;
		goto out;
	}
	size_t n = tpot_points(d, out->x, y, w, out->lvi);
	if (n == 0) {
		r = sb_error_set(e, "no TPOT at concurrency 1: decode_ms(1) needs single-client "
				    "runs generating 2 or more tokens (servebench run "
				    "--concurrency 1 --output-len 64)");
		goto out;
	}
	double xmin = INFINITY, xmax = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		xmin = out->x[i] < xmin ? out->x[i] : xmin;
		xmax = out->x[i] > xmax ? out->x[i] : xmax;
	}
	/* a slope needs contexts a factor 1.5 apart: a few tokens of
	 * tokenizer jitter around one prompt length identify nothing */
	out->contexts_apart = xmax >= 1.5 * xmin;
	int two = xmax - xmin >= 1.0 && out->contexts_apart;
	r = fit_line(out->x, y, w, n, &two, out, e);
	if (r < 0)
		goto out;
	out->with_kv = two;
	g->decode_1_ms = out->f.coef[0];
	g->decode_1_se = out->f.has_ci ? out->f.se[0] : NAN;
	g->kv_ms_per_token = two ? out->f.coef[1] : 0;
	if (!(g->decode_1_ms > 0))
		r = sb_error_set(e, "TPOT at concurrency 1 gives decode_ms(1) = %g ms, which is "
				    "not positive: the TPOT measurements are inconsistent",
				 g->decode_1_ms);
out:
	free(y);
	free(w);
	return r;
}
