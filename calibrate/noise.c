/* noise.c — step noise and overhead spread, from records or level
 * summaries (noise.h). */
#include "calibrate/noise.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>

#include "calibrate/fit_linear.h"
#include "calibrate/spread.h"

void cal_noise_fini(cal_noise *n)
{
	free(n->points);
	n->points = NULL;
}

/* Expected value of the q-quantile estimator (linear interpolation between
 * order statistics) of n standard normal values; Blom's approximation of
 * the normal order-statistic means. */
static double normal_quantile_estimator(double q, long n)
{
	double h = q * (double)(n - 1);
	long lo = (long)floor(h);
	double fr = h - (double)lo;
	double a = gsl_cdf_ugaussian_Pinv(((double)lo + 1 - 0.375) / ((double)n + 0.25));
	if (lo + 1 >= n)
		return a;
	double b = gsl_cdf_ugaussian_Pinv(((double)lo + 2 - 0.375) / ((double)n + 0.25));
	return a + fr * (b - a);
}

/* prefill_cv and its interval from a fitted b = prefill_cv^2 */
static void set_pcv(cal_noise *k, double b, double b_lo, double b_hi, cal_pcv_from from)
{
	k->prefill_cv = b > 0 ? sqrt(b) : 0;
	k->prefill_cv_lo = isfinite(b_lo) ? sqrt(b_lo > 0 ? b_lo : 0) : NAN;
	k->prefill_cv_hi = isfinite(b_hi) ? sqrt(b_hi > 0 ? b_hi : 0) : NAN;
	k->prefill_cv_from = from;
}

/* Each ITL gap at concurrency 1 over its predicted step time, into x
 * (room for every gap); returns how many. */
static size_t gap_ratios(const cal_data *k, const cal_engine *g, double *x)
{
	size_t n = 0;
	for (size_t q = 0; q < k->n_rq; q++) {
		const cal_request *R = &k->rqs[q];
		if (k->lvs[R->lv].c != 1)
			continue;
		for (size_t i = 0; i < R->n_itl; i++) {
			double pred = g->decode_1_ms + g->kv_ms_per_token * (R->P + (double)i + 1.0);
			if (R->itl[i] > 0 && isfinite(R->itl[i]))
				x[n++] = R->itl[i] / pred;
		}
	}
	return n;
}

/* Each TPOT at concurrency 1 over its level's mean into x: the scatter
 * within a level is the noise; differences between levels (prompt lengths)
 * the KV fit may miss are not. Levels with fewer than 3 are left out.
 * *inv: sum of 1/(N-1), *groups: the levels used. Returns how many. */
static size_t tpot_ratios(const cal_data *k, double *x, double *inv, long *groups)
{
	size_t n = 0;
	for (size_t l = 0; l < k->n_lv; l++) {
		const cal_level *L = &k->lvs[l];
		if (L->c != 1 || !L->use_reqs)
			continue;
		double sum = 0, inv_l = 0;
		size_t m = 0, n0 = n;
		for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
			const cal_request *R = &k->rqs[q];
			if (!(R->N >= 3) || !(R->tpot > 0))
				continue;
			sum += R->tpot;
			x[n++] = R->tpot;
			inv_l += 1.0 / (R->N - 1.0);
			m++;
		}
		if (m < 3) {
			n = n0; /* too few to tell scatter from the mean */
			continue;
		}
		for (size_t i = n0; i < n; i++)
			x[i] /= sum / (double)m;
		*inv += inv_l;
		(*groups)++;
	}
	return n;
}

/* With server timings: the overhead spread is the sd of TTFT - prompt_ms
 * (less its growth), prefill_cv the MLE of prompt_ms over the predicted
 * prefill. Returns the overhead variance, or -1 for -ENOMEM. */
static double timing_spread(const cal_data *k, const cal_engine *g, cal_noise *out)
{
	double s = 0, ss = 0;
	long m = 0;
	size_t np = 0;
	double *px = malloc((k->n_rq + 1) * sizeof(double));
	if (!px)
		return -1;
	for (size_t q = 0; q < k->n_rq; q++) {
		const cal_request *R = &k->rqs[q];
		if (k->lvs[R->lv].c != 1)
			continue;
		double res = R->ttft - R->prompt_ms - g->overhead_ms_per_token * R->Pin;
		s += res;
		ss += res * res;
		m++;
		double step = cal_engine_prefill_ms(g, R->P);
		if (R->prompt_ms > 0 && step > 0)
			px[np++] = R->prompt_ms / step;
	}
	out->sd_how = CAL_SD_TIMINGS;
	sb_noisefit pf;
	if (np >= 10 && sb_noisefit_run(px, np, out->best.kind, &pf, NULL) == 0) {
		double h = 1.96 / sqrt(2.0 * (double)np);
		out->prefill_cv = pf.cv;
		out->prefill_cv_lo = pf.cv * (1 - h);
		out->prefill_cv_hi = pf.cv * (1 + h);
		out->prefill_cv_from = CAL_PCV_TIMINGS;
	}
	free(px);
	return m > 1 ? (ss - s * s / (double)m) / (double)(m - 1) : 0;
}

/* Without timings, per prompt length at concurrency 1 (levels whose
 * lengths repeat): the TTFT variance is overhead_sd^2 + (prefill_cv *
 * step)^2 (spread_fit); with one length the decode cv stands in for the
 * prefill's. Returns 0 with the overhead variance in *var, or -errno. */
static int record_spread(const cal_data *k, const cal_engine *g, cal_noise *out, double *var,
			 sb_error *e)
{
	double T2[64] = { 0 }, S2[64] = { 0 }, D[64] = { 0 };
	size_t ng = 0;
	for (size_t l = 0; l < k->n_lv && ng < 64; l++) {
		const cal_level *L = &k->lvs[l];
		if (L->c != 1 || !L->use_reqs)
			continue;
		double P0 = NAN, g1 = 0, g2 = 0;
		long gn = 0;
		int same = 1;
		for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
			const cal_request *R = &k->rqs[q];
			if (isnan(P0))
				P0 = R->P;
			same &= R->P == P0;
			g1 += R->ttft;
			g2 += R->ttft * R->ttft;
			gn++;
		}
		if (!same || gn < 3)
			continue;
		double v = (g2 - g1 * g1 / (double)gn) / (double)(gn - 1);
		double step = cal_engine_prefill_ms(g, P0);
		if (!(v > 0))
			continue;
		T2[ng] = step * step;
		S2[ng] = v;
		D[ng] = (double)(gn - 1);
		ng++;
	}
	double a, b, blo, bhi;
	int sr = cal_spread_line(T2, S2, D, ng, &a, &b, &blo, &bhi, e);
	if (sr < 0)
		return sr;
	int split = 0;
	for (size_t i = 1; i < ng; i++)
		split |= T2[i] != T2[0];
	if (split) {
		*var = a;
		set_pcv(out, b, blo, bhi, CAL_PCV_SPREAD_RECORDS);
		out->sd_how = CAL_SD_SPREAD_INTERCEPT;
		return 0;
	}
	double s = 0, ss = 0, sn = 0;
	long m = 0;
	for (size_t q = 0; q < k->n_rq; q++) {
		const cal_request *R = &k->rqs[q];
		if (k->lvs[R->lv].c != 1)
			continue;
		double step = cal_engine_prefill_ms(g, R->P);
		double res = R->ttft - cal_engine_overhead_ms(g, R->Pin) - step;
		s += res;
		ss += res * res;
		sn += step * step * out->prefill_cv * out->prefill_cv;
		m++;
	}
	*var = m > 1 ? (ss - s * s / (double)m) / (double)(m - 1) - sn / (double)m : 0;
	out->sd_how = CAL_SD_RESIDUAL;
	return 0;
}

/* The step noise from the records into out->best/other, kind, cv and data.
 * The simulator's noise acts on runs of steps (cv / sqrt(k) for k steps),
 * so what it must reproduce is how request TPOTs and TTFTs scatter.
 * Primary data: each request's TPOT at concurrency 1 over its level's mean;
 * N-1 independent step factors average to cv / sqrt(N-1). ITL gaps are
 * fitted too, as a diagnostic: when their cv is much above the
 * TPOT-implied one, the gap jitter is delivery timing that evens out along
 * a stream, not step noise. Returns 0, 1 when the records are too few, or
 * -errno. */
static int step_noise(const cal_data *k, const cal_engine *g, cal_noise *out, sb_error *e)
{
	size_t cap = 0;
	for (size_t q = 0; q < k->n_rq; q++)
		if (k->lvs[k->rqs[q].lv].c == 1)
			cap += k->rqs[q].n_itl;
	double *x = malloc((cap > k->n_rq ? cap : k->n_rq + 1) * sizeof(double));
	if (!x)
		return -ENOMEM;
	size_t n = gap_ratios(k, g, x);
	out->have_gaps = n >= 30 && sb_noisefit_best(x, n, &out->gaps, NULL, NULL) == 0;
	out->data = CAL_NOISE_TPOT;
	double scale = 1.0, inv = 0; /* step cv = fitted cv * scale */
	long groups = 0;
	n = tpot_ratios(k, x, &inv, &groups);
	/* dividing by a sample mean of m values shrinks the variance by
	 * (m - 1) / m: corrected here, pooled over levels */
	if (n >= 20) {
		scale = 1.0 / sqrt(inv / (double)n) * sqrt((double)n / (double)(n - groups));
	} else if (out->have_gaps) { /* too few requests: the gaps are all there is */
		out->data = CAL_NOISE_GAPS;
		n = gap_ratios(k, g, x);
	} else {
		free(x);
		return 1;
	}
	int r = sb_noisefit_best(x, n, &out->best, &out->other, e);
	free(x);
	if (r < 0)
		return r;
	out->kind = out->best.kind;
	out->cv = out->best.cv * scale;
	/* asymptotic: se(sigma_hat) = sigma / sqrt(2n) for both kinds */
	out->cv_lo = out->cv * (1.0 - 1.96 / sqrt(2.0 * (double)n));
	out->cv_hi = out->cv * (1.0 + 1.96 / sqrt(2.0 * (double)n));
	return 0;
}

/* The noise from per-request records. Prefill steps scatter less than
 * decode steps relative to their length (a long step averages many
 * kernels), so they get their own cv (timing_spread, record_spread).
 * Returns 0, 1 when the records at concurrency 1 are too few, or -errno. */
static int noise_from_requests(const cal_data *k, const cal_engine *g, int timings,
			       cal_noise *out, sb_error *e)
{
	int r = step_noise(k, g, out, e);
	if (r != 0)
		return r;
	double var = 0;
	set_pcv(out, out->cv * out->cv, NAN, NAN, CAL_PCV_DECODE_CV);
	if (timings) {
		var = timing_spread(k, g, out);
		if (var == -1)
			return -ENOMEM;
	} else {
		r = record_spread(k, g, out, &var, e);
		if (r < 0)
			return r;
	}
	out->overhead_sd_ms = var > 0 ? sqrt(var) : 0;
	return 0;
}

/* The noise from level summaries: s_i = (p99 - p50) / (E z_p99 - E z_p50)
 * for n samples; then s_i^2 = a + b * step_i^2 (spread_fit). Only prefill
 * steps are seen (TTFT), so their cv stands for the decode steps too.
 * Returns 0 or -ENOMEM. */
static int noise_from_summaries(const cal_data *k, const cal_engine *g, cal_noise *out)
{
	double S2[64], T2[64], D[64];
	size_t n = 0;
	out->points = malloc(64 * sizeof(*out->points));
	if (!out->points)
		return -ENOMEM;
	for (size_t l = 0; l < k->n_lv && n < 64; l++) {
		const cal_level *L = &k->lvs[l];
		if (L->c != 1 || !isfinite(L->ttft_p99) || L->n_ok < 3 || L->use_reqs)
			continue;
		double dz = normal_quantile_estimator(0.99, L->n_ok) -
			    normal_quantile_estimator(0.50, L->n_ok);
		double sd = (L->ttft_p99 - L->ttft) / dz;
		if (!(sd > 0))
			continue;
		double step = cal_engine_prefill_ms(g, L->P);
		S2[n] = sd * sd;
		T2[n] = step * step;
		D[n] = (double)(L->n_ok - 1);
		out->points[n] = (cal_spread_point){ l, sd, step };
		n++;
	}
	double a = 0, b = 0, blo = NAN, bhi = NAN;
	if (n == 1) {
		b = S2[0] / T2[0];
	} else if (n > 1) {
		sb_error e;
		if (cal_spread_line(T2, S2, D, n, &a, &b, &blo, &bhi, &e) < 0)
			n = 0;
	}
	out->n_points = n;
	if (n == 0) {
		out->data = CAL_NOISE_NO_DATA;
		out->kind = SB_NOISE_NONE;
		set_pcv(out, 0, NAN, NAN, CAL_PCV_NO_DATA);
		return 0;
	}
	out->data = CAL_NOISE_SUMMARIES;
	out->kind = b > 0 ? SB_NOISE_LOGNORMAL : SB_NOISE_NONE;
	set_pcv(out, b, blo, bhi, CAL_PCV_SPREAD_SUMMARIES);
	out->cv = out->prefill_cv;
	out->cv_lo = out->prefill_cv_lo;
	out->cv_hi = out->prefill_cv_hi;
	out->overhead_sd_ms = sqrt(a);
	return 0;
}

int cal_noise_fit(const cal_data *d, const cal_engine *g, int timings, cal_noise *out,
		  sb_error *e)
{
	out->cv_lo = out->cv_hi = NAN;
	int r = d->n_rq ? noise_from_requests(d, g, timings, out, e) : 1;
	if (r == 1) { /* too few records: start again from the summaries */
		*out = (cal_noise){ .cv_lo = NAN, .cv_hi = NAN };
		r = noise_from_summaries(d, g, out);
	}
	return r;
}
