/* fit_noise.c — MLE of lognormal/gamma noise factors with a KS statistic. */
#include "fit_noise.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sf_gamma.h>
#include <gsl/gsl_sf_psi.h>

#include "core/stats.h"

double sb_noisefit_ks_q(double lambda)
{
	if (lambda < 0.2)
		return 1.0;
	double s = 0;
	for (int k = 1; k <= 100; k++) {
		double t = 2.0 * exp(-2.0 * k * k * lambda * lambda);
		s += (k % 2) ? t : -t;
		if (t < 1e-16)
			break;
	}
	return s < 0 ? 0 : (s > 1 ? 1 : s);
}

static double cdf(const sb_noisefit *f, double x)
{
	if (f->kind == SB_NOISE_LOGNORMAL)
		return gsl_cdf_lognormal_P(x, f->a, f->b);
	/* The error-returning form: for a huge shape (nearly constant data)
	 * the incomplete gamma's asymptotics can fail; the normal
	 * approximation of a gamma is excellent there. */
	gsl_sf_result r;
	if (gsl_sf_gamma_inc_P_e(f->a, x / f->b, &r) == GSL_SUCCESS)
		return r.val;
	double mean = f->a * f->b, sd = sqrt(f->a) * f->b;
	return gsl_cdf_ugaussian_P((x - mean) / sd);
}

int sb_noisefit_run(const double *x, size_t n, sb_noise_kind kind, sb_noisefit *out,
		    sb_error *e)
{
	memset(out, 0, sizeof(*out));
	if (kind != SB_NOISE_LOGNORMAL && kind != SB_NOISE_GAMMA)
		return sb_error_set(e, "noise fit: kind must be lognormal or gamma");
	if (n < 3)
		return sb_error_set(e, "noise fit: %zu values (at least 3 needed)", n);
	double sum = 0, slog = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(x[i] > 0) || !isfinite(x[i]))
			return sb_error_set(e, "noise fit: value %zu (%g) is not a positive "
					       "number", i, x[i]);
		sum += x[i];
		slog += log(x[i]);
	}
	double mean = sum / (double)n, mlog = slog / (double)n;
	out->kind = kind;
	out->n = n;
	out->mean = mean;
	if (kind == SB_NOISE_LOGNORMAL) {
		double ss = 0;
		for (size_t i = 0; i < n; i++)
			ss += (log(x[i]) - mlog) * (log(x[i]) - mlog);
		double sigma = sqrt(ss / (double)n);
		if (!(sigma > 0))
			return sb_error_set(e, "noise fit: all %zu values are equal", n);
		out->a = mlog;
		out->b = sigma;
		out->cv = sqrt(expm1(sigma * sigma));
		double ll = 0;
		for (size_t i = 0; i < n; i++)
			ll += log(gsl_ran_lognormal_pdf(x[i], mlog, sigma));
		out->loglik = ll;
	} else {
		double s = log(mean) - mlog;
		if (!(s > 0))
			return sb_error_set(e, "noise fit: all %zu values are equal", n);
		double k = (3.0 - s + sqrt((s - 3.0) * (s - 3.0) + 24.0 * s)) / (12.0 * s);
		for (int it = 0; it < 100; it++) {
			double g = log(k) - gsl_sf_psi(k) - s;
			double dg = 1.0 / k - gsl_sf_psi_1(k);
			double kn = k - g / dg;
			if (!(kn > 0))
				kn = k / 2;
			if (fabs(kn - k) < 1e-12 * k) {
				k = kn;
				break;
			}
			k = kn;
		}
		double theta = mean / k;
		out->a = k;
		out->b = theta;
		out->cv = 1.0 / sqrt(k);
		out->loglik = (double)n * (-gsl_sf_lngamma(k) - k * log(theta)) +
			      (k - 1.0) * slog - sum / theta;
	}
	double *s = sb_sorted_copy(x, n);
	if (!s)
		return -ENOMEM;
	double d = 0;
	for (size_t i = 0; i < n; i++) {
		double F = cdf(out, s[i]);
		double d1 = (double)(i + 1) / (double)n - F;
		double d2 = F - (double)i / (double)n;
		if (d1 > d)
			d = d1;
		if (d2 > d)
			d = d2;
	}
	free(s);
	out->ks_d = d;
	double rn = sqrt((double)n);
	out->ks_p = sb_noisefit_ks_q((rn + 0.12 + 0.11 / rn) * d);
	return 0;
}

int sb_noisefit_best(const double *x, size_t n, sb_noisefit *best, sb_noisefit *other,
		     sb_error *e)
{
	sb_noisefit ln, ga;
	int r = sb_noisefit_run(x, n, SB_NOISE_LOGNORMAL, &ln, e);
	if (r < 0)
		return r;
	r = sb_noisefit_run(x, n, SB_NOISE_GAMMA, &ga, e);
	if (r < 0)
		return r;
	int ln_wins = ln.loglik >= ga.loglik;
	*best = ln_wins ? ln : ga;
	if (other)
		*other = ln_wins ? ga : ln;
	return 0;
}

json_t *sb_noisefit_to_json(const sb_noisefit *f)
{
	int ln = f->kind == SB_NOISE_LOGNORMAL;
	return json_pack("{s:s,s:I,s:{s:f,s:f},s:f,s:f,s:f,s:{s:f,s:f,s:s}}", "kind",
			 sb_noise_name(f->kind), "n", (json_int_t)f->n, "params",
			 ln ? "mu" : "shape", f->a, ln ? "sigma" : "scale", f->b, "mean",
			 f->mean, "cv", f->cv, "loglik", f->loglik, "ks", "d", f->ks_d,
			 "p_value", f->ks_p, "note",
			 "parameters estimated from the same data: p-value is conservative");
}
