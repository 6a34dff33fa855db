/* hist.c — streaming distribution summary with bounded memory.
 *
 * Bucketing reads the IEEE-754 bits: the exponent picks the power of two and
 * the top 7 mantissa bits the sub-bucket, so adding a value is a few integer
 * operations (no log()). A bucket spans [2^e(1+s/128), 2^e(1+(s+1)/128)), so
 * its geometric midpoint is within 1/256 (0.39%) of any value in it.
 */
#include "hist.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SUB_BITS 7
#define SUB (1u << SUB_BITS)
#define EXP_MIN (-24) /* 2^-24 ~ 6e-8 */
#define EXP_MAX 40    /* 2^41 ~ 2.2e12 */
#define NBUCKETS ((size_t)(EXP_MAX - EXP_MIN + 1) * SUB)

int sb_hist_init(sb_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->buckets = calloc(NBUCKETS, sizeof(*h->buckets));
	h->exact = malloc(SB_HIST_EXACT * sizeof(*h->exact));
	if (!h->buckets || !h->exact) {
		sb_hist_fini(h);
		return -ENOMEM;
	}
	sb_hist_reset(h);
	return 0;
}

void sb_hist_fini(sb_hist *h)
{
	if (!h)
		return;
	free(h->buckets);
	free(h->exact);
	h->buckets = NULL;
	h->exact = NULL;
}

void sb_hist_reset(sb_hist *h)
{
	h->n = 0;
	h->sum = h->sumsq = 0.0;
	h->min = INFINITY;
	h->max = -INFINITY;
	h->zero = 0;
	h->n_exact = 0;
	h->exact_sorted = 1;
	if (h->buckets)
		memset(h->buckets, 0, NBUCKETS * sizeof(*h->buckets));
}

/* Bucket index of v > 0, or -1 when v is below the lowest bucket. */
static long bucket_of(double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	int e = (int)((bits >> 52) & 0x7ff) - 1023;
	if (e < EXP_MIN)
		return -1;
	if (e > EXP_MAX)
		return (long)NBUCKETS - 1;
	unsigned s = (unsigned)((bits >> (52 - SUB_BITS)) & (SUB - 1));
	return (long)(e - EXP_MIN) * SUB + s;
}

static double bucket_mid(long b)
{
	int e = (int)(b / SUB) + EXP_MIN;
	double s = (double)(b % SUB);
	double lo = ldexp(1.0 + s / SUB, e);
	double hi = ldexp(1.0 + (s + 1.0) / SUB, e);
	return sqrt(lo * hi);
}

void sb_hist_add(sb_hist *h, double v)
{
	if (isnan(v))
		return;
	h->n++;
	h->sum += v;
	h->sumsq += v * v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	if (h->n_exact < SB_HIST_EXACT && h->n_exact + 1 == h->n) {
		h->exact[h->n_exact++] = v;
		h->exact_sorted = 0;
	}
	long b = v > 0 ? bucket_of(v) : -1;
	if (b < 0)
		h->zero++;
	else
		h->buckets[b]++;
}

void sb_hist_merge(sb_hist *dst, const sb_hist *src)
{
	if (src->n == 0)
		return;
	int exact_ok = dst->n_exact == dst->n && src->n_exact == src->n &&
		       dst->n + src->n <= SB_HIST_EXACT;
	if (exact_ok) {
		memcpy(dst->exact + dst->n_exact, src->exact,
		       src->n_exact * sizeof(*src->exact));
		dst->n_exact += src->n_exact;
		dst->exact_sorted = 0;
	}
	dst->n += src->n;
	dst->sum += src->sum;
	dst->sumsq += src->sumsq;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->zero += src->zero;
	for (size_t i = 0; i < NBUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
}

double sb_hist_quantile(sb_hist *h, double q)
{
	if (h->n == 0 || isnan(q))
		return NAN;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	if (h->n_exact == h->n) {
		if (!h->exact_sorted) {
			qsort(h->exact, h->n_exact, sizeof(*h->exact), sb_cmp_double);
			h->exact_sorted = 1;
		}
		return sb_sorted_quantile(h->exact, h->n_exact, q);
	}
	uint64_t rank = (uint64_t)floor(q * (double)(h->n - 1) + 0.5);
	uint64_t cum = h->zero;
	if (rank < cum)
		return h->min < 0 ? h->min : 0.0;
	for (size_t b = 0; b < NBUCKETS; b++) {
		cum += h->buckets[b];
		if (rank < cum) {
			double v = bucket_mid((long)b);
			if (v < h->min)
				v = h->min;
			if (v > h->max)
				v = h->max;
			return v;
		}
	}
	return h->max;
}

double sb_hist_mean(const sb_hist *h)
{
	return h->n ? h->sum / (double)h->n : NAN;
}

double sb_hist_stddev(const sb_hist *h)
{
	if (h->n < 2)
		return 0.0;
	double n = (double)h->n;
	double var = (h->sumsq - h->sum * h->sum / n) / (n - 1.0);
	return var > 0 ? sqrt(var) : 0.0;
}

void sb_hist_summary(sb_hist *h, sb_summary *out)
{
	out->n = h->n;
	if (h->n == 0) {
		out->mean = out->p50 = out->p90 = out->p99 = NAN;
		out->min = out->max = NAN;
		return;
	}
	out->mean = sb_hist_mean(h);
	out->p50 = sb_hist_quantile(h, 0.50);
	out->p90 = sb_hist_quantile(h, 0.90);
	out->p99 = sb_hist_quantile(h, 0.99);
	out->min = h->min;
	out->max = h->max;
}
