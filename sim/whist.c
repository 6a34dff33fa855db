/* whist.c — weighted log-bucketed histogram (see whist.h). */
#include "whist.h"

#include <math.h>
#include <stdlib.h>

#define SUB 128          /* sub-buckets per power of two */
#define EMIN (-40)       /* smallest exponent kept (2^-41 ~ 4.5e-13) */
#define EMAX 64          /* largest exponent kept */
#define NB ((EMAX - EMIN + 1) * SUB)

struct sb_whist {
	double w[NB];
	double zero;     /* weight of values <= 0 or below the range */
	double total, sum, min, max;
};

sb_whist *sb_whist_new(void)
{
	sb_whist *h = malloc(sizeof *h);
	if (h)
		sb_whist_reset(h);
	return h;
}

void sb_whist_free(sb_whist *h)
{
	free(h);
}

void sb_whist_reset(sb_whist *h)
{
	for (size_t i = 0; i < NB; i++)
		h->w[i] = 0;
	h->zero = h->total = h->sum = 0;
	h->min = INFINITY;
	h->max = -INFINITY;
}

void sb_whist_add(sb_whist *h, double v, double w)
{
	if (isnan(v) || !(w > 0))
		return;
	h->total += w;
	h->sum += v * w;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	if (!(v > 0)) {
		h->zero += w;
		return;
	}
	int e;
	double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
	if (e < EMIN) {
		h->zero += w;
		return;
	}
	if (e > EMAX)
		e = EMAX, m = 0.999999;
	int sub = (int)((m - 0.5) * (2 * SUB));
	if (sub >= SUB)
		sub = SUB - 1;
	h->w[(size_t)(e - EMIN) * SUB + (size_t)sub] += w;
}

double sb_whist_quantile(const sb_whist *h, double q)
{
	if (!(h->total > 0))
		return NAN;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	double target = q * h->total, acc = h->zero;
	double v = h->min;
	if (acc < target) {
		for (size_t i = 0; i < NB; i++) {
			acc += h->w[i];
			if (acc >= target && h->w[i] > 0) {
				int e = (int)(i / SUB) + EMIN;
				int sub = (int)(i % SUB);
				double lo = ldexp(0.5 + sub / (2.0 * SUB), e);
				double hi = ldexp(0.5 + (sub + 1) / (2.0 * SUB), e);
				v = sqrt(lo * hi);
				break;
			}
		}
	}
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

void sb_whist_summary(const sb_whist *h, sb_summary *out)
{
	if (!(h->total > 0)) {
		out->mean = out->p50 = out->p90 = out->p99 = NAN;
		out->min = out->max = NAN;
		out->n = 0;
		return;
	}
	out->mean = h->sum / h->total;
	out->p50 = sb_whist_quantile(h, 0.50);
	out->p90 = sb_whist_quantile(h, 0.90);
	out->p99 = sb_whist_quantile(h, 0.99);
	out->min = h->min;
	out->max = h->max;
	out->n = (uint64_t)llround(h->total);
}
