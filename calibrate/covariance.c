/* covariance.c — the model's "fit.covariance" (see covariance.h). */
#include "calibrate/covariance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonfile.h"
#include "core/model_param.h"

#define COV_MAXP 64

typedef struct cov_build {
	int n;
	char names[COV_MAXP][SB_MODEL_PARAM_NAME_MAX];
	double c[COV_MAXP][COV_MAXP];
} cov_build;

/* Appends a block of k coefficients (names) with covariance c (k x k,
 * row-major) when every name is a coefficient of m not yet in b and every
 * variance is positive and finite; else leaves b as it was. */
static void add_block(cov_build *b, const sb_model *m, const char *const *names, int k,
		      const double *c)
{
	if (b->n + k > COV_MAXP)
		return;
	for (int i = 0; i < k; i++) {
		double v;
		if (sb_model_param_get(m, names[i], &v, NULL) < 0 || !(c[i * k + i] > 0) ||
		    !isfinite(c[i * k + i]))
			return;
		for (int j = 0; j < b->n; j++)
			if (!strcmp(b->names[j], names[i]))
				return;
		for (int j = 0; j < k; j++)
			if (!isfinite(c[i * k + j]))
				return;
	}
	for (int i = 0; i < k; i++) {
		snprintf(b->names[b->n + i], SB_MODEL_PARAM_NAME_MAX, "%s", names[i]);
		for (int j = 0; j < k; j++)
			b->c[b->n + i][b->n + j] = c[i * k + j];
	}
	b->n += k;
}

/* The first k x k corner of a fit's covariance, row-major. */
static void corner(const sb_linfit *f, int k, double *c)
{
	for (int i = 0; i < k; i++)
		for (int j = 0; j < k; j++)
			c[i * k + j] = f->has_ci ? f->cov[i][j] : NAN;
}

/* decode_ms(1) and its context cost (decode1.c). A slope dropped at its
 * bound stays 0 with the two-term fit's covariance, as a dropped attention
 * term does (prefill_blocks). */
static void decode1_block(cov_build *b, const cal_results *r, const sb_model *m)
{
	const cal_decode1 *d = r->decode1;
	const char *names[2] = { "decode_ms[1]",
				 m->n_decode_kv > 0 ? "decode_kv[1]" : "per_kv_token" };
	int dropped = !d->with_kv && isfinite(d->dropped_cov[1][1]) && m->n_decode_kv == 0;
	int k = (d->with_kv && d->f.p >= 2) || dropped ? 2 : 1;
	double c[4];
	corner(&d->f, k == 2 && !dropped ? 2 : 1, c);
	if (dropped)
		for (int i = 0; i < 4; i++)
			c[i] = d->dropped_cov[i / 2][i % 2];
	add_block(b, m, names, k, c);
}

/* A kept attention term's form is not certain either: on a linear truth
 * the F-test keeps it in about 1 of 12 calibrate --url data sets (5 of
 * 60 simulated), each then predicting 1024 tokens prefilled together 2-3%
 * low with an interval that misses the truth. The three-term covariance
 * gets the spread toward the linear fit, (1 - w) d d^T, d the linear fit's
 * coefficients less the three-term fit's (attention 0) and w the
 * three-term form's weight by BIC, 1 / (1 + exp(-(F - ln n) / 2)): about
 * 0.6 at the edge of significance, 1 where the term is plain. */
static void form_spread(const cal_prefill *p, double *c)
{
	const sb_linfit *q = &p->quad, *l = &p->lin;
	if (!isfinite(p->F) || q->n < 1)
		return;
	double w = 1 / (1 + exp(-(p->F - log((double)q->n)) / 2));
	double d[3] = { l->coef[0] - q->coef[0], l->coef[1] - q->coef[1], -q->coef[2] };
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			c[i * 3 + j] += (1 - w) * d[i] * d[j];
}

/* Whether p tested an attention term and dropped it, with the three-term
 * fit's covariance to spread it by. */
static int attn_dropped(const cal_prefill *p)
{
	return (p->attn == CAL_ATTN_NOT_POSITIVE || p->attn == CAL_ATTN_NOT_SIGNIFICANT) &&
	       p->quad.has_ci && p->quad.p >= 3 && isfinite(p->quad.se[2]);
}

/* The prefill fit (prefill.c) and, with server timings, the overhead line.
 * An attention term tested and dropped stays 0 with the three-term fit's
 * covariance, its correlations with the intercept and the per-token cost
 * included, so that a draw with attention lowers the linear terms as that
 * fit would (the choice of terms is not taken as certain; a draw below 0
 * is set to 0 with the others moved to match, uncertainty.h). Until
 * 2026-12-07 the term had a block of its own: every draw with attention
 * added it to the linear fit, which on a convex truth already lies above
 * it between the measured lengths. */
static void prefill_blocks(cov_build *b, const cal_results *r, const sb_model *m)
{
	const cal_prefill *p = r->prefill;
	int dropped = attn_dropped(p);
	const sb_linfit *f = dropped ? &p->quad : cal_prefill_chosen(p);
	int k = (p->attn == CAL_ATTN_KEPT || dropped) && f->p >= 3 ? 3 : 2;
	const char *names[3] = { p->timings ? "prefill_base" : "overhead_ms",
				 "per_prefill_token", "per_prefill_attn" };
	double c[9];
	corner(f, k, c);
	if (!p->timings) { /* the intercept's variance as reported, with decode_ms(1)'s */
		const sb_linfit *l = cal_prefill_chosen(p);
		double se = r->engine->overhead_se, extra = se * se - l->cov[0][0];
		c[0] = k == 3 && dropped ? c[0] + (extra > 0 ? extra : 0) : se * se;
	}
	if (k == 3 && !dropped)
		form_spread(p, c);
	add_block(b, m, names, k, c);
	if (!p->timings)
		return;
	double se = r->engine->overhead_se;
	if (p->slope_state == CAL_SLOPE_KEPT) {
		const char *on[2] = { "overhead_ms", "overhead_per_prompt_token" };
		double s = p->overhead_slope_se, cv = p->overhead_slope_cov;
		double c2[4] = { se * se, cv, cv, s * s };
		add_block(b, m, on, 2, c2);
	} else {
		const char *on[1] = { "overhead_ms" };
		double c1[1] = { se * se };
		add_block(b, m, on, 1, c1);
	}
}

/* The prompt cache's cost per reused token (cache.c), when the server
 * reused prefixes; at its bound 0 it keeps its spread. */
static void cache_block(cov_build *b, const cal_results *r, const sb_model *m)
{
	const cal_cache *c = r->cache;
	if (!c || c->kind == SB_PCACHE_NONE || !isfinite(c->per_token_se))
		return;
	const char *names[2] = { "per_cached_token", "per_restored_token" };
	double v[1] = { c->per_token_se * c->per_token_se };
	add_block(b, m, names, 1, v);
	v[0] = c->per_restored_se * c->per_restored_se; /* NaN (none) when not apart */
	add_block(b, m, names + 1, 1, v);
}

/* The step noise's cv and prefill cv (noise.c), each with the spread its
 * 95% interval gives: from calibrate --url's few requests per prompt
 * length prefill_cv is uncertain by a third of itself, and a prediction
 * interval that takes it as known is as much too narrow as the run-to-run
 * spread it sets (TTFT p50 at 4 clients: 0.52 ms against 0.80 with the
 * truth's prefill_cv, 60 simulated data sets). */
static void noise_block(cov_build *b, const cal_results *r, const sb_model *m)
{
	const cal_noise *k = r->noise;
	if (m->noise_kind == SB_NOISE_NONE)
		return;
	const char *names[2] = { "noise_cv", "noise_prefill_cv" };
	double lo[2] = { k->cv_lo, k->prefill_cv_lo }, hi[2] = { k->cv_hi, k->prefill_cv_hi };
	for (int i = 0; i < 2; i++) {
		double se = (hi[i] - lo[i]) / (2 * 1.959964);
		double v[1] = { se * se };
		add_block(b, m, names + i, 1, v);
	}
}

/* The decode table: the TPOT levels' fit (decode.c), or the pinned
 * passes' lines (pinned.c) when the model took its tables from them. */
static void decode_blocks(cov_build *b, const cal_results *r, const sb_model *m)
{
	char n1[SB_MODEL_PARAM_NAME_MAX], n2[SB_MODEL_PARAM_NAME_MAX];
	const char *names[2] = { n1, n2 };
	const cal_pinned *p = r->pinned;
	for (int i = 0; i < p->n_tab; i++) {
		const cal_pin_entry *t = &p->tab[i];
		snprintf(n1, sizeof n1, "decode_ms[%d]", t->batch);
		snprintf(n2, sizeof n2, "decode_kv[%d]", t->batch);
		double c[4] = { t->ms_se * t->ms_se, t->ms_kv_cov, t->ms_kv_cov,
				t->kv_se * t->kv_se };
		add_block(b, m, names, t->kv_fitted ? 2 : 1, c);
	}
	const cal_decode *d = r->decode;
	if (p->n_tab > 0 || d->n_batches < 1 || !d->f.has_ci)
		return;
	char nb[SB_LINFIT_MAXP][SB_MODEL_PARAM_NAME_MAX];
	const char *bn[SB_LINFIT_MAXP];
	double c[SB_LINFIT_MAXP * SB_LINFIT_MAXP];
	int k = d->n_batches;
	for (int i = 0; i < k; i++) {
		snprintf(nb[i], sizeof nb[i], "decode_ms[%d]", d->batches[i]);
		bn[i] = nb[i];
	}
	corner(&d->f, k, c);
	add_block(b, m, bn, k, c);
}

/* The covariance of decode_ms[B1] and decode_ms[B2] in b (0 when either
 * is not there: an entry fitted exactly). */
static double table_cov(const cov_build *b, int b1, int b2)
{
	char n1[SB_MODEL_PARAM_NAME_MAX], n2[SB_MODEL_PARAM_NAME_MAX];
	snprintf(n1, sizeof n1, "decode_ms[%d]", b1);
	snprintf(n2, sizeof n2, "decode_ms[%d]", b2);
	int i = -1, j = -1;
	for (int k = 0; k < b->n; k++) {
		i = !strcmp(b->names[k], n1) ? k : i;
		j = !strcmp(b->names[k], n2) ? k : j;
	}
	return i >= 0 && j >= 0 ? b->c[i][j] : 0.0;
}

/* The decode table's own rule left out of its last point: decode_ms there
 * as the table without it extrapolates (core/model.h), against the table's
 * value. *steps: how far, in steps of the reduced table's last spacing;
 * *noise_var: the variance the miss has from
 * the entries' own covariance in b (NULL b: none), the prediction being a
 * linear function of the entries (weights by finite differences, exact for
 * that rule). Returns 1, or 0 when the table has fewer than 4 points: the
 * rule beyond a table of 3 or more is a line through its points from B = 2
 * on (core/model.h), so only then does the table without its last point
 * extrapolate by the same rule as the whole one. */
static int decode_loo(const sb_model *m, const cov_build *b, int *batch, double *pred,
		      double *meas, double *steps, double *noise_var)
{
	int n = m->n_decode;
	if (n < 4)
		return 0;
	sb_model r = *m;
	r.fit = NULL;
	r.n_decode = n - 1;
	r.form_decode = 0;
	const sb_decode_point *d = m->decode;
	*batch = d[n - 1].batch;
	*meas = d[n - 1].ms;
	*pred = sb_model_decode_ms(&r, *batch);
	*steps = (double)(d[n - 1].batch - d[n - 2].batch) /
		 (double)(d[n - 2].batch - d[n - 3].batch);
	double w[SB_MODEL_MAX_DECODE];
	for (int i = 0; i < n - 1; i++) {
		double h = 1e-6 * d[i].ms;
		r.decode[i].ms = d[i].ms + h;
		w[i] = (sb_model_decode_ms(&r, *batch) - *pred) / h;
		r.decode[i].ms = d[i].ms;
	}
	double v = 0;
	for (int i = 0; b && i < n - 1; i++) {
		for (int j = 0; j < n - 1; j++)
			v += w[i] * w[j] * table_cov(b, d[i].batch, d[j].batch);
		v -= 2 * w[i] * table_cov(b, d[i].batch, *batch);
	}
	*noise_var = b ? v + table_cov(b, *batch, *batch) : NAN;
	return *pred > 0;
}

/* form_decode: the decode rule's own error beyond the table. Its variance
 * per step is what the one observed miss (decode_loo) has beyond the
 * entries' noise: (miss^2 - noise_var) / (pred^2 steps^2), when positive
 * (a moment estimate: 0 when the noise explains the miss). */
static void form_block(cov_build *b, const sb_model *m)
{
	int batch;
	double pred, meas, steps, nv, v;
	if (decode_loo(m, b, &batch, &pred, &meas, &steps, &nv)) {
		double miss = meas - pred;
		v = (miss * miss - (nv > 0 ? nv : 0)) / (pred * pred * steps * steps);
	} else if (m->n_decode >= 2) {
		v = CAL_FORM_PRIOR_SD * CAL_FORM_PRIOR_SD;
	} else {
		return;
	}
	const char *names[1] = { "form_decode" };
	double c[1] = { v };
	add_block(b, m, names, 1, c);
}

/* Whether m's decode table has a gap with batches inside it (points more
 * than 1 apart): only there does the line between points stand for
 * measurements. */
static int table_has_gap(const sb_model *m)
{
	for (int i = 1; i < m->n_decode; i++)
		if (m->decode[i].batch - m->decode[i - 1].batch > 1)
			return 1;
	return 0;
}

/* The line between each inner table point's neighbours against the point:
 * its miss in form_interp's units (model.h: a share of the neighbours'
 * gap, per 4 f (1 - f)) into k[j - 1] and the variance the entries' own
 * covariance in b gives it into nv[j - 1] (0 with NULL b); returns how
 * many (inner points whose neighbours differ). */
static int interp_loo(const sb_model *m, const cov_build *b, int *batch, double *k, double *nv)
{
	const sb_decode_point *d = m->decode;
	int c = 0;
	for (int j = 1; j + 1 < m->n_decode; j++) {
		double gap = d[j + 1].ms - d[j - 1].ms;
		double f = (double)(d[j].batch - d[j - 1].batch) /
			   (double)(d[j + 1].batch - d[j - 1].batch);
		double s = 4 * f * (1 - f);
		if (!(fabs(gap) > 0))
			continue;
		double w[3] = { -(1 - f), 1, -f }, v = 0;
		for (int p = 0; b && p < 3; p++)
			for (int q = 0; q < 3; q++)
				v += w[p] * w[q] * table_cov(b, d[j - 1 + p].batch, d[j - 1 + q].batch);
		batch[c] = d[j].batch;
		k[c] = ((d[j].ms - d[j - 1].ms) / gap - f) / s;
		nv[c++] = v / (gap * s) / (gap * s);
	}
	return c;
}

/* form_interp: the line's error between table points, for a table with
 * gaps. Its variance is the mean over the inner points of the squared miss
 * less its noise variance (interp_loo), when positive; a table without
 * inner points gets the prior CAL_INTERP_PRIOR_SD. */
static void interp_block(cov_build *b, const sb_model *m)
{
	if (!table_has_gap(m))
		return;
	int batch[SB_MODEL_MAX_DECODE];
	double k[SB_MODEL_MAX_DECODE], nv[SB_MODEL_MAX_DECODE], v = 0;
	int n = interp_loo(m, b, batch, k, nv);
	for (int j = 0; j < n; j++)
		v += (k[j] * k[j] - nv[j]) / n;
	if (n == 0)
		v = CAL_INTERP_PRIOR_SD * CAL_INTERP_PRIOR_SD;
	const char *names[1] = { "form_interp" };
	double c[1] = { v };
	add_block(b, m, names, 1, c);
}

/* fit.form.interp (cal_form_render), or NULL for a table without gaps. */
static json_t *interp_render(const sb_model *m)
{
	if (!table_has_gap(m))
		return NULL;
	int batch[SB_MODEL_MAX_DECODE];
	double k[SB_MODEL_MAX_DECODE], nv[SB_MODEL_MAX_DECODE];
	int n = interp_loo(m, NULL, batch, k, nv);
	if (n == 0)
		return json_pack("{s:f,s:s}", "prior_sd", CAL_INTERP_PRIOR_SD, "how",
				 "no inner table point to check the line between two points by: "
				 "form_interp's sd is a prior, the root mean square of the misses "
				 "seen where it could be checked (docs/model-notes.md, \"Between the "
				 "measured batch sizes\")");
	json_t *lo = json_array(), *mi = json_array();
	for (int j = 0; j < n; j++) {
		json_array_append_new(lo, json_integer(batch[j]));
		json_array_append_new(mi, json_real(k[j]));
	}
	return json_pack("{s:o,s:o,s:s}", "left_out_batches", lo, "misses", mi, "how",
			 "each inner point against the line between its neighbours, the miss "
			 "in shares of their gap per 4 f (1 - f); the mean square beyond the "
			 "entries' own noise is form_interp's variance in fit.covariance");
}

void cal_form_missing(const sb_model *m, json_t *missing)
{
	const sb_decode_point *d = m->decode;
	for (int i = 1; i < m->n_decode; i++) {
		if (d[i].batch - d[i - 1].batch < 2)
			continue;
		char buf[400], which[40];
		int lo = d[i - 1].batch + 1, hi = d[i].batch - 1;
		if (lo == hi)
			snprintf(which, sizeof which, "%d", lo);
		else
			snprintf(which, sizeof which, "%d to %d", lo, hi);
		snprintf(buf, sizeof buf,
			 "decode_ms between batches %d and %d is the line between them, with "
			 "form_interp's spread: measure %s sequences at once (a closed loop at "
			 "that many clients on a server with as many slots; calibrate --url pins "
			 "every batch size up to --slots)",
			 d[i - 1].batch, d[i].batch, which);
		json_array_append_new(missing, json_string(buf));
	}
}

json_t *cal_form_render(const sb_model *m)
{
	int batch;
	double pred, meas, steps, nv;
	json_t *o = json_object(), *dec = NULL, *in = interp_render(m);
	if (decode_loo(m, NULL, &batch, &pred, &meas, &steps, &nv))
		dec = json_pack("{s:i,s:f,s:f,s:f,s:s}", "left_out_batch", batch, "predicted_ms",
				pred, "measured_ms", meas, "steps", steps, "how",
				"the decode table without its last point extrapolated to it; the "
				"miss beyond the entries' own noise, per step of the table's last "
				"spacing, gives form_decode's variance in fit.covariance");
	else if (m->n_decode >= 2)
		dec = json_pack("{s:f,s:s}", "prior_sd", CAL_FORM_PRIOR_SD, "how",
				"a table of 2 or 3 points cannot check its own rule: form_decode's "
				"sd per step is a prior, the root mean square of the misses seen "
				"where it could be checked (docs/model-notes.md, \"Beyond the "
				"measured batch sizes\")");
	if (dec)
		json_object_set_new(o, "decode", dec);
	if (in)
		json_object_set_new(o, "interp", in);
	if (json_object_size(o) == 0) {
		json_decref(o);
		return json_null();
	}
	return o;
}

static json_t *to_json(const cov_build *b)
{
	json_t *names = json_array(), *mx = json_array();
	for (int i = 0; i < b->n; i++) {
		json_array_append_new(names, json_string(b->names[i]));
		json_t *row = json_array();
		for (int j = 0; j < b->n; j++) /* symmetric to the bit */
			json_array_append_new(row, sb_json_number(i <= j ? b->c[i][j] : b->c[j][i]));
		json_array_append_new(mx, row);
	}
	return json_pack("{s:o,s:o}", "params", names, "matrix", mx);
}

json_t *cal_covariance_render(const cal_results *r, const sb_model *m)
{
	cov_build *b = calloc(1, sizeof *b); /* 32 KiB: not on the stack */
	if (!b)
		return NULL;
	decode1_block(b, r, m);
	prefill_blocks(b, r, m);
	cache_block(b, r, m);
	decode_blocks(b, r, m);
	noise_block(b, r, m);
	form_block(b, m);
	interp_block(b, m);
	json_t *j = b->n > 0 ? to_json(b) : json_null();
	free(b);
	return j;
}
