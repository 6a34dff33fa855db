/* noise.c — step noise and overhead spread, from records or level summaries. */
#include "calibrate/cal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>

#include "calibrate/fit_linear.h"
#include "calibrate/fit_noise.h"

/* ---- noise -------------------------------------------------------------- */

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

/* TTFT spread at concurrency 1 against prompt length: the variance of a
 * group is overhead_sd^2 + (prefill_cv * step)^2, so a weighted line through
 * (step^2, variance) gives both. w: relative weights, 1/var of each variance.
 * With a negative slope the spread is all overhead; with a negative
 * intercept the line goes through the origin. Returns 1 when b has an
 * interval (*b_lo, *b_hi), 0 when not (NaN), -errno on failure. */
static int spread_fit(const double *T2, const double *S2, const double *w, size_t n, double *a,
		      double *b, double *b_lo, double *b_hi, sb_error *e)
{
	*a = *b = 0;
	*b_lo = *b_hi = NAN;
	if (n == 0)
		return 0;
	sb_linfit f;
	int r = 0, fitted = 0;
	int distinct = 0;
	for (size_t i = 1; i < n; i++)
		distinct |= T2[i] != T2[0];
	if (n >= 2 && distinct) {
		r = sb_linfit_line(T2, S2, w, n, &f, e);
		if (r < 0)
			goto out;
		*a = f.coef[0];
		*b = f.coef[1];
		if (f.has_ci) {
			*b_lo = f.ci_lo[1];
			*b_hi = f.ci_hi[1];
		}
		sb_linfit_fini(&f);
		fitted = 1;
	}
	if (!fitted || *b < 0) {
		/* all overhead (or one step length, which cannot be split: the
		 * caller decides): the weighted mean variance */
		double sw = 0, sv = 0;
		for (size_t i = 0; i < n; i++) {
			sw += w[i];
			sv += w[i] * S2[i];
		}
		*a = sw > 0 ? sv / sw : 0;
		*b = 0;
		*b_lo = *b_hi = NAN;
		goto out;
	}
	if (*a < 0) {
		r = sb_linfit_run(T2, S2, w, n, 1, &f, e); /* through the origin */
		if (r < 0)
			goto out;
		*a = 0;
		*b = f.coef[0];
		*b_lo = f.has_ci ? f.ci_lo[0] : NAN;
		*b_hi = f.has_ci ? f.ci_hi[0] : NAN;
		sb_linfit_fini(&f);
	}
	r = isfinite(*b_lo) ? 1 : 0;
out:
	return r;
}

/* prefill_cv and its interval from a fitted b = prefill_cv^2 */
static void set_pcv(cal *k, double b, double b_lo, double b_hi, const char *from)
{
	k->pcv = b > 0 ? sqrt(b) : 0;
	k->pcv_lo = isfinite(b_lo) ? sqrt(b_lo > 0 ? b_lo : 0) : NAN;
	k->pcv_hi = isfinite(b_hi) ? sqrt(b_hi > 0 ? b_hi : 0) : NAN;
	k->pcv_from = from;
}

/* Each ITL gap at concurrency 1 over its predicted step time, into x
 * (room for every gap); returns how many. */
static size_t gap_ratios(const cal *k, double *x)
{
	size_t n = 0;
	for (size_t q = 0; q < k->n_rq; q++) {
		const rqpt *R = &k->rqs[q];
		if (k->lvs[R->lv].c != 1)
			continue;
		for (size_t g = 0; g < R->n_itl; g++) {
			double pred = k->d1 + k->kv * (R->P + (double)g + 1.0);
			if (R->itl[g] > 0 && isfinite(R->itl[g]))
				x[n++] = R->itl[g] / pred;
		}
	}
	return n;
}

int cal_fit_noise_requests(cal *k, sb_error *e)
{
	/* The simulator's noise acts on runs of steps (cv / sqrt(k) for k
	 * steps), so what it must reproduce is how request TPOTs and TTFTs
	 * scatter. Primary data: each request's TPOT at concurrency 1 over its
	 * prediction; N-1 independent step factors average to cv / sqrt(N-1).
	 * ITL gaps are fitted too, as a diagnostic: when their cv is much above
	 * the TPOT-implied one, the gap jitter is delivery timing that evens
	 * out along a stream, not step noise. */
	int r = 0;
	json_t *gapj = NULL;
	size_t cap = 0;
	for (size_t q = 0; q < k->n_rq; q++)
		if (k->lvs[k->rqs[q].lv].c == 1)
			cap += k->rqs[q].n_itl;
	double *x = malloc((cap > k->n_rq ? cap : k->n_rq + 1) * sizeof(double));
	if (!x)
		return -ENOMEM;
	size_t n = gap_ratios(k, x);
	sb_noisefit gap;
	int have_gap = n >= 30 && sb_noisefit_best(x, n, &gap, NULL, NULL) == 0;
	if (have_gap)
		gapj = sb_noisefit_to_json(&gap);
	const char *data = "per-request TPOT / its level's mean at concurrency 1 (MLE); step cv "
			   "= TPOT cv * sqrt(N-1)";
	double scale = 1.0; /* step cv = fitted cv * scale */
	n = 0;
	double inv = 0;
	long groups = 0;
	/* Each TPOT over its level's mean: the scatter within a level is the
	 * noise; differences between levels (prompt lengths) the KV fit may
	 * miss are not. Dividing by a sample mean of m values shrinks the
	 * variance by (m - 1) / m: corrected below, pooled over levels. */
	for (size_t l = 0; l < k->n_lv; l++) {
		const lvpt *L = &k->lvs[l];
		if (L->c != 1 || !L->use_reqs)
			continue;
		double sum = 0, inv_l = 0;
		size_t m = 0, n0 = n;
		for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
			const rqpt *R = &k->rqs[q];
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
		inv += inv_l;
		groups++;
	}
	if (n >= 20) {
		scale = 1.0 / sqrt(inv / (double)n) * sqrt((double)n / (double)(n - groups));
	} else if (have_gap) {
		/* too few requests: the gaps are all there is */
		data = "ITL gaps / predicted step time at concurrency 1 (MLE)";
		n = gap_ratios(k, x);
	} else {
		free(x);
		json_decref(gapj);
		return 1; /* not enough: the caller falls back */
	}
	sb_noisefit best, other;
	r = sb_noisefit_best(x, n, &best, &other, e);
	free(x);
	if (r < 0) {
		json_decref(gapj);
		return r;
	}
	k->noise_kind = best.kind;
	k->noise_cv = best.cv * scale;
	/* Prefill steps scatter less than decode steps relative to their
	 * length (a long step averages many kernels), so they get their own
	 * cv. With server timings, each request's prompt_ms over its
	 * predicted prefill, by maximum likelihood; the overhead spread is the
	 * sd of TTFT - prompt_ms. Without, the TTFT variance per prompt length
	 * is overhead_sd^2 + (prefill_cv * step)^2 (spread_fit). */
	double var = 0;
	const char *sd_how;
	set_pcv(k, k->noise_cv * k->noise_cv, NAN, NAN,
		"the decode steps' cv (one prompt length at concurrency 1 cannot separate "
		"prefill noise from overhead)");
	if (k->timings) {
		double s = 0, ss = 0;
		long m = 0;
		size_t np = 0;
		double *px = malloc((k->n_rq + 1) * sizeof(double));
		if (!px) {
			json_decref(gapj);
			return -ENOMEM;
		}
		for (size_t q = 0; q < k->n_rq; q++) {
			const rqpt *R = &k->rqs[q];
			if (k->lvs[R->lv].c != 1)
				continue;
			double res = R->ttft - R->prompt_ms - k->ovpt * R->Pin;
			s += res;
			ss += res * res;
			m++;
			double step = k->pb * (double)cal_nsteps(k, R->P) + cal_prefill_var(k, R->P);
			if (R->prompt_ms > 0 && step > 0)
				px[np++] = R->prompt_ms / step;
		}
		var = m > 1 ? (ss - s * s / (double)m) / (double)(m - 1) : 0;
		sd_how = "sd of TTFT - server prompt_ms (less its fitted growth with the prompt)";
		sb_noisefit pf;
		if (np >= 10 && sb_noisefit_run(px, np, best.kind, &pf, NULL) == 0) {
			double h = 1.96 / sqrt(2.0 * (double)np);
			k->pcv = pf.cv;
			k->pcv_lo = pf.cv * (1 - h);
			k->pcv_hi = pf.cv * (1 + h);
			k->pcv_from = "server prompt_ms / predicted prefill at concurrency 1 (MLE)";
		}
		free(px);
	} else {
		/* per prompt length at concurrency 1 (lengths that repeat) */
		double T2[64], S2[64], W[64];
		size_t ng = 0;
		for (size_t l = 0; l < k->n_lv && ng < 64; l++) {
			const lvpt *L = &k->lvs[l];
			if (L->c != 1 || !L->use_reqs)
				continue;
			double P0 = NAN, g1 = 0, g2 = 0;
			long gn = 0;
			int same = 1;
			for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
				const rqpt *R = &k->rqs[q];
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
			double step = k->pb * (double)cal_nsteps(k, P0) + cal_prefill_var(k, P0);
			if (!(v > 0))
				continue;
			T2[ng] = step * step;
			S2[ng] = v;
			W[ng] = (double)(gn - 1) / (v * v); /* var of a sample variance */
			ng++;
		}
		double a, b, blo, bhi;
		int sr = spread_fit(T2, S2, W, ng, &a, &b, &blo, &bhi, e);
		if (sr < 0) {
			json_decref(gapj);
			return sr;
		}
		int split = 0;
		for (size_t i = 1; i < ng; i++)
			split |= T2[i] != T2[0];
		if (split) {
			var = a;
			set_pcv(k, b, blo, bhi,
				"TTFT variance per prompt length at concurrency 1 = overhead_sd^2 + "
				"(prefill_cv * step)^2, weighted least squares");
			sd_how = "intercept of the same fit";
		} else {
			/* one length: the decode cv stands in for the prefill's */
			double s = 0, ss = 0, sn = 0;
			long m = 0;
			for (size_t q = 0; q < k->n_rq; q++) {
				const rqpt *R = &k->rqs[q];
				if (k->lvs[R->lv].c != 1)
					continue;
				double step = k->pb * (double)cal_nsteps(k, R->P) +
					      cal_prefill_var(k, R->P);
				double res = R->ttft - cal_ovh(k, R->Pin) - step;
				s += res;
				ss += res * res;
				sn += step * step * k->pcv * k->pcv;
				m++;
			}
			var = m > 1 ? (ss - s * s / (double)m) / (double)(m - 1) - sn / (double)m
				    : 0;
			sd_how = "TTFT residual variance minus the step noise's share";
		}
	}
	k->overhead_sd = var > 0 ? sqrt(var) : 0;
	json_object_set_new(k->fit, "noise",
			    json_pack("{s:s,s:f,s:o,s:o,s:f,s:s,s:f,s:s}", "data", data, "step_cv",
				      k->noise_cv, "chosen", sb_noisefit_to_json(&best), "other",
				      sb_noisefit_to_json(&other), "overhead_sd_ms", k->overhead_sd,
				      "overhead_sd_how", sd_how, "prefill_cv", k->pcv,
				      "prefill_cv_how", k->pcv_from));
	json_object_set_new(json_object_get(k->fit, "noise"), "itl_gaps",
			    gapj ? gapj : json_null());
	/* asymptotic: se(sigma_hat) = sigma / sqrt(2n) for both kinds */
	k->noise_cv_lo = k->noise_cv * (1.0 - 1.96 / sqrt(2.0 * (double)n));
	k->noise_cv_hi = k->noise_cv * (1.0 + 1.96 / sqrt(2.0 * (double)n));
	return 0;
}

void cal_fit_noise_summaries(cal *k)
{
	/* s_i = (p99 - p50) / (E z_p99 - E z_p50) for n samples; then
	 * s_i^2 = a + b * step_i^2 (spread_fit). Only prefill steps are seen
	 * (TTFT), so their cv stands for the decode steps too. */
	double S2[64], T2[64], W[64];
	size_t n = 0;
	json_t *pts = json_array();
	for (size_t l = 0; l < k->n_lv && n < 64; l++) {
		const lvpt *L = &k->lvs[l];
		if (L->c != 1 || !isfinite(L->ttft_p99) || L->n_ok < 3 || L->use_reqs)
			continue;
		double dz = normal_quantile_estimator(0.99, L->n_ok) -
			    normal_quantile_estimator(0.50, L->n_ok);
		double sd = (L->ttft_p99 - L->ttft) / dz;
		if (!(sd > 0))
			continue;
		double step = k->pb * (double)cal_nsteps(k, L->P) + cal_prefill_var(k, L->P);
		S2[n] = sd * sd;
		T2[n] = step * step;
		W[n] = (double)(L->n_ok - 1) / (S2[n] * S2[n]);
		json_array_append_new(pts, json_pack("{s:s,s:f,s:f,s:f}", "file",
						     cal_base_name(cal_fname(k, L->file)), "prompt_tokens",
						     L->P, "ttft_sd_ms", sd, "step_ms", step));
		n++;
	}
	double a = 0, b = 0, blo = NAN, bhi = NAN;
	if (n == 1) {
		b = S2[0] / T2[0];
	} else if (n > 1) {
		sb_error e;
		if (spread_fit(T2, S2, W, n, &a, &b, &blo, &bhi, &e) < 0)
			n = 0;
	}
	if (n == 0) {
		json_decref(pts);
		k->noise_kind = SB_NOISE_NONE;
		k->noise_cv = 0;
		k->overhead_sd = 0;
		set_pcv(k, 0, NAN, NAN, "no data");
		cal_missing(k, "noise: no TTFT spread (p99 or per-request records) at concurrency 1; "
			   "the model is noise-free");
		return;
	}
	k->noise_kind = b > 0 ? SB_NOISE_LOGNORMAL : SB_NOISE_NONE;
	set_pcv(k, b, blo, bhi,
		"TTFT p99 - p50 at concurrency 1 per prompt length: sd^2 = overhead_sd^2 + "
		"(cv * step)^2, weighted least squares");
	k->noise_cv = k->pcv;
	k->noise_cv_lo = k->pcv_lo;
	k->noise_cv_hi = k->pcv_hi;
	k->overhead_sd = sqrt(a);
	json_object_set_new(
		k->fit, "noise",
		json_pack("{s:s,s:o,s:f,s:f,s:f,s:s}", "data",
			  "TTFT p99 - p50 at concurrency 1, as normal standard deviations for the "
			  "level's sample size (Blom scores)",
			  "points", pts, "step_cv", k->noise_cv, "prefill_cv", k->pcv,
			  "overhead_sd_ms", k->overhead_sd, "kind_note",
			  "two quantiles cannot tell lognormal from gamma: lognormal assumed; no "
			  "goodness of fit without per-request records"));
	cal_missing(k, "noise distribution: level summaries give only a spread; per-request "
		   "records (ITL gaps) would allow a maximum-likelihood fit and a KS test");
	cal_missing(k, "decode-step noise: level summaries show only TTFT spreads, so decode steps "
		   "get the prefill steps' cv");
}
