/* calibrate.c — the engine model from results files (see calibrate.h). */
#include "calibrate.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>

#include "calibrate/fit_linear.h"
#include "calibrate/fit_noise.h"
#include "calibrate/slots.h"

/* Relative weight of a median of n values against one value: the median's
 * variance is about (pi/2)·sigma²/n for a normal sample. */
#define MEDIAN_WEIGHT(n) (2.0 * (double)(n) / M_PI)

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* One closed-loop level of one input file. */
typedef struct lvpt {
	size_t file, index;
	const sb_rlevel *rl;
	double c;
	int slots;       /* slots of the server that produced this file */
	double P, N;     /* mean prompt and output tokens */
	long n_ok;
	int use_reqs;    /* 1: per-request records, 0: summary */
	size_t rq0, nrq; /* its requests in cal.rqs */
	double ttft, tpot, e2e, ttft_p99, wait;
	int wait_has_overhead; /* measured waits are TTFT - server prompt_ms */
} lvpt;

/* One successful request. Times in s relative to the level start. */
typedef struct rqpt {
	size_t lv;
	double P, N, ttft, e2e, tpot;
	double Pin; /* prompt tokens sent (P: those the server processed) */
	double t_sent, t_first, t_done;
	double prompt_ms, wait;
	const double *itl;
	size_t n_itl;
} rqpt;

typedef struct cal {
	const sb_calib_input *in;
	size_t n_in;
	const sb_calib_opts *o;
	lvpt *lvs;
	size_t n_lv;
	rqpt *rqs;
	size_t n_rq, cap_rq;
	int *fslots;
	long batch_tokens;
	json_t *fit, *notes, *missing, *coefs;
	/* results */
	double d1, d1_se, kv, kv_se;
	double overhead, overhead_se, pb, pb_se, ppt, ppt_se, attn, attn_se;
	double ovpt; /* overhead per prompt token sent */
	int timings; /* prefill fitted from server prompt_ms */
	int slots;
	sb_decode_point dec[SB_MODEL_MAX_DECODE];
	double dec_se[SB_MODEL_MAX_DECODE];
	int n_dec;
	double admit, admit_lo, admit_hi;
	sb_noise_kind noise_kind;
	double noise_cv, noise_cv_lo, noise_cv_hi, overhead_sd;
	double pcv, pcv_lo, pcv_hi; /* noise of steps with prompt work */
	const char *pcv_from;
} cal;

void sb_calib_opts_init(sb_calib_opts *o)
{
	memset(o, 0, sizeof(*o));
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static void note(cal *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(cal *k, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(k->notes, json_string(buf));
}

static void missing(cal *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void missing(cal *k, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(k->missing, json_string(buf));
}

/* Records a coefficient for the report: value, 95% interval (NaN: none),
 * unit and where it came from. */
static void coef(cal *k, const char *name, double v, double lo, double hi, const char *unit,
		 const char *from)
{
	json_object_set_new(k->coefs, name,
			    json_pack("{s:o,s:[o,o],s:s,s:s}", "value", num(v), "ci95", num(lo),
				      num(hi), "unit", unit, "from", from));
}

static const char *fname(const cal *k, size_t f)
{
	return k->in[f].name ? k->in[f].name : "(input)";
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static long nsteps(const cal *k, double P)
{
	if (k->batch_tokens <= 0)
		return 1;
	long s = (long)ceil(P / (double)k->batch_tokens);
	return s < 1 ? 1 : s;
}

/* Prompt work added to a step that also decodes: the prefill terms only. */
static double prefill_var(const cal *k, double P)
{
	return k->ppt * P + k->attn * P * (P - 1.0) / 2.0;
}

/* Client-side overhead of a request with Pin prompt tokens. */
static double ovh(const cal *k, double Pin)
{
	return k->overhead + k->ovpt * Pin;
}

static int push_rq(cal *k, const rqpt *r)
{
	if (k->n_rq == k->cap_rq) {
		size_t nc = k->cap_rq ? 2 * k->cap_rq : 256;
		rqpt *p = realloc(k->rqs, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		k->rqs = p;
		k->cap_rq = nc;
	}
	k->rqs[k->n_rq++] = *r;
	return 0;
}

/* target.KEY as a string; for a simulated run, whose target.model is the
 * model object itself, that model's name. */
static const char *target_str(const sb_results *r, const char *key)
{
	const json_t *t = json_object_get(r->root, "target");
	const json_t *v = json_object_get(t, key);
	if (json_is_object(v))
		v = json_object_get(v, "name");
	return json_string_value(v);
}

static long target_long(const sb_results *r, const char *key)
{
	const json_t *t = json_object_get(r->root, "target");
	const json_t *v = json_object_get(t, key);
	return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

static double server_num(const json_t *srv, const char *key)
{
	const json_t *v = json_object_get(srv, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Describes the failures of a level for messages. */
static void fail_text(const sb_rlevel *rl, char *buf, size_t len)
{
	buf[0] = 0;
	for (size_t i = 0; i < rl->n_reqs; i++) {
		if (rl->reqs[i].err_class) {
			snprintf(buf, len, "first error: %s%s%s", rl->reqs[i].err_class,
				 rl->reqs[i].err_msg ? ": " : "",
				 rl->reqs[i].err_msg ? rl->reqs[i].err_msg : "");
			return;
		}
	}
	if (rl->sum.n_errors > 0)
		snprintf(buf, len, "errors: %s x%ld", rl->sum.errors[0].cls,
			 rl->sum.errors[0].count);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* ---- collecting the data ------------------------------------------------ */

static int collect_level(cal *k, size_t f, size_t li, long *failed, int *used, sb_error *e)
{
	const sb_results *res = k->in[f].res;
	const sb_rlevel *rl = &res->levels[li];
	const sb_level *s = &rl->sum;
	const char *fn = fname(k, f);
	if (s->mode == SB_MODE_RATE) {
		note(k, "%s: level %g is open-loop (rate): not used (the fit uses closed-loop levels)",
		     base_name(fn), s->level);
		return 0;
	}
	if (!(s->level >= 1) || s->level != floor(s->level))
		return sb_error_set(e, "%s: levels[%zu]: concurrency %g is not a whole number >= 1",
				    fn, li, s->level);
	lvpt L;
	memset(&L, 0, sizeof(L));
	L.file = f;
	L.index = li;
	L.rl = rl;
	L.c = s->level;
	L.wait = NAN;
	L.ttft_p99 = NAN;
	/* level.h: a measured wait is TTFT minus the server's prompt time, so
	 * it still holds the client/network overhead; a simulated one is the
	 * queue time alone */
	L.wait_has_overhead = strcmp(res->source, "simulated") != 0;
	double wl_P = res->has_workload ? sb_dist_mean(&res->workload.input_len) : NAN;
	double wl_N = res->has_workload ? sb_dist_mean(&res->workload.output_len) : NAN;
	if (rl->n_reqs > 0) {
		L.use_reqs = 1;
		L.rq0 = k->n_rq;
		double st = 0, se2e = 0, stp = 0, sw = 0;
		long ntp = 0, nw = 0;
		for (size_t i = 0; i < rl->n_reqs; i++) {
			const sb_reqrec *q = &rl->reqs[i];
			if (q->err_class) {
				(*failed)++;
				continue;
			}
			if (!isfinite(q->ttft_ms) || !isfinite(q->e2e_ms))
				return sb_error_set(e, "%s: levels[%zu].requests[%zu]: ttft_ms/e2e_ms "
						       "is not a number", fn, li, i);
			rqpt r;
			memset(&r, 0, sizeof(r));
			r.lv = k->n_lv;
			const json_t *srv = rl->server[i];
			double pn = server_num(srv, "prompt_n");
			r.P = q->prompt_tokens >= 1 ? (double)q->prompt_tokens : wl_P;
			r.N = q->output_tokens >= 1 ? (double)q->output_tokens : wl_N;
			if (!isfinite(r.P))
				return sb_error_set(e, "%s: levels[%zu].requests[%zu]: prompt_tokens "
						       "is unknown and the file has no workload.input_len: "
						       "the prefill fit needs each request's prompt length",
						    fn, li, i);
			if (!isfinite(r.N))
				return sb_error_set(e, "%s: levels[%zu].requests[%zu]: output_tokens "
						       "is unknown and the file has no workload.output_len",
						    fn, li, i);
			r.Pin = r.P;
			r.prompt_ms = server_num(srv, "prompt_ms");
			if (isfinite(r.prompt_ms) && pn >= 1)
				r.P = pn; /* tokens the server actually processed (no cache hits) */
			r.ttft = q->ttft_ms;
			r.e2e = q->e2e_ms;
			r.tpot = r.N >= 2 ? (q->e2e_ms - q->ttft_ms) / (r.N - 1.0) : NAN;
			r.t_sent = isfinite(q->t_sent_s) ? q->t_sent_s : q->t_scheduled_s;
			r.t_first = r.t_sent + q->ttft_ms / 1e3;
			r.t_done = isfinite(q->t_done_s) ? q->t_done_s : r.t_sent + q->e2e_ms / 1e3;
			r.wait = q->wait_ms;
			r.itl = q->itl_ms;
			r.n_itl = q->n_itl;
			int rc = push_rq(k, &r);
			if (rc < 0)
				return rc;
			st += r.ttft;
			se2e += r.e2e;
			L.P += r.P;
			L.N += r.N;
			if (isfinite(r.tpot)) {
				stp += r.tpot;
				ntp++;
			}
			if (isfinite(r.wait)) {
				sw += r.wait;
				nw++;
			}
			L.n_ok++;
		}
		L.nrq = k->n_rq - L.rq0;
		if (L.n_ok == 0)
			return 0;
		L.ttft = st / (double)L.n_ok;
		L.e2e = se2e / (double)L.n_ok;
		L.P /= (double)L.n_ok;
		L.N /= (double)L.n_ok;
		L.tpot = ntp ? stp / (double)ntp : NAN;
		L.wait = nw == L.n_ok ? sw / (double)nw : NAN;
		L.ttft_p99 = s->ttft_ms.p99;
	} else {
		*failed += s->requests_failed;
		if (s->requests_ok <= 0)
			return 0;
		if (!res->has_workload || !isfinite(wl_P) || !isfinite(wl_N))
			return sb_error_set(e, "%s: levels[%zu] (concurrency %g) has no per-request "
					       "records and the file has no workload.input_len/"
					       "output_len: a level summary needs the prompt and output "
					       "lengths it was measured with", fn, li, L.c);
		if (!sb_dist_is_det(&res->workload.input_len) ||
		    !sb_dist_is_det(&res->workload.output_len))
			note(k, "%s: prompt/output lengths vary; the summary of level %g is fitted "
				"at their means", base_name(fn), L.c);
		L.P = wl_P;
		L.N = wl_N;
		L.n_ok = s->requests_ok;
		L.ttft = s->ttft_ms.p50;
		L.tpot = s->tpot_ms.p50;
		L.ttft_p99 = s->ttft_ms.p99;
		if (!isfinite(L.ttft))
			return sb_error_set(e, "%s: levels[%zu] (concurrency %g): ttft_ms.p50 is "
					       "missing (absent or null): every level needs its "
					       "median TTFT", fn, li, L.c);
		if (L.N >= 2 && !isfinite(L.tpot))
			return sb_error_set(e, "%s: levels[%zu] (concurrency %g): tpot_ms.p50 is "
					       "missing (absent or null): every level with 2 or more "
					       "output tokens needs its median TPOT", fn, li, L.c);
		L.e2e = isfinite(s->e2e_ms.p50) ? s->e2e_ms.p50 : L.ttft + (L.N - 1.0) * L.tpot;
		L.wait = s->wait_ms.mean;
	}
	if (!(L.ttft >= 0) || (isfinite(L.tpot) && !(L.tpot > 0)))
		return sb_error_set(e, "%s: levels[%zu] (concurrency %g): TTFT %g ms / TPOT %g ms "
				       "are not plausible (need TTFT >= 0, TPOT > 0)",
				    fn, li, L.c, L.ttft, L.tpot);
	lvpt *p = realloc(k->lvs, (k->n_lv + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	k->lvs = p;
	k->lvs[k->n_lv++] = L;
	*used = 1;
	return 0;
}

static int collect(cal *k, sb_error *e)
{
	const char *model0 = NULL, *src0 = NULL;
	size_t model_f = 0, src_f = 0;
	long bt = -2;
	long total_failed = 0;
	for (size_t f = 0; f < k->n_in; f++) {
		const sb_results *r = k->in[f].res;
		const char *m = target_str(r, "model");
		if (m) {
			if (model0 && strcmp(model0, m))
				return sb_error_set(e, "the inputs mix models: '%s' (%s) and '%s' (%s); "
						       "calibrate one model at a time",
						    model0, fname(k, model_f), m, fname(k, f));
			if (!model0) {
				model0 = m;
				model_f = f;
			}
		}
		if (src0 && strcmp(src0, r->source))
			return sb_error_set(e, "the inputs mix %s (%s) and %s (%s) results; calibrate "
					       "from one kind", src0, fname(k, src_f), r->source,
					    fname(k, f));
		if (!src0) {
			src0 = r->source;
			src_f = f;
		}
		long b = target_long(r, "batch_tokens");
		if (b > 0)
			bt = (bt == -2 || bt == b) ? b : -1;
		if (r->n_levels == 0)
			return sb_error_set(e, "%s: no levels: nothing was measured", fname(k, f));
		long failed = 0;
		int used = 0;
		for (size_t i = 0; i < r->n_levels; i++) {
			int rc = collect_level(k, f, i, &failed, &used, e);
			if (rc < 0)
				return rc;
		}
		total_failed += failed;
		int any_closed = 0;
		for (size_t i = 0; i < r->n_levels; i++)
			any_closed |= r->levels[i].sum.mode == SB_MODE_CONCURRENCY;
		if (!used && any_closed) {
			char why[256] = "";
			for (size_t i = 0; i < r->n_levels && !why[0]; i++)
				fail_text(&r->levels[i], why, sizeof(why));
			return sb_error_set(e, "%s: all %ld requests failed, so it holds no TTFT or "
					       "TPOT to fit%s%s%s; re-measure once the server answers",
					    fname(k, f), failed, why[0] ? " (" : "",
					    why[0] ? why : "", why[0] ? ")" : "");
		}
	}
	(void)total_failed;
	if (k->n_lv == 0)
		return sb_error_set(e, "no closed-loop level in the inputs: the fit needs "
				       "concurrency-1 runs at two or more prompt lengths (servebench "
				       "run --concurrency 1 --input-len N) and a concurrency sweep");
	int have_c1 = 0;
	for (size_t l = 0; l < k->n_lv; l++)
		have_c1 |= k->lvs[l].c == 1;
	if (!have_c1)
		return sb_error_set(e, "no level at concurrency 1 in the inputs: prefill cost, "
				       "overhead and decode_ms(1) come from single-client runs "
				       "(servebench run --concurrency 1) at two or more prompt lengths");
	if (k->o->batch_tokens > 0)
		k->batch_tokens = k->o->batch_tokens;
	else if (bt > 0)
		k->batch_tokens = bt;
	else
		k->batch_tokens = 2048;
	return 0;
}

/* ---- residual tables ---------------------------------------------------- */

static json_t *residuals_json(const cal *k, const sb_linfit *f, const size_t *lvi,
			      const double *x, const char *xname)
{
	if (f->n <= 40) {
		json_t *a = json_array();
		for (size_t i = 0; i < f->n; i++) {
			const lvpt *L = &k->lvs[lvi[i]];
			json_array_append_new(a, json_pack("{s:s,s:f,s:f,s:f,s:f,s:f}", "file",
							   base_name(fname(k, L->file)), "concurrency",
							   L->c, xname, x[i], "observed",
							   f->fitted[i] + f->resid[i], "fitted",
							   f->fitted[i], "residual", f->resid[i]));
		}
		return a;
	}
	double mx = 0, ss = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (fabs(f->resid[i]) > mx)
			mx = fabs(f->resid[i]);
		ss += f->resid[i] * f->resid[i];
	}
	return json_pack("{s:I,s:f,s:f}", "n", (json_int_t)f->n, "rms",
			 sqrt(ss / (double)f->n), "max_abs", mx);
}

/* ---- decode at one sequence --------------------------------------------- */

static int fit_decode1(cal *k, sb_error *e)
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
			note(k, "TPOT at concurrency 1 fell with context (slope %.3g ms/token): "
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
	json_object_set_new(j, "residuals", residuals_json(k, &f, li, x, "context_tokens"));
	json_object_set_new(k->fit, "decode_1", j);
	k->d1 = f.coef[0];
	k->d1_se = f.has_ci ? f.se[0] : NAN;
	coef(k, "decode_ms[1]", f.coef[0], f.has_ci ? f.ci_lo[0] : NAN,
	     f.has_ci ? f.ci_hi[0] : NAN, "ms", "TPOT at concurrency 1");
	if (two) {
		k->kv = f.coef[1];
		k->kv_se = f.has_ci ? f.se[1] : NAN;
		coef(k, "per_kv_token", f.coef[1], f.has_ci ? f.ci_lo[1] : NAN,
		     f.has_ci ? f.ci_hi[1] : NAN, "ms/token", "TPOT slope against context");
	} else {
		k->kv = 0;
		k->kv_se = NAN;
		coef(k, "per_kv_token", 0, NAN, NAN, "ms/token", "not identified (set to 0)");
		if (!(xmax >= 1.5 * xmin))
			missing(k, "per_kv_token: TPOT was measured at one context length only; "
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
	double *X = malloc((2 * n + 1) * sizeof(double));
	if (!X)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		X[2 * i] = 1;
		X[2 * i + 1] = Pin[i];
	}
	sb_linfit f;
	int distinct = 0;
	for (size_t i = 1; i < n; i++)
		distinct |= Pin[i] > 1.1 * Pin[0] + 1 || Pin[0] > 1.1 * Pin[i] + 1;
	if (n >= 4 && distinct && sb_linfit_run(X, ov, NULL, n, 2, &f, e) == 0) {
		if (f.has_ci && f.ci_lo[1] > 0 && f.coef[0] >= 0) {
			k->overhead = f.coef[0];
			k->overhead_se = f.se[0];
			lo = f.ci_lo[0];
			hi = f.ci_hi[0];
			k->ovpt = f.coef[1];
			how = "intercept of TTFT - server prompt_ms against prompt tokens at "
			      "concurrency 1";
			coef(k, "overhead_per_prompt_token", k->ovpt, f.ci_lo[1], f.ci_hi[1],
			     "ms/token", "slope of TTFT - server prompt_ms against prompt tokens");
		} else {
			coef(k, "overhead_per_prompt_token", 0, f.has_ci ? f.ci_lo[1] : NAN,
			     f.has_ci ? f.ci_hi[1] : NAN, "ms/token",
			     "slope not positive within its interval: set to 0");
		}
		sb_linfit_fini(&f);
	}
	free(X);
	coef(k, "overhead_ms", k->overhead, lo, hi, "ms", how);
	return 0;
}

static int fit_prefill(cal *k, sb_error *e)
{
	size_t cap = k->n_lv + k->n_rq;
	double *X = malloc(3 * cap * sizeof(double)), *y = malloc(cap * sizeof(double));
	double *w = malloc(cap * sizeof(double)), *P = malloc(cap * sizeof(double));
	double *ov = malloc(cap * sizeof(double)), *ovP = malloc(cap * sizeof(double));
	size_t *li = malloc(cap * sizeof(size_t));
	sb_linfit lin, quad;
	memset(&lin, 0, sizeof(lin));
	memset(&quad, 0, sizeof(quad));
	int r = 0;
	if (!X || !y || !w || !P || !ov || !ovP || !li) {
		r = -ENOMEM;
		goto out;
	}
	/* Server timings only when every concurrency-1 point has them. */
	size_t n = 0, n_t = 0;
	for (size_t l = 0; l < k->n_lv; l++) {
		const lvpt *L = &k->lvs[l];
		if (L->c != 1)
			continue;
		if (L->use_reqs) {
			for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
				n++;
				n_t += isfinite(k->rqs[q].prompt_ms);
			}
		} else {
			n++;
		}
	}
	if (n == 0) {
		r = sb_error_set(e, "no TTFT at concurrency 1: the prefill fit needs single-client "
				    "runs at two or more prompt lengths (servebench run "
				    "--concurrency 1 --input-len 16, then 2048)");
		goto out;
	}
	k->timings = n_t == n;
	n = 0;
	size_t n_ov = 0;
	for (size_t l = 0; l < k->n_lv; l++) {
		const lvpt *L = &k->lvs[l];
		if (L->c != 1)
			continue;
		if (L->use_reqs) {
			for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
				const rqpt *R = &k->rqs[q];
				P[n] = R->P;
				y[n] = k->timings ? R->prompt_ms
						  : R->ttft - k->d1 * (double)nsteps(k, R->P);
				if (k->timings) {
					ovP[n_ov] = R->Pin;
					ov[n_ov++] = R->ttft - R->prompt_ms;
				}
				w[n] = 1.0;
				li[n++] = l;
			}
		} else {
			P[n] = L->P;
			y[n] = L->ttft - k->d1 * (double)nsteps(k, L->P);
			w[n] = MEDIAN_WEIGHT(L->n_ok);
			li[n++] = l;
		}
	}
	double pmin = INFINITY;
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
		qsort(sp, n, sizeof(double), cmp_dbl);
		double g0 = -INFINITY;
		for (size_t i = 0; i < n; i++) {
			if (sp[i] > 1.1 * g0 + 1.0) {
				distinct++;
				g0 = sp[i];
			}
		}
		pmin = sp[0];
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
		X[i * 2] = k->timings ? (double)nsteps(k, P[i]) : 1.0;
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
			X[i * 3] = k->timings ? (double)nsteps(k, P[i]) : 1.0;
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
		missing(k, "per_prefill_attn: TTFT at 3 or more prompt lengths would test "
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
	json_object_set_new(j, "f_test", json_pack("{s:o,s:o}", "F", num(F), "p_value", num(pval)));
	if (use_quad)
		json_object_set_new(j, "linear_alternative_r2", num(lin.r2));
	json_object_set_new(j, "residuals", residuals_json(k, f, li, P, "prompt_tokens"));
	json_object_set_new(k->fit, "prefill", j);

	k->ppt = f->coef[1];
	k->ppt_se = f->has_ci ? f->se[1] : NAN;
	k->attn = use_quad ? f->coef[2] : 0.0;
	k->attn_se = use_quad && f->has_ci ? f->se[2] : NAN;
	coef(k, "per_prefill_token", f->coef[1], f->has_ci ? f->ci_lo[1] : NAN,
	     f->has_ci ? f->ci_hi[1] : NAN, "ms/token",
	     k->timings ? "server prompt_ms against prompt length"
			: "TTFT at concurrency 1 against prompt length");
	if (use_quad)
		coef(k, "per_prefill_attn", f->coef[2], f->has_ci ? f->ci_lo[2] : NAN,
		     f->has_ci ? f->ci_hi[2] : NAN, "ms/token^2", "P(P-1)/2 term (F-test)");
	else
		coef(k, "per_prefill_attn", 0, NAN, NAN, "ms/token^2", why);
	if (!(k->ppt > 0)) {
		/* Flat within the noise: a server whose prefill is too cheap to
		 * see. Clearly falling: the data are inconsistent. */
		if (!(f->has_ci && f->ci_hi[1] >= 0)) {
			r = sb_error_set(e, "TTFT at concurrency 1 falls as the prompt grows "
					    "(per_prefill_token = %g ms/token): the prompt-length "
					    "runs look inconsistent (cached prompts?)", k->ppt);
			goto out;
		}
		note(k, "per_prefill_token %.3g ms/token is zero within its interval: prefill "
			"cost is not measurable here; set to 0", k->ppt);
		k->ppt = 0;
		json_object_set_new(k->coefs, "per_prefill_token",
				    json_pack("{s:f,s:[o,o],s:s,s:s}", "value", 0.0, "ci95",
					      num(f->ci_lo[1]), num(f->ci_hi[1]), "unit", "ms/token",
					      "from", "zero within its interval (set to 0)"));
	}
	double t95 = f->has_ci ? sb_linfit_t95((double)(f->n - f->p)) : NAN;
	if (k->timings) {
		k->pb = f->coef[0];
		k->pb_se = f->has_ci ? f->se[0] : NAN;
		coef(k, "prefill_base", k->pb, f->has_ci ? f->ci_lo[0] : NAN,
		     f->has_ci ? f->ci_hi[0] : NAN, "ms", "server prompt_ms intercept");
		r = fit_overhead(k, ov, ovP, n_ov, e);
		if (r < 0)
			goto out;
		json_object_set_new(k->fit, "overhead_split",
				    json_string("server timings: overhead = TTFT - prompt_ms"));
		if (k->pb < 0) {
			note(k, "prefill_base came out negative (%.3g ms): set to 0", k->pb);
			k->pb = 0;
		}
		if (k->overhead < 0) {
			note(k, "overhead came out negative (%.3g ms): set to 0", k->overhead);
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
			note(k, "%s", split);
		}
		json_object_set_new(k->fit, "overhead_split", json_string(split));
		coef(k, "overhead_ms", k->overhead, k->overhead - t95 * se,
		     k->overhead + t95 * se, "ms", "TTFT intercept at concurrency 1 minus "
						    "prefill_base");
		coef(k, "prefill_base", k->pb, NAN, NAN, "ms", "= decode_ms(1) (assumed)");
		missing(k, "overhead vs prefill_base: without server timings (prompt_ms) they are "
			   "split by assumption; a llama.cpp target reports them");
	}
out:
	sb_linfit_fini(&lin);
	sb_linfit_fini(&quad);
	free(X);
	free(y);
	free(w);
	free(P);
	free(ov);
	free(ovP);
	free(li);
	return r;
}

/* TTFT with no queueing when c prompts of P tokens start in one wave. */
static double ttft_wave(const cal *k, double c, double P)
{
	double tok = c * P;
	return ovh(k, P) + k->pb * (double)nsteps(k, tok) + k->ppt * tok +
	       k->attn * c * P * (P - 1.0) / 2.0;
}

/* ---- slots -------------------------------------------------------------- */

static int resolve_slots(cal *k, sb_error *e)
{
	k->fslots = calloc(k->n_in, sizeof(int));
	sb_slot_obs *obs = calloc(k->n_lv ? k->n_lv : 1, sizeof(*obs));
	double *first = malloc((k->n_rq ? k->n_rq : 1) * sizeof(double));
	if (!k->fslots || !obs || !first) {
		free(obs);
		free(first);
		return -ENOMEM;
	}
	size_t first_used = 0;
	json_t *per = json_array();
	int all_same = -1, conflict = 0;
	const char *conf_model = NULL;
	char why_model[400] = "";
	char *noev = calloc(k->n_in, 1);
	if (!noev) {
		free(obs);
		free(first);
		json_decref(per);
		return -ENOMEM;
	}
	for (size_t f = 0; f < k->n_in; f++) {
		size_t n = 0;
		for (size_t l = 0; l < k->n_lv; l++) {
			const lvpt *L = &k->lvs[l];
			if (L->file != f)
				continue;
			obs[n].c = L->c;
			obs[n].ttft_ms = L->ttft;
			obs[n].ttft_nq_ms = ttft_wave(k, L->c, L->P);
			obs[n].e2e_ms = L->e2e;
			obs[n].wait_ms = L->wait - (L->wait_has_overhead ? ovh(k, L->P) : 0);
			obs[n].first_ttft = NULL;
			obs[n].n_first = 0;
			if (L->use_reqs && L->nrq > 0) {
				/* the first round: requests sent within 5 ms of the
				 * level's first send */
				double t0 = INFINITY;
				for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++)
					if (k->rqs[q].t_sent < t0)
						t0 = k->rqs[q].t_sent;
				obs[n].first_ttft = first + first_used;
				for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++)
					if (k->rqs[q].t_sent <= t0 + 0.005)
						first[first_used++] = k->rqs[q].ttft;
				obs[n].n_first = (size_t)(first + first_used - obs[n].first_ttft);
			}
			n++;
		}
		sb_slot_guess g;
		json_t *est = NULL;
		int r = sb_slots_infer(obs, n, &g, &est, e);
		if (r < 0) {
			json_decref(per);
			free(obs);
			free(first);
			free(noev);
			return r;
		}
		long declared = target_long(k->in[f].res, "slots");
		const char *from;
		if (declared >= 1) {
			k->fslots[f] = (int)declared;
			from = "declared (target.slots)";
		} else if (k->o->slots > 0) {
			k->fslots[f] = k->o->slots;
			from = "--slots";
		} else if (!strcmp(g.confidence, "none")) {
			/* no level with 2+ clients: the file says nothing about
			 * slots (and needs none); it takes the others' count */
			noev[f] = 1;
			from = "not measured (takes the other inputs' count)";
		} else {
			k->fslots[f] = g.slots;
			from = "inferred";
		}
		if (declared < 1 && k->o->slots > 0 && g.slots != k->o->slots &&
		    (!strcmp(g.confidence, "high") || !strcmp(g.confidence, "medium")))
			note(k, "%s: --slots %d, but its levels suggest %d (%s confidence: %s)",
			     base_name(fname(k, f)), k->o->slots, g.slots, g.confidence, g.why);
		if (declared >= 1 && strcmp(g.confidence, "none") &&
		    (declared < g.lo || (g.hi > 0 && declared > g.hi)))
			note(k, "%s: declares %ld slots but its levels suggest %d..%s (%s)",
			     base_name(fname(k, f)), declared, g.lo,
			     g.hi > 0 ? "" : "more", g.why);
		json_array_append_new(
			per, json_pack("{s:s,s:i,s:s,s:{s:i,s:i,s:o,s:s,s:s,s:o}}", "file",
				       base_name(fname(k, f)), "slots", k->fslots[f], "from", from,
				       "inference", "slots", g.slots, "lo", g.lo, "hi",
				       g.hi > 0 ? json_integer(g.hi) : json_null(), "confidence",
				       g.confidence, "why", g.why, "levels",
				       est ? est : json_array()));
		if (!noev[f]) {
			if (all_same == -1)
				all_same = k->fslots[f];
			else if (all_same != k->fslots[f])
				conflict = 1;
		}
		if (!strcmp(from, "inferred") || (noev[f] && !conf_model)) {
			conf_model = g.confidence;
			snprintf(why_model, sizeof(why_model), "%s", g.why);
		}
	}
	free(obs);
	free(first);
	if (all_same == -1) /* no input measured more than one client */
		all_same = k->o->slots > 0 ? k->o->slots : 1;
	for (size_t f = 0; f < k->n_in; f++) {
		if (!noev[f])
			continue;
		k->fslots[f] = all_same;
		json_object_set_new(json_array_get(per, f), "slots", json_integer(all_same));
	}
	free(noev);
	const char *from_model;
	if (k->o->slots > 0) {
		k->slots = k->o->slots;
		from_model = "--slots";
	} else if (conflict) {
		char list[300] = "";
		size_t pos = 0;
		for (size_t f = 0; f < k->n_in && pos < sizeof(list) - 1; f++)
			pos += (size_t)snprintf(list + pos, sizeof(list) - pos, "%s%s: %d",
						f ? ", " : "", base_name(fname(k, f)), k->fslots[f]);
		json_decref(per);
		return sb_error_set(e, "the inputs come from servers with different slot counts "
				       "(%s): pass --slots S to choose the model's", list);
	} else {
		k->slots = all_same;
		from_model = conf_model ? "inferred" : "declared (target.slots)";
	}
	if (conf_model && !strcmp(conf_model, "none") && k->o->slots <= 0 &&
	    !strcmp(from_model, "inferred"))
		missing(k, "slots: no concurrency sweep, so the slot count is unknown (1 assumed); "
			   "pass --slots S or measure --concurrency 1,2,4,8");
	json_object_set_new(k->fit, "slots",
			    json_pack("{s:i,s:s,s:o,s:s,s:o}", "value", k->slots, "from",
				      from_model, "confidence",
				      conf_model ? json_string(conf_model) : json_null(), "why",
				      why_model, "per_file", per));
	return 0;
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
		ev[i] = (pfev){ R->t_first, prefill_var(k, R->P) / 1e3, 0 };
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
	qsort(t, L->nrq, sizeof(double), cmp_dbl);
	double r = t[c - 1];
	free(t);
	return r;
}

/* ---- decode at B >= 2 --------------------------------------------------- */

static int fit_decode_batches(cal *k, sb_error *e)
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
		const char *fn = base_name(fname(k, L->file));
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
						add += prefill_var(k, O->P);
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
				double tw = ttft_wave(k, L->c, L->P);
				double tsg = ovh(k, L->P) + prefill_var(k, L->P) + 1.5 * L->tpot;
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
			interf = fr * (double)(B - 1) * prefill_var(k, L->P) / (L->N - 1.0);
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
			note(k, "%s: concurrency %g gives a decode step of %.3g ms after corrections: "
				"not used", fn, L->c, ymean);
			nrow = row0;
			continue;
		}
		int i;
		for (i = 0; i < nu && U[i] != B; i++)
			;
		if (i == nu) {
			if (nu == SB_LINFIT_MAXP || nu == SB_MODEL_MAX_DECODE - 1) {
				note(k, "%s: batch %d not used (at most %d batch sizes are fitted)", fn,
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
			coef(k, key, f.coef[i], f.has_ci ? f.ci_lo[i] : NAN,
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
				note(k, "decode_ms(%d) = %.3g ms is below decode_ms(%d) = %.3g ms: a "
					"larger batch looks cheaper per step; check those levels",
				     k->dec[i].batch, k->dec[i].ms, k->dec[i - 1].batch,
				     k->dec[i - 1].ms);
		}
	}
	free(rows);
	if (k->n_dec == 1) {
		missing(k, "decode_ms at batch sizes above 1: no level ran 2 or more sequences "
			   "at once; measure a concurrency sweep (--concurrency 1,2,4,8) on a "
			   "server with slots");
	} else {
		/* decode_ms(B) = base + per_seq * B over the table, for the report */
		double X[2 * SB_MODEL_MAX_DECODE], y[SB_MODEL_MAX_DECODE], xb[SB_MODEL_MAX_DECODE];
		for (int i = 0; i < k->n_dec; i++) {
			X[2 * i] = 1.0;
			X[2 * i + 1] = k->dec[i].batch;
			xb[i] = k->dec[i].batch;
			y[i] = k->dec[i].ms;
		}
		sb_linfit lf;
		sb_error e2;
		if (sb_linfit_run(X, y, NULL, (size_t)k->n_dec, 2, &lf, &e2) == 0) {
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
			coef(k, "base", lf.coef[0], lf.has_ci ? lf.ci_lo[0] : NAN,
			     lf.has_ci ? lf.ci_hi[0] : NAN, "ms", "line through the decode table");
			coef(k, "per_seq", lf.coef[1], lf.has_ci ? lf.ci_lo[1] : NAN,
			     lf.has_ci ? lf.ci_hi[1] : NAN, "ms/sequence",
			     "line through the decode table");
			sb_linfit_fini(&lf);
		}
	}
	json_object_set_new(k->fit, "decode", dj);
	return r;
}

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
		double o = ovh(k, R->Pin);
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
	qsort(b, n, sizeof(double), cmp_dbl);
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

static int fit_admit(cal *k)
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
			double o = ovh(k, R->Pin);
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
			double o = ovh(k, R->Pin);
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
		coef(k, "admit_delay_ms", k->admit, k->admit_lo, k->admit_hi, "ms",
		     "middle of the range most queued launches bracket (the interval is "
		     "that range, not a confidence interval)");
	} else {
		coef(k, "admit_delay_ms", 0, NAN, NAN, "ms", "not identified (set to 0)");
		missing(k, "admit_delay_ms: needs per-request records with queue waits (server "
			   "timings) at a level above the slot count%s",
			queued_levels ? "" : " (no such level in the inputs)");
	}
	free(d);
	return 0;
}

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
	double *X = malloc(2 * n * sizeof(double));
	if (!X)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		X[2 * i] = 1;
		X[2 * i + 1] = T2[i];
	}
	sb_linfit f;
	int r = 0, fitted = 0;
	int distinct = 0;
	for (size_t i = 1; i < n; i++)
		distinct |= T2[i] != T2[0];
	if (n >= 2 && distinct) {
		r = sb_linfit_run(X, S2, w, n, 2, &f, e);
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
		for (size_t i = 0; i < n; i++)
			X[i] = T2[i];
		r = sb_linfit_run(X, S2, w, n, 1, &f, e);
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
	free(X);
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

static int fit_noise_requests(cal *k, sb_error *e)
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
		double sum = 0;
		size_t m = 0, n0 = n;
		for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
			const rqpt *R = &k->rqs[q];
			if (!(R->N >= 3) || !(R->tpot > 0))
				continue;
			sum += R->tpot;
			x[n++] = R->tpot;
			inv += 1.0 / (R->N - 1.0);
			m++;
		}
		if (m < 3) {
			n = n0; /* too few to tell scatter from the mean */
			for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++)
				if (k->rqs[q].N >= 3 && k->rqs[q].tpot > 0)
					inv -= 1.0 / (k->rqs[q].N - 1.0);
			continue;
		}
		for (size_t i = n0; i < n; i++)
			x[i] /= sum / (double)m;
		groups++;
	}
	if (n >= 20) {
		scale = 1.0 / sqrt(inv / (double)n) * sqrt((double)n / (double)(n - groups));
	} else if (have_gap) {
		/* too few requests: the gaps are all there is */
		data = "ITL gaps / predicted step time at concurrency 1 (MLE)";
		n = 0;
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
			double step = k->pb * (double)nsteps(k, R->P) + prefill_var(k, R->P);
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
			double step = k->pb * (double)nsteps(k, P0) + prefill_var(k, P0);
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
				double step = k->pb * (double)nsteps(k, R->P) + prefill_var(k, R->P);
				double res = R->ttft - ovh(k, R->Pin) - step;
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

static void fit_noise_summaries(cal *k)
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
		double step = k->pb * (double)nsteps(k, L->P) + prefill_var(k, L->P);
		S2[n] = sd * sd;
		T2[n] = step * step;
		W[n] = (double)(L->n_ok - 1) / (S2[n] * S2[n]);
		json_array_append_new(pts, json_pack("{s:s,s:f,s:f,s:f}", "file",
						     base_name(fname(k, L->file)), "prompt_tokens",
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
		missing(k, "noise: no TTFT spread (p99 or per-request records) at concurrency 1; "
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
	missing(k, "noise distribution: level summaries give only a spread; per-request "
		   "records (ITL gaps) would allow a maximum-likelihood fit and a KS test");
	missing(k, "decode-step noise: level summaries show only TTFT spreads, so decode steps "
		   "get the prefill steps' cv");
}

/* ---- orchestration ------------------------------------------------------ */

int sb_calibrate_fit(const sb_calib_input *in, size_t n, const sb_calib_opts *o,
		     sb_model *out, sb_error *e)
{
	sb_model_init(out);
	if (n == 0)
		return sb_error_set(e, "no results files given: calibrate needs measurements");
	sb_calib_opts def;
	if (!o) {
		sb_calib_opts_init(&def);
		o = &def;
	}
	if (o->slots < 0 || o->slots > 100000)
		return sb_error_set(e, "slots %d out of range", o->slots);
	cal k;
	memset(&k, 0, sizeof(k));
	k.in = in;
	k.n_in = n;
	k.noise_cv_lo = k.noise_cv_hi = NAN;
	k.o = o;
	k.fit = json_object();
	k.notes = json_array();
	k.missing = json_array();
	k.coefs = json_object();
	int r = -ENOMEM;
	gsl_error_handler_t *old_handler = gsl_set_error_handler_off();
	if (!k.fit || !k.notes || !k.missing || !k.coefs)
		goto fail;
	/* (GSL's default handler, which aborts the process, is off until
	 * `fail`: here its functions report errors by return value) */
	r = collect(&k, e);
	if (r < 0)
		goto fail;
	r = fit_decode1(&k, e);
	if (r < 0)
		goto fail;
	r = fit_prefill(&k, e);
	if (r < 0)
		goto fail;
	r = resolve_slots(&k, e);
	if (r < 0)
		goto fail;
	r = fit_decode_batches(&k, e);
	if (r < 0)
		goto fail;
	r = k.n_rq ? fit_noise_requests(&k, e) : 1;
	if (r < 0)
		goto fail;
	if (r == 1)
		fit_noise_summaries(&k);
	r = fit_admit(&k);
	if (r < 0)
		goto fail;
	coef(&k, "noise_cv", k.noise_cv, k.noise_cv_lo, k.noise_cv_hi, "",
	     sb_noise_name(k.noise_kind));
	if (k.noise_cv > 0.5)
		note(&k, "step noise cv %.3g is large: the server's timing was unstable during "
			 "the measurement (other load on the machine?); re-measure on a quiet "
			 "machine before trusting tail predictions", k.noise_cv);
	coef(&k, "prefill_cv", k.pcv, k.pcv_lo, k.pcv_hi, "", k.pcv_from);
	coef(&k, "overhead_sd_ms", k.overhead_sd, NAN, NAN, "ms", "see fit.noise");

	/* provenance */
	json_t *inputs = json_array();
	size_t n_req = 0;
	for (size_t f = 0; f < n; f++) {
		size_t nl = 0, nr = 0;
		for (size_t l = 0; l < k.n_lv; l++)
			if (k.lvs[l].file == f) {
				nl++;
				nr += k.lvs[l].nrq;
			}
		n_req += nr;
		json_array_append_new(inputs, json_pack("{s:s,s:s,s:I,s:I}", "file",
							base_name(fname(&k, f)), "source",
							in[f].res->source, "levels_used", (json_int_t)nl,
							"requests_used", (json_int_t)nr));
	}
	json_object_set_new(k.fit, "tool", json_string("servebench calibrate"));
	json_object_set_new(k.fit, "inputs", inputs);
	json_object_set_new(k.fit, "data", json_string(n_req ? "per-request records"
							     : "level summaries"));
	json_object_set_new(k.fit, "batch_tokens", json_integer(k.batch_tokens));
	json_object_set_new(k.fit, "coefficients", k.coefs);
	json_object_set_new(k.fit, "missing", k.missing);
	json_object_set_new(k.fit, "notes", k.notes);
	k.coefs = k.missing = k.notes = NULL;

	const char *mname = o->name ? o->name : target_str(in[0].res, "model");
	snprintf(out->name, sizeof(out->name), "%s%s", mname ? mname : "calibrated",
		 o->name ? "" : " (calibrated)");
	out->slots = k.slots;
	out->max_queue = -1;
	out->batch_tokens = k.batch_tokens;
	out->overhead_ms = k.overhead;
	out->overhead_sd_ms = k.overhead_sd;
	memcpy(out->decode, k.dec, sizeof(k.dec));
	out->n_decode = k.n_dec;
	out->per_kv_token_ms = k.kv;
	out->per_prefill_token_ms = k.ppt;
	out->per_prefill_attn_ms = k.attn;
	out->prefill_base_ms = k.pb;
	out->admit_delay_ms = k.admit;
	out->noise_kind = k.noise_kind;
	out->noise_cv = k.noise_kind == SB_NOISE_NONE ? 0 : k.noise_cv;
	out->noise_prefill_cv = k.noise_kind == SB_NOISE_NONE ? 0 : k.pcv;
	out->fit = k.fit;
	k.fit = NULL;
	r = sb_model_validate(out, e);
	if (r < 0) {
		sb_error_prefix(e, "the fitted model is not valid");
		sb_model_fini(out);
		sb_model_init(out);
	}
fail:
	gsl_set_error_handler(old_handler);
	json_decref(k.fit);
	json_decref(k.notes);
	json_decref(k.missing);
	json_decref(k.coefs);
	free(k.lvs);
	free(k.rqs);
	free(k.fslots);
	return r;
}
