/* calibrate.c — the engine model from results files (see calibrate.h): the
 * orchestration, the slot count and the helpers the other files share (cal.h). */
#include "calibrate/cal.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "calibrate/fit_linear.h"
#include "calibrate/slots.h"

void sb_calib_opts_init(sb_calib_opts *o)
{
	memset(o, 0, sizeof(*o));
}

/* ---- shared helpers (cal.h) --------------------------------------------- */

json_t *cal_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

void cal_note(cal *k, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(k->notes, json_string(buf));
}

void cal_missing(cal *k, const char *fmt, ...)
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
void cal_coef(cal *k, const char *name, double v, double lo, double hi, const char *unit,
	      const char *from)
{
	json_object_set_new(k->coefs, name,
			    json_pack("{s:o,s:[o,o],s:s,s:s}", "value", cal_num(v), "ci95", cal_num(lo),
				      cal_num(hi), "unit", unit, "from", from));
}

const char *cal_fname(const cal *k, size_t f)
{
	return k->in[f].name ? k->in[f].name : "(input)";
}

const char *cal_base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

long cal_nsteps(const cal *k, double P)
{
	if (k->batch_tokens <= 0)
		return 1;
	long s = (long)ceil(P / (double)k->batch_tokens);
	return s < 1 ? 1 : s;
}

/* Prompt work added to a step that also decodes: the prefill terms only. */
double cal_prefill_var(const cal *k, double P)
{
	return k->ppt * P + k->attn * P * (P - 1.0) / 2.0;
}

/* Client-side overhead of a request with Pin prompt tokens. */
double cal_ovh(const cal *k, double Pin)
{
	return k->overhead + k->ovpt * Pin;
}

/* target.KEY as a string; for a simulated run, whose target.model is the
 * model object itself, that model's name. */
const char *cal_target_str(const sb_results *r, const char *key)
{
	const json_t *t = json_object_get(r->root, "target");
	const json_t *v = json_object_get(t, key);
	if (json_is_object(v))
		v = json_object_get(v, "name");
	return json_string_value(v);
}

long cal_target_long(const sb_results *r, const char *key)
{
	const json_t *t = json_object_get(r->root, "target");
	const json_t *v = json_object_get(t, key);
	return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

int cal_cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* ---- residual tables ---------------------------------------------------- */

json_t *cal_residuals_json(const cal *k, const sb_linfit *f, const size_t *lvi,
			   const double *x, const char *xname)
{
	if (f->n <= 40) {
		json_t *a = json_array();
		for (size_t i = 0; i < f->n; i++) {
			const lvpt *L = &k->lvs[lvi[i]];
			json_array_append_new(a, json_pack("{s:s,s:f,s:f,s:f,s:f,s:f}", "file",
							   cal_base_name(cal_fname(k, L->file)),
							   "concurrency", L->c, xname, x[i], "observed",
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
			/* one output token: a request holds its slot for its
			 * prefill step alone, so one queued for a slot and one
			 * prefilled a step later (split_prob) look the same */
			if (L->file != f || L->N < 2)
				continue;
			obs[n].c = L->c;
			obs[n].ttft_ms = L->ttft;
			obs[n].ttft_nq_ms = cal_ttft_wave(k, L->c, L->P);
			obs[n].e2e_ms = L->e2e;
			obs[n].wait_ms = L->wait - (L->wait_has_overhead ? cal_ovh(k, L->P) : 0);
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
		long declared = cal_target_long(k->in[f].res, "slots");
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
			cal_note(k, "%s: --slots %d, but its levels suggest %d (%s confidence: %s)",
				 cal_base_name(cal_fname(k, f)), k->o->slots, g.slots, g.confidence, g.why);
		if (declared >= 1 && strcmp(g.confidence, "none") &&
		    (declared < g.lo || (g.hi > 0 && declared > g.hi)))
			cal_note(k, "%s: declares %ld slots but its levels suggest %d..%s (%s)",
				 cal_base_name(cal_fname(k, f)), declared, g.lo,
				 g.hi > 0 ? "" : "more", g.why);
		json_array_append_new(
			per, json_pack("{s:s,s:i,s:s,s:{s:i,s:i,s:o,s:s,s:s,s:o}}", "file",
				       cal_base_name(cal_fname(k, f)), "slots", k->fslots[f], "from", from,
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
						f ? ", " : "", cal_base_name(cal_fname(k, f)),
						k->fslots[f]);
		json_decref(per);
		return sb_error_set(e, "the inputs come from servers with different slot counts "
				       "(%s): pass --slots S to choose the model's", list);
	} else {
		k->slots = all_same;
		from_model = conf_model ? "inferred" : "declared (target.slots)";
	}
	if (conf_model && !strcmp(conf_model, "none") && k->o->slots <= 0 &&
	    !strcmp(from_model, "inferred"))
		cal_missing(k, "slots: no concurrency sweep, so the slot count is unknown (1 assumed); "
			   "pass --slots S or measure --concurrency 1,2,4,8");
	json_object_set_new(k->fit, "slots",
			    json_pack("{s:i,s:s,s:o,s:s,s:o}", "value", k->slots, "from",
				      from_model, "confidence",
				      conf_model ? json_string(conf_model) : json_null(), "why",
				      why_model, "per_file", per));
	return 0;
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
	r = cal_collect(&k, e);
	if (r < 0)
		goto fail;
	r = cal_fit_decode1(&k, e);
	if (r < 0)
		goto fail;
	r = cal_fit_prefill(&k, e);
	if (r < 0)
		goto fail;
	r = resolve_slots(&k, e);
	if (r < 0)
		goto fail;
	r = cal_fit_decode_batches(&k, e);
	if (r < 0)
		goto fail;
	r = k.n_rq ? cal_fit_noise_requests(&k, e) : 1;
	if (r < 0)
		goto fail;
	if (r == 1)
		cal_fit_noise_summaries(&k);
	r = cal_fit_admit(&k);
	if (r < 0)
		goto fail;
	r = cal_fit_split(&k);
	if (r < 0) {
		sb_error_code(e, r, "out of memory");
		goto fail;
	}
	cal_coef(&k, "noise_cv", k.noise_cv, k.noise_cv_lo, k.noise_cv_hi, "",
		 sb_noise_name(k.noise_kind));
	if (k.noise_cv > 0.5)
		cal_note(&k, "step noise cv %.3g is large: the server's timing was unstable during "
			 "the measurement (other load on the machine?); re-measure on a quiet "
			 "machine before trusting tail predictions", k.noise_cv);
	cal_coef(&k, "prefill_cv", k.pcv, k.pcv_lo, k.pcv_hi, "", k.pcv_from);
	cal_coef(&k, "overhead_sd_ms", k.overhead_sd, NAN, NAN, "ms", "see fit.noise");

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
							cal_base_name(cal_fname(&k, f)), "source",
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

	const char *mname = o->name ? o->name : cal_target_str(in[0].res, "model");
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
	out->split_prob = k.split[0];
	out->split_prob_crowded = k.split_crowded[0];
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
