/* decode.c — decode step time: at one sequence, and at B >= 2 busy sequences. */
#include "calibrate/cal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "calibrate/fit_linear.h"

/* ---- decode at one sequence --------------------------------------------- */

int cal_fit_decode1(cal *k, sb_error *e)
{
	size_t cap = k->n_lv + k->n_rq;
	double *X = malloc(2 * cap * sizeof(double)), *y = malloc(cap * sizeof(double));
	double *w = malloc(cap * sizeof(double)), *x = malloc(cap * sizeof(double));
	size_t *li = malloc(cap * sizeof(size_t));
	int r = 0;
	if (!X || !y || !w || !x || !li) {
		r = -ENOMEM;
		goto out;
	}
	size_t n = 0;
	double xmin = INFINITY, xmax = -INFINITY;
	for (size_t l = 0; l < k->n_lv; l++) {
		const lvpt *L = &k->lvs[l];
		if (L->c != 1 || L->N < 2)
			continue;
		if (L->use_reqs) {
			for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
				if (!isfinite(k->rqs[q].tpot))
					continue;
				x[n] = k->rqs[q].P + k->rqs[q].N / 2.0;
				y[n] = k->rqs[q].tpot;
				w[n] = 1.0;
				li[n++] = l;
			}
		} else {
			x[n] = L->P + L->N / 2.0;
			y[n] = L->tpot;
			w[n] = MEDIAN_WEIGHT(L->n_ok);
			li[n++] = l;
		}
	}
	if (n == 0) {
		r = sb_error_set(e, "no TPOT at concurrency 1: decode_ms(1) needs single-client "
				    "runs generating 2 or more tokens (servebench run "
				    "--concurrency 1 --output-len 64)");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (x[i] < xmin)
			xmin = x[i];
		if (x[i] > xmax)
			xmax = x[i];
	}
	sb_linfit f;
	/* a slope needs contexts a factor 1.5 apart: a few tokens of
	 * tokenizer jitter around one prompt length identify nothing */
	int two = xmax - xmin >= 1.0 && xmax >= 1.5 * xmin;
	for (;;) {
		size_t p = two ? 2 : 1;
		for (size_t i = 0; i < n; i++) {
			X[i * p] = 1.0;
			if (two)
				X[i * p + 1] = x[i];
		}
		r = sb_linfit_run(X, y, w, n, p, &f, e);
		if (r < 0) {
			sb_error_prefix(e, "TPOT at concurrency 1");
			goto out;
		}
		if (two && f.coef[1] < 0) {
			cal_note(k, "TPOT at concurrency 1 fell with context (slope %.3g ms/token): "
				"per_kv_token set to 0", f.coef[1]);
			sb_linfit_fini(&f);
			two = 0;
			continue;
		}
		break;
	}
	static const char *const names[] = { "decode_ms_1", "per_kv_token" };
	json_t *j = sb_linfit_to_json(&f, names);
	json_object_set_new(j, "model", json_string(two ? "TPOT = decode_ms(1) + per_kv_token * "
							  "(prompt + output/2)"
							: "TPOT = decode_ms(1)"));
	json_object_set_new(j, "data", json_string("TPOT at concurrency 1 (per request, or level "
						    "medians weighted 2n/pi)"));
	json_object_set_new(j, "residuals", cal_residuals_json(k, &f, li, x, "context_tokens"));
	json_object_set_new(k->fit, "decode_1", j);
	k->d1 = f.coef[0];
	k->d1_se = f.has_ci ? f.se[0] : NAN;
	cal_coef(k, "decode_ms[1]", f.coef[0], f.has_ci ? f.ci_lo[0] : NAN,
		 f.has_ci ? f.ci_hi[0] : NAN, "ms", "TPOT at concurrency 1");
	if (two) {
		k->kv = f.coef[1];
		k->kv_se = f.has_ci ? f.se[1] : NAN;
		cal_coef(k, "per_kv_token", f.coef[1], f.has_ci ? f.ci_lo[1] : NAN,
			 f.has_ci ? f.ci_hi[1] : NAN, "ms/token", "TPOT slope against context");
	} else {
		k->kv = 0;
		k->kv_se = NAN;
		cal_coef(k, "per_kv_token", 0, NAN, NAN, "ms/token", "not identified (set to 0)");
		if (!(xmax >= 1.5 * xmin))
			cal_missing(k, "per_kv_token: TPOT was measured at one context length only; "
				   "measure concurrency 1 at two or more prompt lengths");
	}
	if (!(k->d1 > 0))
		r = sb_error_set(e, "TPOT at concurrency 1 gives decode_ms(1) = %g ms, which is "
				    "not positive: the TPOT measurements are inconsistent", k->d1);
	sb_linfit_fini(&f);
out:
	free(X);
	free(y);
	free(w);
	free(x);
	free(li);
	return r;
}

/* A prefill that ended at time t (s) and added `extra` s to that step. */
typedef struct pfev {
	double t, extra, cum; /* cum: sum of extra up to and including this one */
} pfev;

static int cmp_pfev(const void *a, const void *b)
{
	double x = ((const pfev *)a)->t, y = ((const pfev *)b)->t;
	return (x > y) - (x < y);
}

/* The level's prefill events in time order (new array of L->nrq), or NULL. */
static pfev *prefill_events(const cal *k, const lvpt *L)
{
	pfev *ev = malloc((L->nrq ? L->nrq : 1) * sizeof(*ev));
	if (!ev)
		return NULL;
	for (size_t i = 0; i < L->nrq; i++) {
		const rqpt *R = &k->rqs[L->rq0 + i];
		ev[i] = (pfev){ R->t_first, cal_prefill_var(k, R->P) / 1e3, 0 };
	}
	qsort(ev, L->nrq, sizeof(*ev), cmp_pfev);
	double c = 0;
	for (size_t i = 0; i < L->nrq; i++) {
		c += ev[i].extra;
		ev[i].cum = c;
	}
	return ev;
}

/* Time t on a clock that skips the prefill work of every prefill that ended
 * at or before t; prefills seen up to tol after t count as before it (first
 * tokens of one step reach the client with jitter). O(log n). */
static double warp(const pfev *ev, size_t n, double t, double tol)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ev[mid].t <= t + tol)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? t - ev[lo - 1].cum : t;
}

/* Before every client has sent a recorded request, some run unrecorded
 * warm-up requests that would be invisible to the effective batch: requests
 * that start decoding before then are left out of the decode fit. Returns
 * the c-th earliest send time of the level (-inf when fewer records). */
static double warm_cut(const cal *k, const lvpt *L)
{
	size_t c = (size_t)L->c;
	if (L->nrq < c || c < 1)
		return -INFINITY;
	double *t = malloc(L->nrq * sizeof(double));
	if (!t)
		return -INFINITY;
	for (size_t i = 0; i < L->nrq; i++)
		t[i] = k->rqs[L->rq0 + i].t_sent;
	qsort(t, L->nrq, sizeof(double), cal_cmp_dbl);
	double r = t[c - 1];
	free(t);
	return r;
}

/* ---- decode at B >= 2 --------------------------------------------------- */

int cal_fit_decode_batches(cal *k, sb_error *e)
{
	json_t *pts = json_array();
	/* One row per request (or per summary level): y = the step time its
	 * TPOT implies at an effective batch bbar once the KV and prefill
	 * interference terms are removed. */
	typedef struct drow {
		double y, bbar, w;
	} drow;
	size_t cap = k->n_rq + k->n_lv + 1;
	drow *rows = malloc(cap * sizeof(*rows));
	if (!rows) {
		json_decref(pts);
		return -ENOMEM;
	}
	size_t nrow = 0;
	int U[SB_LINFIT_MAXP];
	int nu = 0;
	for (size_t l = 0; l < k->n_lv; l++) {
		const lvpt *L = &k->lvs[l];
		if (L->c < 2 || L->N < 2 || !isfinite(L->tpot))
			continue;
		int S = k->fslots[L->file];
		int B = (int)L->c < S ? (int)L->c : S;
		const char *fn = cal_base_name(cal_fname(k, L->file));
		if (B < 2) {
			double pred = k->d1 + k->kv * (L->P + L->N / 2.0);
			json_array_append_new(
				pts, json_pack("{s:s,s:f,s:i,s:f,s:f,s:s}", "file", fn, "concurrency",
					       L->c, "batch", 1, "tpot_ms", L->tpot, "check_residual_ms",
					       L->tpot - pred, "use",
					       "check only (one slot: decode_ms(1) comes from "
					       "concurrency 1)"));
			continue;
		}
		double ymean, bmean, kvc, interf;
		size_t row0 = nrow;
		const char *how;
		char howbuf[200];
		if (L->use_reqs) {
			double sy = 0, sb = 0, si = 0, sk = 0;
			long m = 0;
			pfev *ev = prefill_events(k, L);
			if (!ev) {
				free(rows);
				json_decref(pts);
				return -ENOMEM;
			}
			double t_cut = warm_cut(k, L);
			/* first tokens seen within half a step of each other came
			 * from one step (distinct steps are a whole step apart) */
			double tol = 0.5 * k->d1 / 1e3;
			for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
				const rqpt *R = &k->rqs[q];
				if (!isfinite(R->tpot) || !(R->t_done > R->t_first) ||
				    R->t_first < t_cut)
					continue;
				double margin = 0.5 * R->tpot / 1e3;
				double add = 0, overlap = 0;
				double a0 = warp(ev, L->nrq, R->t_first, tol);
				double b0 = warp(ev, L->nrq, R->t_done, tol);
				for (size_t o = L->rq0; o < L->rq0 + L->nrq; o++) {
					if (o == q)
						continue;
					const rqpt *O = &k->rqs[o];
					/* its prefill ended in one of R's decode steps */
					if (O->t_first > R->t_first + margin &&
					    O->t_first <= R->t_done + margin)
						add += cal_prefill_var(k, O->P);
					double a1 = warp(ev, L->nrq, O->t_first, tol);
					double b1 = warp(ev, L->nrq, O->t_done, tol);
					double a = a1 > a0 ? a1 : a0, b = b1 < b0 ? b1 : b0;
					if (b > a)
						overlap += b - a;
				}
				double bbar = b0 > a0 ? 1.0 + overlap / (b0 - a0) : 1.0;
				if (bbar > B)
					bbar = B;
				double corr_i = add / (R->N - 1.0);
				double kv_i = k->kv * bbar * (R->P + R->N / 2.0);
				double d = R->tpot - kv_i - corr_i;
				rows[nrow++] = (drow){ d, bbar, 1.0 };
				sy += d;
				sb += bbar;
				si += corr_i;
				sk += kv_i;
				m++;
			}
			free(ev);
			if (m == 0)
				continue;
			ymean = sy / (double)m;
			bmean = sb / (double)m;
			/* every request of the level sits at the level's mean effective
			 * batch: a single request's estimate is noisy, and noise in a
			 * regressor would bias the fit (errors in variables) */
			for (size_t q = row0; q < nrow; q++)
				rows[q].bbar = bmean;
			interf = si / (double)m;
			kvc = sk / (double)m;
			how = "per request: other requests' prefills that finished inside its decode "
			      "phase (from their first-token times); effective batch = 1 + the time "
			      "others decoded alongside it / its decode time, both on a clock "
			      "with the prefill work removed (prefill steps are long but add no "
			      "decoding sequence)";
		} else {
			double fr;
			if ((int)L->c > S) {
				fr = 0.5;
				how = "queued level: half of the staggered-admission interference "
				      "assumed (unidentifiable from a summary)";
			} else {
				double tw = cal_ttft_wave(k, L->c, L->P);
				double tsg = cal_ovh(k, L->P) + cal_prefill_var(k, L->P) + 1.5 * L->tpot;
				fr = tw > tsg ? (tw - L->ttft) / (tw - tsg) : 0.0;
				if (fr < 0)
					fr = 0;
				if (fr > 1)
					fr = 1;
				snprintf(howbuf, sizeof(howbuf),
					 "summary: TTFT %.4g ms lies between one-wave %.4g ms and "
					 "staggered %.4g ms admission -> %.0f%% of the staggered "
					 "interference", L->ttft, tw, tsg, 100 * fr);
				how = howbuf;
			}
			interf = fr * (double)(B - 1) * cal_prefill_var(k, L->P) / (L->N - 1.0);
			kvc = k->kv * (double)B * (L->P + L->N / 2.0);
			ymean = L->tpot - kvc - interf;
			bmean = B;
			rows[nrow++] = (drow){ ymean, (double)B, MEDIAN_WEIGHT(L->n_ok) };
		}
		json_array_append_new(
			pts, json_pack("{s:s,s:f,s:i,s:f,s:f,s:f,s:f,s:f,s:s}", "file", fn,
				       "concurrency", L->c, "batch", B, "effective_batch", bmean,
				       "tpot_ms", L->tpot, "minus_kv_ms", kvc,
				       "minus_prefill_interference_ms", interf, "step_ms", ymean,
				       "correction", how));
		if (!(ymean > 0)) {
			cal_note(k, "%s: concurrency %g gives a decode step of %.3g ms after corrections: "
				"not used", fn, L->c, ymean);
			nrow = row0;
			continue;
		}
		int i;
		for (i = 0; i < nu && U[i] != B; i++)
			;
		if (i == nu) {
			if (nu == SB_LINFIT_MAXP || nu == SB_MODEL_MAX_DECODE - 1) {
				cal_note(k, "%s: batch %d not used (at most %d batch sizes are fitted)", fn,
					 B, SB_LINFIT_MAXP);
				nrow = row0;
				continue;
			}
			U[nu++] = B;
		}
	}
	/* unknowns in ascending batch order */
	for (int i = 1; i < nu; i++)
		for (int j = i; j > 0 && U[j] < U[j - 1]; j--) {
			int t = U[j];
			U[j] = U[j - 1];
			U[j - 1] = t;
		}
	k->dec[0] = (sb_decode_point){ 1, k->d1 };
	k->dec_se[0] = k->d1_se;
	k->n_dec = 1;
	json_t *dj = json_pack("{s:o}", "points", pts);
	int r = 0;
	if (nu > 0) {
		/* decode_ms(B) is linear between table points (as the simulator
		 * reads it), so a row at effective batch bbar is a fixed mix of
		 * two table entries: least squares for the unknown entries. */
		double *X = calloc(nrow * (size_t)nu, sizeof(double));
		double *y = malloc(nrow * sizeof(double)), *w = malloc(nrow * sizeof(double));
		if (!X || !y || !w) {
			free(X);
			free(y);
			free(w);
			free(rows);
			json_decref(dj);
			return -ENOMEM;
		}
		for (size_t q = 0; q < nrow; q++) {
			double bb = rows[q].bbar;
			double yy = rows[q].y;
			double lo = 1;
			int hi_i = 0;
			while (hi_i < nu && U[hi_i] < bb)
				hi_i++;
			if (hi_i == nu) {
				X[q * (size_t)nu + (size_t)(nu - 1)] = 1.0;
			} else {
				lo = hi_i > 0 ? U[hi_i - 1] : 1.0;
				double t = (bb - lo) / ((double)U[hi_i] - lo);
				if (t < 0)
					t = 0;
				X[q * (size_t)nu + (size_t)hi_i] = t;
				if (hi_i > 0)
					X[q * (size_t)nu + (size_t)(hi_i - 1)] = 1.0 - t;
				else
					yy -= (1.0 - t) * k->d1;
			}
			y[q] = yy;
			w[q] = rows[q].w;
		}
		sb_linfit f;
		r = sb_linfit_run(X, y, w, nrow, (size_t)nu, &f, e);
		free(X);
		free(y);
		free(w);
		if (r < 0) {
			sb_error_prefix(e, "decode step per batch size");
			free(rows);
			json_decref(dj);
			return r;
		}
		char names_buf[SB_LINFIT_MAXP][16];
		const char *names[SB_LINFIT_MAXP];
		json_t *tab = json_object();
		json_object_set_new(tab, "1", json_real(k->d1));
		for (int i = 0; i < nu; i++) {
			snprintf(names_buf[i], sizeof(names_buf[i]), "%d", U[i]);
			names[i] = names_buf[i];
			k->dec[k->n_dec] = (sb_decode_point){ U[i], f.coef[i] };
			k->dec_se[k->n_dec] = f.has_ci ? f.se[i] : NAN;
			k->n_dec++;
			json_object_set_new(tab, names_buf[i], json_real(f.coef[i]));
			char key[32];
			snprintf(key, sizeof(key), "decode_ms[%d]", U[i]);
			cal_coef(k, key, f.coef[i], f.has_ci ? f.ci_lo[i] : NAN,
				 f.has_ci ? f.ci_hi[i] : NAN, "ms",
				 "TPOT at that batch size, corrected (see fit.decode)");
		}
		json_t *lj = sb_linfit_to_json(&f, names);
		json_object_set_new(lj, "model",
				    json_string("step = decode_ms(effective batch), linear between "
						"table entries; decode_ms(1) fixed from concurrency 1"));
		json_object_set_new(dj, "fit", lj);
		json_object_set_new(dj, "table", tab);
		sb_linfit_fini(&f);
		for (int i = 1; i < k->n_dec; i++) {
			if (!(k->dec[i].ms > 0)) {
				free(rows);
				json_decref(dj);
				return sb_error_set(e, "decode_ms(%d) came out %.3g ms: the TPOTs at "
						       "that batch size are inconsistent with the rest",
						    k->dec[i].batch, k->dec[i].ms);
			}
			double sep = 2.0 * sqrt((isfinite(k->dec_se[i]) ? k->dec_se[i] * k->dec_se[i] : 0) +
						(isfinite(k->dec_se[i - 1])
							 ? k->dec_se[i - 1] * k->dec_se[i - 1]
							 : 0));
			if (k->dec[i].ms < k->dec[i - 1].ms - sep)
				cal_note(k, "decode_ms(%d) = %.3g ms is below decode_ms(%d) = %.3g ms: a "
					"larger batch looks cheaper per step; check those levels",
				     k->dec[i].batch, k->dec[i].ms, k->dec[i - 1].batch,
				     k->dec[i - 1].ms);
		}
	}
	free(rows);
	if (k->n_dec == 1) {
		cal_missing(k, "decode_ms at batch sizes above 1: no level ran 2 or more sequences "
			   "at once; measure a concurrency sweep (--concurrency 1,2,4,8) on a "
			   "server with slots");
	} else {
		/* decode_ms(B) = base + per_seq * B over the table, for the report */
		double y[SB_MODEL_MAX_DECODE], xb[SB_MODEL_MAX_DECODE];
		for (int i = 0; i < k->n_dec; i++) {
			xb[i] = k->dec[i].batch;
			y[i] = k->dec[i].ms;
		}
		sb_linfit lf;
		sb_error e2;
		if (sb_linfit_line(xb, y, NULL, (size_t)k->n_dec, &lf, &e2) == 0) {
			static const char *const names[] = { "base", "per_seq" };
			json_t *lj = sb_linfit_to_json(&lf, names);
			json_object_set_new(lj, "note",
					    json_string("decode_ms(B) = base + per_seq * B over the "
							"table; reported only, the model keeps the "
							"per-batch table"));
			json_t *res = json_array();
			for (int i = 0; i < k->n_dec; i++)
				json_array_append_new(res, json_pack("{s:f,s:f}", "batch", xb[i],
								     "residual", lf.resid[i]));
			json_object_set_new(lj, "residuals", res);
			json_object_set_new(dj, "linear", lj);
			cal_coef(k, "base", lf.coef[0], lf.has_ci ? lf.ci_lo[0] : NAN,
				 lf.has_ci ? lf.ci_hi[0] : NAN, "ms", "line through the decode table");
			cal_coef(k, "per_seq", lf.coef[1], lf.has_ci ? lf.ci_lo[1] : NAN,
				 lf.has_ci ? lf.ci_hi[1] : NAN, "ms/sequence",
				 "line through the decode table");
			sb_linfit_fini(&lf);
		}
	}
	json_object_set_new(k->fit, "decode", dj);
	return r;
}
