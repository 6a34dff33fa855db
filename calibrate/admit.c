/* admit.c — the admission delay of queued requests. */
#include "calibrate/cal.h"

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
static double *level_boundaries(const cal *k, const lvpt *L, size_t *nb)
{
	size_t cap = 0;
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++)
		cap += 3 + k->rqs[q].n_itl;
	double *b = malloc((cap ? cap : 1) * sizeof(double));
	if (!b)
		return NULL;
	size_t n = 0;
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
		const rqpt *R = &k->rqs[q];
		double o = cal_ovh(k, R->Pin);
		double qwait = R->wait - (L->wait_has_overhead ? o : 0);
		if (isfinite(qwait))
			b[n++] = R->t_sent + (o + (qwait > 0 ? qwait : 0)) / 1e3;
		double t = R->t_first;
		b[n++] = t;
		for (size_t g = 0; g < R->n_itl; g++)
			if (isfinite(R->itl[g]) && R->itl[g] > 0)
				b[n++] = t += R->itl[g] / 1e3;
		b[n++] = R->t_done;
	}
	qsort(b, n, sizeof(double), cal_cmp_dbl);
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

int cal_fit_admit(cal *k)
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
	if (!d || !ev) {
		free(d);
		free(ev);
		return -ENOMEM;
	}
	double *dlo = d + (k->n_rq ? k->n_rq : 1);
	double tol = 3.0 * k->overhead_sd / 1e3 + 1e-9;
	size_t n = 0, queued_levels = 0;
	for (size_t l = 0; l < k->n_lv; l++) {
		const lvpt *L = &k->lvs[l];
		if ((int)L->c <= k->fslots[L->file])
			continue;
		queued_levels++;
		if (!L->use_reqs)
			continue;
		/* arrivals of queued requests (t, q) and completions (t, SIZE_MAX) */
		size_t ne = 0;
		for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
			const rqpt *R = &k->rqs[q];
			double o = cal_ovh(k, R->Pin);
			double qwait = R->wait - (L->wait_has_overhead ? o : 0);
			if (isfinite(qwait) && qwait > 0.5 * (isfinite(R->tpot) ? R->tpot : 1))
				ev[ne++] = (tev){ R->t_sent + o / 1e3, q };
			ev[ne++] = (tev){ R->t_done, (size_t)-1 };
		}
		qsort(ev, ne, sizeof(tev), cmp_tev);
		/* FIFO of waiting requests: indices into ev, head..tail */
		size_t head = 0, tail = 0;
		size_t *fifo = malloc((ne + 1) * sizeof(size_t));
		size_t nb = 0;
		double *bd = level_boundaries(k, L, &nb);
		if (!fifo || !bd) {
			free(fifo);
			free(bd);
			free(d);
			free(ev);
			return -ENOMEM;
		}
		for (size_t i = 0; i < ne; i++) {
			if (ev[i].q != (size_t)-1) {
				fifo[tail++] = ev[i].q;
				continue;
			}
			if (head == tail)
				continue; /* nobody waiting: the slot goes free */
			const rqpt *R = &k->rqs[fifo[head++]];
			double o = cal_ovh(k, R->Pin);
			double qwait = R->wait - (L->wait_has_overhead ? o : 0);
			double launch = R->t_sent + (o + qwait) / 1e3;
			if (!(R->t_done > ev[i].t))
				continue;
			double prev = ev[i].t;
			for (size_t b = 0; b < nb && bd[b] < launch - tol; b++)
				if (bd[b] > prev)
					prev = bd[b];
			double hi = (launch - ev[i].t) * 1e3, lo = (prev - ev[i].t) * 1e3;
			d[n] = hi > 0 ? hi : 0;
			dlo[n] = lo < d[n] ? lo : d[n];
			n++;
		}
		free(fifo);
		free(bd);
	}
	free(ev);
	k->admit = 0;
	k->admit_lo = k->admit_hi = NAN;
	if (n >= 3) {
		double x0, x1;
		size_t agree = stab(dlo, d, n, &x0, &x1);
		k->admit = (x0 + x1) / 2;
		k->admit_lo = x0;
		k->admit_hi = x1;
		json_object_set_new(
			k->fit, "admit_delay",
			json_pack("{s:I,s:I,s:f,s:f,s:f,s:s}", "n", (json_int_t)n, "agreeing",
				  (json_int_t)agree, "low_ms", x0, "high_ms", x1, "value_ms",
				  k->admit, "how",
				  "queued requests paired FIFO with the completions that freed "
				  "their slots: launch minus that completion bounds the delay "
				  "from above, the last step boundary before the launch from "
				  "below; the value is the middle of the range most brackets "
				  "share"));
		cal_coef(k, "admit_delay_ms", k->admit, k->admit_lo, k->admit_hi, "ms",
			 "middle of the range most queued launches bracket (the interval is "
			 "that range, not a confidence interval)");
	} else {
		cal_coef(k, "admit_delay_ms", 0, NAN, NAN, "ms", "not identified (set to 0)");
		cal_missing(k, "admit_delay_ms: needs per-request records with queue waits (server "
			   "timings) at a level above the slot count%s",
			queued_levels ? "" : " (no such level in the inputs)");
	}
	free(d);
	return 0;
}
