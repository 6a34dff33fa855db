/* admit.c — the admission delay of queued requests (admit.h). */
#include "calibrate/admit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* ---- admission delay ---------------------------------------------------- */

typedef struct tev {
	double t;
	size_t q; /* request index */
} tev;

static int cmp_tev(const void *a, const void *b)
{
	const tev *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t ? 1 : (x->q > y->q) - (x->q < y->q);
}

/* Step boundaries of one level seen in its records: every request's
 * launch, first token, later tokens (ITL) and completion, sorted. */
static double *level_boundaries(const cal_data *k, const cal_engine *g, const cal_level *L,
				size_t *nb)
{
	size_t cap = 0;
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++)
		cap += 3 + k->rqs[q].n_itl;
	double *b = malloc((cap ? cap : 1) * sizeof(double));
	if (!b)
		return NULL;
	size_t n = 0;
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
		const cal_request *R = &k->rqs[q];
		double o = cal_engine_overhead_ms(g, R->Pin);
		double qwait = R->wait - (L->wait_has_overhead ? o : 0);
		if (isfinite(qwait))
			b[n++] = R->t_sent + (o + (qwait > 0 ? qwait : 0)) / 1e3;
		double t = R->t_first;
		b[n++] = t;
		for (size_t i = 0; i < R->n_itl; i++)
			if (isfinite(R->itl[i]) && R->itl[i] > 0)
				b[n++] = t += R->itl[i] / 1e3;
		b[n++] = R->t_done;
	}
	qsort(b, n, sizeof(double), sb_cmp_double);
	*nb = n;
	return b;
}

/* The range [*x0, *x1] that the most intervals [lo, hi] share; returns how
 * many share it (ties: the widest range). O(n^2), n is small. */
static size_t stab(const double *lo, const double *hi, size_t n, double *x0, double *x1)
{
	size_t best = 0;
	*x0 = *x1 = NAN;
	for (size_t i = 0; i < n; i++) {
		double a = lo[i], z = INFINITY;
		size_t c = 0;
		for (size_t j = 0; j < n; j++)
			if (lo[j] <= a && a <= hi[j]) {
				c++;
				if (hi[j] < z)
					z = hi[j];
			}
		if (c > best || (c == best && z - a > *x1 - *x0)) {
			best = c;
			*x0 = a;
			*x1 = z;
		}
	}
	return best;
}

/* Brackets of level L's queued launches appended to hi[] and lo[] from *n:
 * each queued request, paired FIFO with the completion that freed its
 * slot, launched between the last step boundary seen before its launch
 * (tol: jitter) and its launch. ev: room for 2 per request. Returns 0 or
 * -ENOMEM. */
static int level_brackets(const cal_data *k, const cal_engine *g, const cal_level *L, double tol,
			  tev *ev, double *hi, double *lo, size_t *n)
{
	/* arrivals of queued requests (t, q) and completions (t, SIZE_MAX) */
	size_t ne = 0;
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
		const cal_request *R = &k->rqs[q];
		double o = cal_engine_overhead_ms(g, R->Pin);
		double qwait = R->wait - (L->wait_has_overhead ? o : 0);
		if (isfinite(qwait) && qwait > 0.5 * (isfinite(R->tpot) ? R->tpot : 1))
			ev[ne++] = (tev){ R->t_sent + o / 1e3, q };
		ev[ne++] = (tev){ R->t_done, (size_t)-1 };
	}
	qsort(ev, ne, sizeof(tev), cmp_tev);
	/* FIFO of waiting requests: indices into ev, head..tail */
	size_t head = 0, tail = 0, nb = 0;
	size_t *fifo = malloc((ne + 1) * sizeof(size_t));
	double *bd = level_boundaries(k, g, L, &nb);
	if (!fifo || !bd) {
		free(fifo);
		free(bd);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ne; i++) {
		if (ev[i].q != (size_t)-1) {
			fifo[tail++] = ev[i].q;
			continue;
		}
		if (head == tail)
			continue; /* nobody waiting: the slot goes free */
		const cal_request *R = &k->rqs[fifo[head++]];
		double o = cal_engine_overhead_ms(g, R->Pin);
		double qwait = R->wait - (L->wait_has_overhead ? o : 0);
		double launch = R->t_sent + (o + qwait) / 1e3;
		if (!(R->t_done > ev[i].t))
			continue;
		double prev = ev[i].t;
		for (size_t b = 0; b < nb && bd[b] < launch - tol; b++)
			if (bd[b] > prev)
				prev = bd[b];
		double h = (launch - ev[i].t) * 1e3, l = (prev - ev[i].t) * 1e3;
		hi[*n] = h > 0 ? h : 0;
		lo[*n] = l < hi[*n] ? l : hi[*n];
		(*n)++;
	}
	free(fifo);
	free(bd);
	return 0;
}

int cal_admit_fit(const cal_data *k, const cal_engine *g, const cal_slots *s,
		  double overhead_sd_ms, cal_admit *out)
{
	/* A queued request is launched at the first step boundary at or after
	 * (the completion that freed its slot) + admit_delay. So launch minus
	 * that completion bounds the delay from above, and the last step
	 * boundary seen before the launch, minus that completion, from below.
	 * The queue is FIFO: replaying the level's arrivals and completions in
	 * time order pairs each queued request with the completion that freed
	 * its slot. The delay is identified as the range most brackets share
	 * (wide when launches wait behind long prefill steps: then the delay
	 * hardly matters); the value is its middle. */
	double *d = malloc((k->n_rq ? k->n_rq : 1) * 2 * sizeof(double));
	tev *ev = malloc((2 * k->n_rq + 1) * sizeof(tev));
	int r = 0;
	if (!d || !ev)
		r = -ENOMEM;
	double *dlo = d ? d + (k->n_rq ? k->n_rq : 1) : NULL;
	double tol = 3.0 * overhead_sd_ms / 1e3 + 1e-9;
	size_t n = 0;
	*out = (cal_admit){ .lo_ms = NAN, .hi_ms = NAN };
	for (size_t l = 0; r == 0 && l < k->n_lv; l++) {
		const cal_level *L = &k->lvs[l];
		if ((int)L->c <= s->files[L->file].slots)
			continue;
		out->queued_levels++;
		if (L->use_reqs)
			r = level_brackets(k, g, L, tol, ev, d, dlo, &n);
	}
	out->n = n;
	if (r == 0 && n >= 3) {
		double x0, x1;
		out->agreeing = stab(dlo, d, n, &x0, &x1);
		out->identified = 1;
		out->value_ms = (x0 + x1) / 2;
		out->lo_ms = x0;
		out->hi_ms = x1;
	}
	free(d);
	free(ev);
	return r;
}
