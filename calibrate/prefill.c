/* prefill.c — prefill cost and client-side overhead. */
#include "calibrate/cal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/fit_linear.h"

/* ---- prefill ------------------------------------------------------------ */

/* With server timings the overhead is TTFT - prompt_ms. It grows with
 * the prompt (the server tokenises it, and the JSON gets longer, outside
 * the engine), so it is fitted as a line in the prompt tokens sent when
 * the lengths differ and the slope is positive and significant; else it
 * is the mean. */
static int fit_overhead(cal *k, const double *ov, const double *Pin, size_t n, sb_error *e)
{
	double s = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		s += ov[i];
	double m = n ? s / (double)n : 0;
	for (size_t i = 0; i < n; i++)
		ss += (ov[i] - m) * (ov[i] - m);
	k->overhead = m;
	k->overhead_se = n > 1 ? sqrt(ss / (double)(n - 1) / (double)n) : NAN;
	k->ovpt = 0;
	double to = n > 1 ? sb_linfit_t95((double)(n - 1)) : NAN;
	double lo = m - to * k->overhead_se, hi = m + to * k->overhead_se;
	const char *how = "mean of TTFT - server prompt_ms at concurrency 1";
	sb_linfit f;
	int distinct = 0;
	for (size_t i = 1; i < n; i++)
		distinct |= Pin[i] > 1.1 * Pin[0] + 1 || Pin[0] > 1.1 * Pin[i] + 1;
	if (n >= 4 && distinct && sb_linfit_line(Pin, ov, NULL, n, &f, e) == 0) {
		if (f.has_ci && f.ci_lo[1] > 0 && f.coef[0] >= 0) {
			k->overhead = f.coef[0];
			k->overhead_se = f.se[0];
			lo = f.ci_lo[0];
			hi = f.ci_hi[0];
			k->ovpt = f.coef[1];
			how = "intercept of TTFT - server prompt_ms against prompt tokens at "
			      "concurrency 1";
			cal_coef(k, "overhead_per_prompt_token", k->ovpt, f.ci_lo[1], f.ci_hi[1],
				 "ms/token", "slope of TTFT - server prompt_ms against prompt tokens");
		} else {
			cal_coef(k, "overhead_per_prompt_token", 0, f.has_ci ? f.ci_lo[1] : NAN,
				 f.has_ci ? f.ci_hi[1] : NAN, "ms/token",
				 "slope not positive within its interval: set to 0");
		}
		sb_linfit_fini(&f);
	}
	cal_coef(k, "overhead_ms", k->overhead, lo, hi, "ms", how);
	return 0;
}

int cal_fit_prefill(cal *k, sb_error *e)
{
	size_t cap = k->n_lv + k->n_rq;
	double *X = malloc(3 * cap * sizeof(double)), *y = malloc(cap * sizeof(double));
	double *w = malloc(cap * sizeof(double)), *P = malloc(cap * sizeof(double));
	double *ov = malloc(cap * sizeof(double)), *ovP = malloc(cap * sizeof(double));
	double *yt = malloc(cap * sizeof(double));
	size_t *li = malloc(cap * sizeof(size_t));
	sb_linfit lin, quad;
	memset(&lin, 0, sizeof(lin));
	memset(&quad, 0, sizeof(quad));
	int r = 0;
	if (!X || !y || !yt || !w || !P || !ov || !ovP || !li) {
		r = -ENOMEM;
		goto out;
	}
	/* One pass over the concurrency-1 points: y from the client's TTFT
	 * (less the decode steps), yt from the server's prompt_ms; the
	 * server timings are used only when every point has them. */
	size_t n = 0, n_t = 0, n_ov = 0;
	for (size_t l = 0; l < k->n_lv; l++) {
		const lvpt *L = &k->lvs[l];
		if (L->c != 1)
			continue;
		if (L->use_reqs) {
			for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
				const rqpt *R = &k->rqs[q];
				P[n] = R->P;
				y[n] = R->ttft - k->d1 * (double)cal_nsteps(k, R->P);
				yt[n] = R->prompt_ms;
				if (isfinite(R->prompt_ms)) {
					n_t++;
					ovP[n_ov] = R->Pin;
					ov[n_ov++] = R->ttft - R->prompt_ms;
				}
				w[n] = 1.0;
				li[n++] = l;
			}
		} else {
			P[n] = L->P;
			y[n] = L->ttft - k->d1 * (double)cal_nsteps(k, L->P);
			yt[n] = NAN;
			w[n] = MEDIAN_WEIGHT(L->n_ok);
			li[n++] = l;
		}
	}
	if (n == 0) {
		r = sb_error_set(e, "no TTFT at concurrency 1: the prefill fit needs single-client "
				    "runs at two or more prompt lengths (servebench run "
				    "--concurrency 1 --input-len 16, then 2048)");
		goto out;
	}
	k->timings = n_t == n;
	if (k->timings)
		memcpy(y, yt, n * sizeof(double));
	double pmin = INFINITY, pmax = -INFINITY, ymean = 0;
	for (size_t i = 0; i < n; i++)
		ymean += y[i] / (double)n;
	/* distinct prompt lengths: groups more than 10% apart (a measured
	 * length jitters by a few tokens around what was asked for) */
	size_t distinct = 0;
	{
		double *sp = malloc(n * sizeof(double));
		if (!sp) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(sp, P, n * sizeof(double));
		qsort(sp, n, sizeof(double), cal_cmp_dbl);
		double g0 = -INFINITY;
		for (size_t i = 0; i < n; i++) {
			if (sp[i] > 1.1 * g0 + 1.0) {
				distinct++;
				g0 = sp[i];
			}
		}
		pmin = sp[0];
		pmax = sp[n - 1];
		free(sp);
	}
	if (distinct < 2) {
		r = sb_error_set(e, "TTFT at concurrency 1 was measured at one prompt length only "
				    "(%g tokens): per_prefill_token needs two or more, well apart "
				    "(e.g. servebench run --concurrency 1 --input-len 16 and "
				    "--input-len 2048)", pmin);
		goto out;
	}
	/* First column: the constant (overhead, or prefill_base with timings: a
	 * base cost per prefill step). */
	for (size_t i = 0; i < n; i++) {
		X[i * 2] = k->timings ? (double)cal_nsteps(k, P[i]) : 1.0;
		X[i * 2 + 1] = P[i];
	}
	r = sb_linfit_run(X, y, w, n, 2, &lin, e);
	if (r < 0) {
		sb_error_prefix(e, "prefill fit");
		goto out;
	}
	if (k->timings) {
		/* Server prompt times scatter in proportion to their size (a
		 * 2048-token prefill varies by ms where a 16-token one varies
		 * by us): refit with weights 1/fitted^2, so the short prompts
		 * that pin down the intercept are not drowned. */
		int ok = 1;
		for (size_t i = 0; i < n; i++) {
			/* (a line can go below 0 at short prompts when prefill is
			 * superlinear: then the observed time stands in) */
			double v = lin.fitted[i] > 0 ? lin.fitted[i] : y[i];
			ok &= v > 0;
			w[i] = v > 0 ? 1.0 / (v * v) : 1.0;
		}
		sb_linfit_fini(&lin);
		if (!ok)
			for (size_t i = 0; i < n; i++)
				w[i] = 1.0;
		r = sb_linfit_run(X, y, w, n, 2, &lin, e);
		if (r < 0) {
			sb_error_prefix(e, "prefill fit");
			goto out;
		}
	}
	int use_quad = 0;
	double F = NAN, pval = NAN;
	char why[300];
	if (distinct >= 3 && n >= 4) {
		for (size_t i = 0; i < n; i++) {
			X[i * 3] = k->timings ? (double)cal_nsteps(k, P[i]) : 1.0;
			X[i * 3 + 1] = P[i];
			X[i * 3 + 2] = P[i] * (P[i] - 1.0) / 2.0;
		}
		r = sb_linfit_run(X, y, w, n, 3, &quad, e);
		if (r < 0) {
			sb_error_prefix(e, "prefill fit (quadratic)");
			goto out;
		}
		pval = sb_linfit_ftest(&lin, &quad, &F);
		use_quad = pval < 0.05 && quad.coef[2] > 0 && quad.ci_lo[2] > 0;
		snprintf(why, sizeof(why),
			 "F-test of the P(P-1)/2 term: F = %.3g, p = %.3g; coefficient %.3g: %s",
			 F, pval, quad.coef[2],
			 use_quad ? "kept (p < 0.05, interval above 0)"
				  : (quad.coef[2] <= 0 ? "dropped (not positive)"
						       : "dropped (p >= 0.05 or interval reaches 0)"));
	} else {
		snprintf(why, sizeof(why),
			 "only %zu prompt lengths / %zu points: the P(P-1)/2 term cannot be "
			 "tested (needs 3 lengths and 4 points)", distinct, n);
		cal_missing(k, "per_prefill_attn: TTFT at 3 or more prompt lengths would test "
			   "whether prefill is superlinear");
	}
	sb_linfit *f = use_quad ? &quad : &lin;
	static const char *const names_c[] = { "overhead_ms", "per_prefill_token",
					       "per_prefill_attn" };
	static const char *const names_t[] = { "prefill_base", "per_prefill_token",
					       "per_prefill_attn" };
	json_t *j = sb_linfit_to_json(f, k->timings ? names_t : names_c);
	json_object_set_new(
		j, "model",
		json_string(k->timings
				    ? "server prompt_ms = prefill_base * steps + per_prefill_token "
				      "* P [+ per_prefill_attn * P(P-1)/2]"
				    : "TTFT - decode_ms(1) * steps = overhead_ms + per_prefill_token "
				      "* P [+ per_prefill_attn * P(P-1)/2]"));
	json_object_set_new(j, "terms_decision", json_string(why));
	json_object_set_new(j, "f_test", json_pack("{s:o,s:o}", "F", cal_num(F), "p_value", cal_num(pval)));
	if (use_quad)
		json_object_set_new(j, "linear_alternative_r2", cal_num(lin.r2));
	json_object_set_new(j, "residuals", cal_residuals_json(k, f, li, P, "prompt_tokens"));
	json_object_set_new(k->fit, "prefill", j);

	k->ppt = f->coef[1];
	k->ppt_se = f->has_ci ? f->se[1] : NAN;
	k->attn = use_quad ? f->coef[2] : 0.0;
	k->attn_se = use_quad && f->has_ci ? f->se[2] : NAN;
	cal_coef(k, "per_prefill_token", f->coef[1], f->has_ci ? f->ci_lo[1] : NAN,
		 f->has_ci ? f->ci_hi[1] : NAN, "ms/token",
		 k->timings ? "server prompt_ms against prompt length"
			: "TTFT at concurrency 1 against prompt length");
	if (use_quad)
		cal_coef(k, "per_prefill_attn", f->coef[2], f->has_ci ? f->ci_lo[2] : NAN,
			 f->has_ci ? f->ci_hi[2] : NAN, "ms/token^2", "P(P-1)/2 term (F-test)");
	else
		cal_coef(k, "per_prefill_attn", 0, NAN, NAN, "ms/token^2", why);
	if (!(k->ppt > 0)) {
		/* Flat within the noise, or falling by less than 2% of the time
		 * over the lengths measured: a server whose prefill is too cheap
		 * to see. Clearly falling: the data are inconsistent. */
		double fall = -k->ppt * (pmax - pmin);
		if (!(f->has_ci && f->ci_hi[1] >= 0) && !(fall <= 0.02 * ymean)) {
			r = sb_error_set(e, "TTFT at concurrency 1 falls as the prompt grows "
					    "(per_prefill_token = %g ms/token): the prompt-length "
					    "runs look inconsistent (cached prompts?)", k->ppt);
			goto out;
		}
		cal_note(k, "per_prefill_token %.3g ms/token is zero within its interval or too small "
			"to matter (%.2g ms over the prompt lengths measured): prefill cost is not "
			"measurable here; set to 0", k->ppt, fall);
		k->ppt = 0;
		json_object_set_new(k->coefs, "per_prefill_token",
				    json_pack("{s:f,s:[o,o],s:s,s:s}", "value", 0.0, "ci95",
					      cal_num(f->ci_lo[1]), cal_num(f->ci_hi[1]), "unit",
					      "ms/token", "from",
					      "zero within its interval or negligible (set to 0)"));
	}
	double t95 = f->has_ci ? sb_linfit_t95((double)(f->n - f->p)) : NAN;
	if (k->timings) {
		k->pb = f->coef[0];
		k->pb_se = f->has_ci ? f->se[0] : NAN;
		cal_coef(k, "prefill_base", k->pb, f->has_ci ? f->ci_lo[0] : NAN,
			 f->has_ci ? f->ci_hi[0] : NAN, "ms", "server prompt_ms intercept");
		r = fit_overhead(k, ov, ovP, n_ov, e);
		if (r < 0)
			goto out;
		json_object_set_new(k->fit, "overhead_split",
				    json_string("server timings: overhead = TTFT - prompt_ms"));
		if (k->pb < 0) {
			cal_note(k, "prefill_base came out negative (%.3g ms): set to 0", k->pb);
			k->pb = 0;
		}
		if (k->overhead < 0) {
			cal_note(k, "overhead came out negative (%.3g ms): set to 0", k->overhead);
			k->overhead = 0;
		}
	} else {
		double icpt = f->coef[0];
		double se = f->has_ci ? sqrt(f->se[0] * f->se[0] +
					     (isfinite(k->d1_se) ? k->d1_se * k->d1_se : 0))
				      : NAN;
		k->pb = k->d1;
		k->pb_se = k->d1_se;
		k->overhead = icpt;
		k->overhead_se = se;
		const char *split = "no server timings: the TTFT intercept is overhead + "
				    "prefill_base; prefill_base taken = decode_ms(1) (a forward "
				    "pass reads the weights once, prompt or not)";
		if (icpt < 0) {
			k->overhead = 0;
			k->pb = k->d1 + icpt > 0 ? k->d1 + icpt : 0;
			split = "no server timings and the intercept is below decode_ms(1): "
				"overhead set to 0, prefill_base = the whole intercept";
			cal_note(k, "%s", split);
		}
		json_object_set_new(k->fit, "overhead_split", json_string(split));
		cal_coef(k, "overhead_ms", k->overhead, k->overhead - t95 * se,
			 k->overhead + t95 * se, "ms", "TTFT intercept at concurrency 1 minus "
						    "prefill_base");
		cal_coef(k, "prefill_base", k->pb, NAN, NAN, "ms", "= decode_ms(1) (assumed)");
		cal_missing(k, "overhead vs prefill_base: without server timings (prompt_ms) they are "
			   "split by assumption; a llama.cpp target reports them");
	}
out:
	sb_linfit_fini(&lin);
	sb_linfit_fini(&quad);
	free(X);
	free(y);
	free(yt);
	free(w);
	free(P);
	free(ov);
	free(ovP);
	free(li);
	return r;
}

/* TTFT with no queueing when c prompts of P tokens start in one wave. */
double cal_ttft_wave(const cal *k, double c, double P)
{
	double tok = c * P;
	return cal_ovh(k, P) + k->pb * (double)cal_nsteps(k, tok) + k->ppt * tok +
	       k->attn * c * P * (P - 1.0) / 2.0;
}
