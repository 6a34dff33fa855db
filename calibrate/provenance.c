/* provenance.c — the model's "fit" object from the steps' results
 * (provenance.h). Each render_* function writes one step's part in the
 * order the steps run, so that the notes, the missing measurements and the
 * coefficients keep that order. */
#include "calibrate/provenance.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include <gsl/gsl_cdf.h>

#include "core/jsonfile.h"
/* The object under construction: fit and its three lists (owned until
 * cal_provenance_render attaches them). */
typedef struct pv {
	const cal_results *r;
	json_t *fit, *coefs, *missing, *notes;
} pv;

/* Appends a formatted sentence to list. */
static void say(json_t *list, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(json_t *list, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(list, json_string(buf));
}

/* Records a coefficient: value, 95% interval (NaN: none), unit and where
 * it came from. */
static void coef(pv *p, const char *name, double v, double lo, double hi, const char *unit,
		 const char *from)
{
	json_object_set_new(p->coefs, name,
			    json_pack("{s:o,s:[o,o],s:s,s:s}", "value", sb_json_number(v), "ci95", sb_json_number(lo),
				      sb_json_number(hi), "unit", unit, "from", from));
}

/* Coefficient i of fit f with its interval when it has one. */
static void coef_fit(pv *p, const char *name, const sb_linfit *f, int i, const char *unit,
		     const char *from)
{
	coef(p, name, f->coef[i], f->has_ci ? f->ci_lo[i] : NAN, f->has_ci ? f->ci_hi[i] : NAN,
	     unit, from);
}

/* Input f's base name (borrowed). */
static const char *base(const pv *p, size_t f)
{
	return cal_base_name(cal_fname(p->r->data, f));
}

/* A fit's residuals by level (a table up to 40 points, else n, rms and
 * max_abs): new reference. */
static json_t *residuals(const pv *p, const sb_linfit *f, const size_t *lvi, const double *x,
			 const char *xname)
{
	if (f->n <= 40) {
		json_t *a = json_array();
		for (size_t i = 0; i < f->n; i++) {
			const cal_level *L = &p->r->data->lvs[lvi[i]];
			json_array_append_new(a, json_pack("{s:s,s:f,s:f,s:f,s:f,s:f}", "file",
							   base(p, L->file), "concurrency", L->c,
							   xname, x[i], "observed",
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
	return json_pack("{s:I,s:f,s:f}", "n", (json_int_t)f->n, "rms", sqrt(ss / (double)f->n),
			 "max_abs", mx);
}

/* ---- the steps ---------------------------------------------------------- */

static void render_collect(pv *p)
{
	const cal_data *d = p->r->data;
	for (size_t i = 0; i < d->n_remarks; i++) {
		const cal_remark *m = &d->remarks[i];
		if (m->kind == CAL_REMARK_OPEN_LOOP)
			say(p->notes, "%s: level %g is open-loop (rate): not used (the fit uses "
				      "closed-loop levels)", base(p, m->file), m->level);
		else
			say(p->notes, "%s: prompt/output lengths vary; the summary of level %g is "
				      "fitted at their means", base(p, m->file), m->level);
	}
}

static void render_decode1(pv *p)
{
	const cal_decode1 *r = p->r->decode1;
	const sb_linfit *f = &r->f;
	if (isfinite(r->dropped_slope))
		say(p->notes, "TPOT at concurrency 1 fell with context (slope %.3g ms/token): "
			      "per_kv_token set to 0", r->dropped_slope);
	static const char *const names[] = { "decode_ms_1", "per_kv_token" };
	json_t *j = sb_linfit_to_json(f, names);
	json_object_set_new(j, "model", json_string(r->with_kv ? "TPOT = decode_ms(1) + "
								  "per_kv_token * (prompt + output/2)"
							       : "TPOT = decode_ms(1)"));
	json_object_set_new(j, "data", json_string("TPOT at concurrency 1 (per request, or level "
						    "medians weighted 2n/pi)"));
	json_object_set_new(j, "residuals", residuals(p, f, r->lvi, r->x, "context_tokens"));
	json_object_set_new(p->fit, "decode_1", j);
	coef_fit(p, "decode_ms[1]", f, 0, "ms", "TPOT at concurrency 1");
	if (r->with_kv) {
		coef_fit(p, "per_kv_token", f, 1, "ms/token", "TPOT slope against context");
		return;
	}
	coef(p, "per_kv_token", 0, NAN, NAN, "ms/token", "not identified (set to 0)");
	if (!r->contexts_apart)
		say(p->missing, "per_kv_token: TPOT was measured at one context length only; "
				"measure concurrency 1 at two or more prompt lengths");
}

/* The sentence on the P(P-1)/2 term into why. */
static void attn_decision(const cal_prefill *r, char *why, size_t len)
{
	if (r->attn == CAL_ATTN_UNTESTED) {
		snprintf(why, len, "only %zu prompt lengths / %zu points: the P(P-1)/2 term "
				   "cannot be tested (needs 3 lengths and 4 points)",
			 r->distinct, r->n);
		return;
	}
	snprintf(why, len, "F-test of the P(P-1)/2 term: F = %.3g, p = %.3g; coefficient %.3g: %s",
		 r->F, r->p_value, r->quad.coef[2],
		 r->attn == CAL_ATTN_KEPT	   ? "kept (p < 0.05, interval above 0)"
		 : r->attn == CAL_ATTN_NOT_POSITIVE ? "dropped (not positive)"
						    : "dropped (p >= 0.05 or interval reaches 0)");
}

/* fit.prefill and the per-token coefficients. */
static void render_prefill_fit(pv *p, const char *why)
{
	const cal_prefill *r = p->r->prefill;
	const sb_linfit *f = cal_prefill_chosen(r);
	static const char *const names_c[] = { "overhead_ms", "per_prefill_token",
					       "per_prefill_attn" };
	static const char *const names_t[] = { "prefill_base", "per_prefill_token",
					       "per_prefill_attn" };
	json_t *j = sb_linfit_to_json(f, r->timings ? names_t : names_c);
	json_object_set_new(
		j, "model",
		json_string(r->timings
				    ? "server prompt_ms = prefill_base * steps + per_prefill_token "
				      "* P [+ per_prefill_attn * P(P-1)/2]"
				    : "TTFT - decode_ms(1) * steps = overhead_ms + per_prefill_token "
				      "* P [+ per_prefill_attn * P(P-1)/2]"));
	json_object_set_new(j, "terms_decision", json_string(why));
	json_object_set_new(j, "f_test", json_pack("{s:o,s:o}", "F", sb_json_number(r->F), "p_value",
						   sb_json_number(r->p_value)));
	if (r->attn == CAL_ATTN_KEPT)
		json_object_set_new(j, "linear_alternative_r2", sb_json_number(r->lin.r2));
	json_object_set_new(j, "residuals", residuals(p, f, r->lvi, r->P, "prompt_tokens"));
	json_object_set_new(p->fit, "prefill", j);
	coef_fit(p, "per_prefill_token", f, 1, "ms/token",
		 r->timings ? "server prompt_ms against prompt length"
			    : "TTFT at concurrency 1 against prompt length");
	if (r->attn == CAL_ATTN_KEPT)
		coef_fit(p, "per_prefill_attn", f, 2, "ms/token^2", "P(P-1)/2 term (F-test)");
	else
		coef(p, "per_prefill_attn", 0, NAN, NAN, "ms/token^2", why);
	if (!r->ppt_zeroed)
		return;
	say(p->notes, "per_prefill_token %.3g ms/token is zero within its interval or too small "
		      "to matter (%.2g ms over the prompt lengths measured): prefill cost is not "
		      "measurable here; set to 0", r->ppt_fitted, r->ppt_fall_ms);
	json_object_set_new(p->coefs, "per_prefill_token",
			    json_pack("{s:f,s:[o,o],s:s,s:s}", "value", 0.0, "ci95",
				      sb_json_number(f->ci_lo[1]), sb_json_number(f->ci_hi[1]), "unit", "ms/token", "from",
				      "zero within its interval or negligible (set to 0)"));
}

/* prefill_base and overhead with server timings. */
static void render_overhead_timings(pv *p)
{
	const cal_prefill *r = p->r->prefill;
	coef(p, "prefill_base", r->prefill_base.value, r->prefill_base.lo, r->prefill_base.hi,
	     "ms", "server prompt_ms intercept");
	const cal_coef_value *s = &r->overhead_slope;
	if (r->slope_state == CAL_SLOPE_KEPT)
		coef(p, "overhead_per_prompt_token", s->value, s->lo, s->hi, "ms/token",
		     "slope of TTFT - server prompt_ms against prompt tokens");
	else if (r->slope_state == CAL_SLOPE_DROPPED)
		coef(p, "overhead_per_prompt_token", 0, s->lo, s->hi, "ms/token",
		     "slope not positive within its interval: set to 0");
	coef(p, "overhead_ms", r->overhead.value, r->overhead.lo, r->overhead.hi, "ms",
	     r->overhead_how == CAL_OVH_TIMINGS_LINE
		     ? "intercept of TTFT - server prompt_ms against prompt tokens at "
		       "concurrency 1"
		     : "mean of TTFT - server prompt_ms at concurrency 1");
	json_object_set_new(p->fit, "overhead_split",
			    json_string("server timings: overhead = TTFT - prompt_ms"));
	if (r->prefill_base_clamped)
		say(p->notes, "prefill_base came out negative (%.3g ms): set to 0",
		    r->prefill_base.value);
	if (r->overhead_clamped)
		say(p->notes, "overhead came out negative (%.3g ms): set to 0", r->overhead.value);
}

/* prefill_base and overhead without server timings. */
static void render_overhead_split(pv *p)
{
	const cal_prefill *r = p->r->prefill;
	const char *split = "no server timings: the TTFT intercept is overhead + "
			    "prefill_base; prefill_base taken = decode_ms(1) (a forward "
			    "pass reads the weights once, prompt or not)";
	if (r->overhead_how == CAL_OVH_INTERCEPT_NEGATIVE) {
		split = "no server timings and the intercept is below decode_ms(1): "
			"overhead set to 0, prefill_base = the whole intercept";
		say(p->notes, "%s", split);
	}
	json_object_set_new(p->fit, "overhead_split", json_string(split));
	coef(p, "overhead_ms", r->overhead.value, r->overhead.lo, r->overhead.hi, "ms",
	     "TTFT intercept at concurrency 1 minus prefill_base");
	coef(p, "prefill_base", r->prefill_base.value, NAN, NAN, "ms", "= decode_ms(1) (assumed)");
	say(p->missing, "overhead vs prefill_base: without server timings (prompt_ms) they are "
			"split by assumption; a llama.cpp target reports them");
}

static void render_prefill(pv *p)
{
	const cal_prefill *r = p->r->prefill;
	char why[300];
	attn_decision(r, why, sizeof(why));
	if (r->attn == CAL_ATTN_UNTESTED)
		say(p->missing, "per_prefill_attn: TTFT at 3 or more prompt lengths would test "
				"whether prefill is superlinear");
	render_prefill_fit(p, why);
	if (r->timings)
		render_overhead_timings(p);
	else
		render_overhead_split(p);
}

/* fit.cache and the per_cached_token coefficient, when the inputs had
 * shared prefixes (cache.h). */
static void render_cache(pv *p)
{
	const cal_cache *c = p->r->cache;
	if (!c || c->files == 0)
		return;
	json_t *j = json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:s}", "files", c->files,
			      "requests", (json_int_t)c->requests, "without_timings",
			      (json_int_t)c->untimed, "reused", (json_int_t)c->hits,
			      "reused_within_slots", (json_int_t)c->within_slots,
			      "reused_beyond_slots", (json_int_t)c->beyond_slots,
			      "missed_beyond_slots", (json_int_t)c->missed_beyond, "mean_reused_tokens",
			      sb_json_number(c->mean_cached), "miss_excess_ms",
			      sb_json_number(c->miss_excess_ms), "miss_excess_h95_ms",
			      sb_json_number(c->miss_excess_h95), "prompt_cache",
			      sb_prompt_cache_name(c->kind));
	if (j)
		json_object_set_new(j, "restored_vs_own_t", sb_json_number(c->restored_t));
	if (j)
		json_object_set_new(p->fit, "cache", j);
	if (c->requests == 0) {
		say(p->missing, "prompt_cache: the shared-prefix runs have no server timings "
				"(prompt_n, cache_n): measure with --api llama-completion");
		return;
	}
	if (c->hits == 0) {
		say(p->notes, "prompt_cache: none of %ld shared-prefix requests reused a token "
			      "(the server's prompt cache is off)", c->requests);
		return;
	}
	const cal_coef_value *v = &c->per_token;
	say(p->notes, "prompt_cache %s: %ld of %ld shared-prefix requests reused a mean of %.0f "
		      "tokens (%ld of a prefix among the slots' last prompts, %ld of one sent "
		      "before beyond them; %ld of those reused nothing); those that reused "
		      "nothing left %.2f ms over the model (95%%: +-%.2f)",
	    sb_prompt_cache_name(c->kind), c->hits, c->requests, c->mean_cached,
	    c->within_slots, c->beyond_slots, c->missed_beyond, c->miss_excess_ms,
	    c->miss_excess_h95);
	if (p->r->prefill->attn == CAL_ATTN_UNTESTED)
		say(p->missing, "per_cached_token: the prefill's attention term was not tested "
				"(fewer than 3 prompt lengths), so what reused tokens' positions add to "
				"the rest of a prompt is taken into their cost");
	int apart = isfinite(c->per_restored.value);
	coef(p, "per_cached_token", c->clamped ? 0 : v->value, v->lo, v->hi, "ms/token",
	     c->clamped ? "TTFT less overhead and prefill, per reused token: negative, set to 0"
	     : apart    ? "TTFT less overhead and prefill of the tokens processed, per token "
			  "reused from the slot's own last prompt (a line through 0)"
			: "TTFT less overhead and prefill of the tokens processed, per reused "
			  "token (a line through 0)");
	if (isfinite(c->restored_t) && !apart)
		say(p->notes, "prompt_cache ram: restored and own-slot reuses cost alike "
			      "(their lines %.1f standard errors apart): one cost for both",
		    c->restored_t);
	if (!apart)
		return;
	v = &c->per_restored;
	coef(p, "per_restored_token", c->restored_clamped ? 0 : v->value, v->lo, v->hi,
	     "ms/token",
	     c->restored_clamped ? "TTFT less overhead and prefill, per restored token: "
				   "negative, set to 0"
				 : "TTFT less overhead and prefill of the tokens processed, per "
				   "token restored from beyond the slots (a line through 0)");
}

static const char *slots_from_name(cal_slots_from f)
{
	switch (f) {
	case CAL_SLOTS_DECLARED:
		return "declared (target.slots)";
	case CAL_SLOTS_OPTION:
		return "--slots";
	case CAL_SLOTS_NOT_MEASURED:
		return "not measured (takes the other inputs' count)";
	case CAL_SLOTS_INFERRED:
		break;
	}
	return "inferred";
}

static void render_slots(pv *p)
{
	const cal_slots *s = p->r->slots;
	json_t *per = json_array();
	for (size_t f = 0; f < s->n_files; f++) {
		const cal_file_slots *F = &s->files[f];
		const sb_slot_guess *g = &F->guess;
		if (F->option_disagrees)
			say(p->notes, "%s: --slots %d, but its levels suggest %d (%s confidence: %s)",
			    base(p, f), F->slots, g->slots, g->confidence, g->why);
		if (F->declared_disagrees)
			say(p->notes, "%s: declares %ld slots but its levels suggest %d..%s (%s)",
			    base(p, f), F->declared, g->lo, g->hi > 0 ? "" : "more", g->why);
		json_array_append_new(
			per, json_pack("{s:s,s:i,s:s,s:{s:i,s:i,s:o,s:s,s:s,s:o}}", "file",
				       base(p, f), "slots", F->slots, "from", slots_from_name(F->from),
				       "inference", "slots", g->slots, "lo", g->lo, "hi",
				       g->hi > 0 ? json_integer(g->hi) : json_null(), "confidence",
				       g->confidence, "why", g->why, "levels",
				       F->levels ? json_incref(F->levels) : json_array()));
	}
	if (s->unknown)
		say(p->missing, "slots: no concurrency sweep, so the slot count is unknown (1 "
				"assumed); pass --slots S or measure --concurrency 1,2,4,8");
	json_object_set_new(p->fit, "slots",
			    json_pack("{s:i,s:s,s:o,s:s,s:o}", "value", s->slots, "from",
				      slots_from_name(s->from), "confidence",
				      s->confidence ? json_string(s->confidence) : json_null(), "why",
				      s->why, "per_file", per));
}

/* The sentence on how point P's prefill interference was counted into buf
 * (returned; static text for the fixed ones). */
static const char *interference_how(const cal_decode_point *P, const cal_level *L, char *buf,
				    size_t len)
{
	if (P->how == CAL_INTERF_RECORDS)
		return "per request: other requests' prefills that finished inside its decode "
		       "phase (from their first-token times); effective batch = 1 + the time "
		       "others decoded alongside it / its decode time, both on a clock "
		       "with the prefill work removed (prefill steps are long but add no "
		       "decoding sequence)";
	if (P->how == CAL_INTERF_QUEUED)
		return "queued level: half of the staggered-admission interference "
		       "assumed (unidentifiable from a summary)";
	snprintf(buf, len, "summary: TTFT %.4g ms lies between one-wave %.4g ms and "
			   "staggered %.4g ms admission -> %.0f%% of the staggered interference",
		 L->ttft, P->ttft_wave_ms, P->ttft_staggered_ms, 100 * P->fraction);
	return buf;
}

/* fit.decode.points and the notes on points not used. */
static json_t *decode_points(pv *p)
{
	const cal_decode *r = p->r->decode;
	json_t *pts = json_array();
	for (size_t i = 0; i < r->n_points; i++) {
		const cal_decode_point *P = &r->points[i];
		const cal_level *L = &p->r->data->lvs[P->level];
		const char *fn = base(p, L->file);
		if (P->use == CAL_POINT_CHECK_ONLY) {
			json_array_append_new(
				pts, json_pack("{s:s,s:f,s:i,s:f,s:f,s:s}", "file", fn, "concurrency",
					       L->c, "batch", 1, "tpot_ms", L->tpot,
					       "check_residual_ms", P->check_residual_ms, "use",
					       "check only (one slot: decode_ms(1) comes from "
					       "concurrency 1)"));
			continue;
		}
		char buf[200];
		json_array_append_new(
			pts, json_pack("{s:s,s:f,s:i,s:f,s:f,s:f,s:f,s:f,s:s}", "file", fn,
				       "concurrency", L->c, "batch", P->batch, "effective_batch",
				       P->effective_batch, "tpot_ms", L->tpot, "minus_kv_ms",
				       P->minus_kv_ms, "minus_prefill_interference_ms",
				       P->minus_interference_ms, "step_ms", P->step_ms, "correction",
				       interference_how(P, L, buf, sizeof(buf))));
		if (P->use == CAL_POINT_NOT_POSITIVE)
			say(p->notes, "%s: concurrency %g gives a decode step of %.3g ms after "
				      "corrections: not used", fn, L->c, P->step_ms);
		else if (P->use == CAL_POINT_TOO_MANY_BATCHES)
			say(p->notes, "%s: batch %d not used (at most %d batch sizes are fitted)", fn,
			    P->batch, SB_LINFIT_MAXP);
	}
	return pts;
}

/* fit.decode.fit and .table, the decode_ms[B] coefficients and the notes
 * on entries below their predecessor. */
static void decode_table(pv *p, json_t *dj)
{
	const cal_decode *r = p->r->decode;
	char names_buf[SB_LINFIT_MAXP][16];
	const char *names[SB_LINFIT_MAXP];
	json_t *tab = json_object();
	json_object_set_new(tab, "1", sb_json_number(p->r->engine->decode_1_ms));
	for (int i = 0; i < r->n_batches; i++) {
		snprintf(names_buf[i], sizeof(names_buf[i]), "%d", r->batches[i]);
		names[i] = names_buf[i];
		json_object_set_new(tab, names_buf[i], sb_json_number(r->f.coef[i]));
		char key[32];
		snprintf(key, sizeof(key), "decode_ms[%d]", r->batches[i]);
		coef_fit(p, key, &r->f, i, "ms", "TPOT at that batch size, corrected (see fit.decode)");
	}
	json_t *lj = sb_linfit_to_json(&r->f, names);
	json_object_set_new(lj, "model", json_string("step = decode_ms(effective batch), linear "
						     "between table entries; decode_ms(1) fixed "
						     "from concurrency 1"));
	json_object_set_new(dj, "fit", lj);
	json_object_set_new(dj, "table", tab);
	for (int i = 1; i < r->n_table; i++)
		if (r->below[i])
			say(p->notes, "decode_ms(%d) = %.3g ms is below decode_ms(%d) = %.3g ms: a "
				      "larger batch looks cheaper per step; check those levels",
			    r->table[i].batch, r->table[i].ms, r->table[i - 1].batch,
			    r->table[i - 1].ms);
}

/* fit.decode.linear and the base and per_seq coefficients. */
static void decode_line(pv *p, json_t *dj)
{
	const cal_decode *r = p->r->decode;
	const sb_linfit *lf = &r->line;
	static const char *const names[] = { "base", "per_seq" };
	json_t *lj = sb_linfit_to_json(lf, names);
	json_object_set_new(lj, "note", json_string("decode_ms(B) = base + per_seq * B over the "
						    "table; reported only, the model keeps the "
						    "per-batch table"));
	json_t *res = json_array();
	for (int i = 0; i < r->n_table; i++)
		json_array_append_new(res, json_pack("{s:f,s:f}", "batch", (double)r->table[i].batch,
						     "residual", lf->resid[i]));
	json_object_set_new(lj, "residuals", res);
	json_object_set_new(dj, "linear", lj);
	coef_fit(p, "base", lf, 0, "ms", "line through the decode table");
	coef_fit(p, "per_seq", lf, 1, "ms/sequence", "line through the decode table");
}

static void render_decode(pv *p)
{
	const cal_decode *r = p->r->decode;
	json_t *dj = json_pack("{s:o}", "points", decode_points(p));
	if (r->n_batches > 0)
		decode_table(p, dj);
	if (r->n_table == 1)
		say(p->missing, "decode_ms at batch sizes above 1: no level ran 2 or more sequences "
				"at once; measure a concurrency sweep (--concurrency 1,2,4,8) on a "
				"server with slots");
	else if (r->has_line)
		decode_line(p, dj);
	json_object_set_new(p->fit, "decode", dj);
}

/* fit.pinned: the decode passes measured with requests pinned to slots,
 * their coefficients, the shape check and the layout decision. */
static void render_pinned(pv *p)
{
	const cal_pinned *r = p->r->pinned;
	if (r->n_tab == 0)
		return;
	json_t *tab = json_array();
	for (int i = 0; i < r->n_tab; i++) {
		const cal_pin_entry *t = &r->tab[i];
		json_array_append_new(
			tab, json_pack("{s:i,s:o,s:o,s:o,s:o,s:I,s:b,s:b}", "batch", t->batch,
				       "decode_ms", sb_json_number(t->ms), "decode_ms_se",
				       sb_json_number(t->ms_se), "decode_kv", sb_json_number(t->kv),
				       "decode_kv_se", sb_json_number(t->kv_se), "requests",
				       (json_int_t)t->n, "below_previous", t->below, "remeasured",
				       t->remeasured));
		char key[32];
		double h = (t->dof > 0 ? gsl_cdf_tdist_Pinv(0.975, (double)t->dof) : NAN) * t->ms_se;
		snprintf(key, sizeof(key), "decode_ms[%d]", t->batch);
		coef(p, key, t->ms, t->ms - h, t->ms + h, "ms",
		     "TPOT of requests pinned to slots 0..B-1 (one pass of B), at two contexts; "
		     "a wave of B sent together is one point (Student t)");
		if (t->below)
			say(p->notes, "decode_ms(%d) = %.3g ms is below the entry before it by more than "
				      "twice its standard error%s",
			    t->batch, t->ms, t->remeasured ? "; measured twice, so kept (a kernel "
							     "that changes with the batch size)"
							   : "; measured once");
	}
	json_t *pj = json_pack("{s:o,s:s}", "table", tab, "how",
			       "closed-loop levels pinned to slots 0..B-1 (llama.cpp id_slot): every "
			       "step is one pass of B sequences; per request TPOT = the server's "
			       "predicted_ms / (predicted_n - 1); decode_ms(B) + decode_kv(B) * "
			       "context summed over the batch, least squares over two contexts");
	if (r->has_layout)
		say(p->notes, "KV cache %s: two requests pinned to slots 0 and 2 decoded at %.3g "
			      "ms a token; two passes of one predict %.3g, one pass of two %.3g",
		    sb_kv_cache_name(r->layout), r->strided_ms, r->per_slot_ms, r->unified_ms);
	if (r->has_layout)
		json_object_set_new(pj, "layout",
				    json_pack("{s:s,s:f,s:f,s:f,s:s}", "kv_cache",
					      sb_kv_cache_name(r->layout), "slots_0_2_tpot_ms",
					      r->strided_ms, "per_slot_prediction_ms", r->per_slot_ms,
					      "unified_prediction_ms", r->unified_ms, "how",
					      "two requests pinned to slots 0 and 2: per-slot caches "
					      "make that two passes of one, a unified cache one pass "
					      "of two; the nearer prediction wins"));
	json_object_set_new(p->fit, "pinned", pj);
}

/* fit.groups: prompts prefilled together, and prefill_per_prompt. */
static void render_groups(pv *p)
{
	const cal_groups *r = p->r->groups;
	if (r->n == 0)
		return;
	long used = 0, dropped = 0;
	for (size_t i = 0; i < r->n; i++) {
		used += !r->st[i].dropped;
		dropped += r->st[i].dropped;
	}
	json_t *gj = json_pack(
		"{s:I,s:I,s:I,s:b,s:o,s:o,s:o,s:o,s:s}", "steps", (json_int_t)r->n, "steps_dropped",
		(json_int_t)dropped, "steps_of_2_or_more", (json_int_t)r->n_multi, "server_timings",
		r->timings, "speed", sb_json_number(r->fitted ? r->speed : NAN),
		"ratio_to_single_prompt_model",
		sb_json_number(r->n_multi >= 2 ? r->ratio_model : NAN), "single_vs_sweep",
		sb_json_number(r->sweep_drift), "prefill_per_prompt_fitted",
		sb_json_number(r->fitted ? r->per_prompt : NAN), "how",
		"groups of prompts sent together to the idle server, pinned to slots 0..G-1, one "
		"output token; requests grouped by engine step (first tokens together); step ms = "
		"speed * (single-prompt model + prefill_per_prompt * (prompts - passes)), "
		"weights 1/model^2");
	json_object_set_new(p->fit, "groups", gj);
	if (r->fitted && isfinite(r->sweep_drift))
		say(p->notes, "prefill groups: single prompts ran at %.3g times the sweep's at that "
			      "length (drift) and %.3g times the single-prompt model (drift and the "
			      "line's miss at that length)",
		    r->sweep_drift, r->speed);
	if (!r->fitted) {
		coef(p, "prefill_per_prompt", 0, NAN, NAN, "ms", "too few steps of 2 or more prompts");
		say(p->missing, "prefill_per_prompt: fewer than two steps of 2 or more prompts "
				"prefilled together (calibrate --url measures them)");
		return;
	}
	coef(p, "prefill_per_prompt", r->clamped || r->not_significant ? 0 : r->per_prompt, r->lo,
	     r->hi, "ms", "steps of prompts prefilled together against the single-prompt prefill");
	say(p->notes, "prompts prefilled together: %ld steps of 2 or more took %.3g times the "
		      "single-prompt model (median); prefill_per_prompt = %.3g ms [%.3g, %.3g]%s",
	    r->n_multi, r->ratio_model, r->per_prompt, r->lo, r->hi,
	    r->clamped	       ? ", below 0: the model takes 0"
	    : r->not_significant ? ", its interval reaches 0: the model takes 0"
				 : "");
}

/* One entry of fit.checks (new reference). */
static json_t *check_entry(const char *what, const char *expected, json_t *measured,
			   int remeasured, int kept, const char *why)
{
	return json_pack("{s:s,s:o,s:s,s:b,s:b,s:s}", "what", what, "measured", measured,
			 "expected_shape", expected, "remeasured", remeasured, "kept", kept, "why",
			 why);
}

/* fit.checks: every estimate that broke the expected shape (prompt sweep,
 * groups, pinned decode passes), whether it was measured again and kept. */
static void render_checks(pv *p)
{
	json_t *a = json_array();
	const cal_checks *c = p->r->checks;
	for (int i = 0; i < c->n; i++) {
		const cal_check *k = &c->c[i];
		json_t *m = json_pack("{s:f,s:o,s:f,s:o,s:o,s:o}", "at", k->x, "ms",
				      sb_json_number(k->measured), "previous_at", k->x_prev,
				      "previous_ms", sb_json_number(k->measured_prev), "again_ms",
				      sb_json_number(k->again), "again_previous_ms",
				      sb_json_number(k->again_prev));
		json_array_append_new(a, check_entry(k->what, k->expected, m, k->remeasured,
						     k->kept, k->why));
		if (!k->kept || k->remeasured)
			say(p->notes, "shape check: %s: %s", k->what, k->why);
	}
	const cal_pinned *r = p->r->pinned;
	for (int i = 0; i < r->n_tab; i++) {
		const cal_pin_entry *t = &r->tab[i];
		if (!t->below)
			continue;
		char what[64];
		snprintf(what, sizeof(what), "decode pass of %d vs %d", t->batch,
			 i ? r->tab[i - 1].batch : 1);
		json_t *m = json_pack("{s:i,s:o,s:o}", "at", t->batch, "ms", sb_json_number(t->ms),
				      "se_ms", sb_json_number(t->ms_se));
		json_array_append_new(
			a, check_entry(what, "a larger decode pass takes longer", m, t->remeasured, 1,
				       t->remeasured ? "measured twice (the plan's recheck) and "
						       "both measurements used: kept"
						     : "not re-measured: used as measured"));
	}
	json_object_set_new(p->fit, "checks", a);
}

static const char *pcv_from_text(cal_pcv_from f)
{
	switch (f) {
	case CAL_PCV_DECODE_CV:
		return "the decode steps' cv (one prompt length at concurrency 1 cannot separate "
		       "prefill noise from overhead)";
	case CAL_PCV_TIMINGS:
		return "server prompt_ms / predicted prefill at concurrency 1 (MLE)";
	case CAL_PCV_SPREAD_RECORDS:
		return "TTFT variance per prompt length at concurrency 1 = overhead_sd^2 + "
		       "(prefill_cv * step)^2, weighted least squares";
	case CAL_PCV_SPREAD_SUMMARIES:
		return "TTFT p99 - p50 at concurrency 1 per prompt length: sd^2 = overhead_sd^2 + "
		       "(cv * step)^2, weighted least squares";
	case CAL_PCV_NO_DATA:
		break;
	}
	return "no data";
}

static const char *sd_how_text(cal_sd_how h)
{
	switch (h) {
	case CAL_SD_TIMINGS:
		return "sd of TTFT - server prompt_ms (less its fitted growth with the prompt)";
	case CAL_SD_SPREAD_INTERCEPT:
		return "intercept of the same fit";
	case CAL_SD_RESIDUAL:
		break;
	}
	return "TTFT residual variance minus the step noise's share";
}

/* fit.noise from per-request records. */
static void noise_records(pv *p)
{
	const cal_noise *r = p->r->noise;
	const char *data = r->data == CAL_NOISE_GAPS
				   ? "ITL gaps / predicted step time at concurrency 1 (MLE)"
				   : "per-request TPOT / its level's mean at concurrency 1 (MLE); "
				     "step cv = TPOT cv * sqrt(N-1)";
	json_t *j = json_pack("{s:s,s:f,s:o,s:o,s:f,s:s,s:f,s:s}", "data", data, "step_cv", r->cv,
			      "chosen", sb_noisefit_to_json(&r->best), "other",
			      sb_noisefit_to_json(&r->other), "overhead_sd_ms", r->overhead_sd_ms,
			      "overhead_sd_how", sd_how_text(r->sd_how), "prefill_cv",
			      r->prefill_cv, "prefill_cv_how", pcv_from_text(r->prefill_cv_from));
	json_object_set_new(j, "itl_gaps", r->have_gaps ? sb_noisefit_to_json(&r->gaps)
							: json_null());
	json_object_set_new(p->fit, "noise", j);
}

/* fit.noise from level summaries. */
static void noise_summaries(pv *p)
{
	const cal_noise *r = p->r->noise;
	json_t *pts = json_array();
	for (size_t i = 0; i < r->n_points; i++) {
		const cal_spread_point *s = &r->points[i];
		const cal_level *L = &p->r->data->lvs[s->level];
		json_array_append_new(pts, json_pack("{s:s,s:f,s:f,s:f}", "file", base(p, L->file),
						     "prompt_tokens", L->P, "ttft_sd_ms",
						     s->ttft_sd_ms, "step_ms", s->step_ms));
	}
	json_object_set_new(
		p->fit, "noise",
		json_pack("{s:s,s:o,s:f,s:f,s:f,s:s}", "data",
			  "TTFT p99 - p50 at concurrency 1, as normal standard deviations for the "
			  "level's sample size (Blom scores)",
			  "points", pts, "step_cv", r->cv, "prefill_cv", r->prefill_cv,
			  "overhead_sd_ms", r->overhead_sd_ms, "kind_note",
			  "two quantiles cannot tell lognormal from gamma: lognormal assumed; no "
			  "goodness of fit without per-request records"));
	say(p->missing, "noise distribution: level summaries give only a spread; per-request "
			"records (ITL gaps) would allow a maximum-likelihood fit and a KS test");
	say(p->missing, "decode-step noise: level summaries show only TTFT spreads, so decode "
			"steps get the prefill steps' cv");
}

static void render_noise(pv *p)
{
	switch (p->r->noise->data) {
	case CAL_NOISE_TPOT:
	case CAL_NOISE_GAPS:
		noise_records(p);
		break;
	case CAL_NOISE_SUMMARIES:
		noise_summaries(p);
		break;
	case CAL_NOISE_NO_DATA:
		say(p->missing, "noise: no TTFT spread (p99 or per-request records) at concurrency "
				"1; the model is noise-free");
		break;
	}
}

static void render_admit(pv *p)
{
	const cal_admit *a = p->r->admit;
	if (!a->identified) {
		coef(p, "admit_delay_ms", 0, NAN, NAN, "ms", "not identified (set to 0)");
		say(p->missing, "admit_delay_ms: needs per-request records with queue waits (server "
				"timings) at a level above the slot count%s",
		    a->queued_levels ? "" : " (no such level in the inputs)");
		return;
	}
	json_object_set_new(
		p->fit, "admit_delay",
		json_pack("{s:I,s:I,s:f,s:f,s:f,s:s}", "n", (json_int_t)a->n, "agreeing",
			  (json_int_t)a->agreeing, "low_ms", a->lo_ms, "high_ms", a->hi_ms,
			  "value_ms", a->value_ms, "how",
			  "queued requests paired FIFO with the completions that freed "
			  "their slots: launch minus that completion bounds the delay "
			  "from above, the last step boundary before the launch from "
			  "below; the value is the middle of the range most brackets "
			  "share"));
	coef(p, "admit_delay_ms", a->value_ms, a->lo_ms, a->hi_ms, "ms",
	     "middle of the range most queued launches bracket (the interval is "
	     "that range, not a confidence interval)");
}

static void render_split(pv *p)
{
	const cal_split *s = p->r->split;
	static const char *const key[2] = { "split", "split_crowded" };
	static const char *const name[2] = { "split_prob", "split_prob_crowded" };
	static const char *const what[2] = {
		"share of requests sent together to an idle server that were prefilled in a "
		"later step (exact binomial interval)",
		"the same when more were sent together than there were slots (exact binomial "
		"interval)"
	};
	static const char *const borrowed[2] = {
		"no group within the slot count sent to an idle server: takes split_prob_crowded",
		"no group larger than the slot count sent to an idle server: takes split_prob"
	};
	for (int c = 0; c < 2; c++) {
		const cal_split_class *k = &s->cls[c];
		if (k->trials > 0)
			json_object_set_new(
				p->fit, key[c],
				json_pack("{s:I,s:I,s:f,s:f,s:f,s:s}", "trials",
					  (json_int_t)k->trials, "splits", (json_int_t)k->splits,
					  "value", k->value, "ci95_low", k->lo, "ci95_high", k->hi,
					  "how",
					  "requests sent within 1 ms to an idle server: each admitted "
					  "one after the first is a trial, split when its first token "
					  "came more than half of max(TTFT / m, its prompt's predicted "
					  "prefill alone) after the first one's (m sent together); "
					  "exact binomial interval"));
	}
	if (s->cls[0].trials + s->cls[1].trials == 0) {
		coef(p, "split_prob", 0, NAN, NAN, "", "not identified (set to 0)");
		say(p->missing, "split_prob: needs per-request records of a closed-loop level at "
				"concurrency 2 or more with requests sent together to an idle server");
		return;
	}
	for (int c = 0; c < 2; c++) {
		const cal_split_class *k = &s->cls[c];
		if (k->trials > 0)
			coef(p, name[c], k->value, k->lo, k->hi, "", what[c]);
		else
			coef(p, name[c], k->value, NAN, NAN, "", borrowed[c]);
	}
}

/* fit.release: the per-level client-cycle gaps and the release_ms[S]
 * coefficients (release.h). */
static void render_release(pv *p)
{
	const cal_release *r = p->r->release;
	const cal_data *d = p->r->data;
	if (r->n_dropped > 0)
		say(p->notes, "release_ms: %zu level(s) left out: their cycle (concurrency * output "
			      "tokens / output_tok_s) is more than 5%% shorter than their E2E, so their "
			      "output_tok_s is not the level's completion rate (a per-stream decode "
			      "rate?)", r->n_dropped);
	if (r->n_tab == 0) {
		say(p->missing, "release_ms (end-of-request cost): needs a closed-loop level at or "
				"below its slot count with its output throughput");
		return;
	}
	json_t *pts = json_array();
	for (size_t i = 0; i < r->n_pts; i++) {
		const cal_release_point *q = &r->pts[i];
		const cal_level *L = &d->lvs[q->lv];
		json_array_append_new(pts, json_pack("{s:s,s:f,s:i,s:f,s:f,s:f}", "file",
						     base(p, L->file), "concurrency", L->c, "slots",
						     q->slots, "cycle_ms", q->cycle_ms, "e2e_ms",
						     q->e2e_ms, "gap_ms", q->gap_ms));
	}
	json_object_set_new(p->fit, "release",
			    json_pack("{s:s,s:o}", "model",
				      "gap = concurrency * output tokens / output_tok_s - E2E per "
				      "closed-loop level at or below its slot count (with records: median "
				      "of the k-th send after the first c minus the k-th completion); "
				      "release_ms[S] = "
				      "mean gap of slot count S (0 if negative), Student t interval "
				      "over its levels",
				      "points", pts));
	for (int i = 0; i < r->n_tab; i++) {
		const cal_release_entry *t = &r->tab[i];
		char name[40];
		snprintf(name, sizeof name, "release_ms[%d]", t->slots);
		coef(p, name, t->value_ms, t->lo_ms, t->hi_ms, "ms",
		     t->n >= 2 ? "client cycle minus E2E, mean over the slot count's levels"
			       : "client cycle minus E2E at one level (no interval: one level)");
	}
}

/* The noise coefficients, last in the table. */
static void render_noise_coefs(pv *p)
{
	const cal_noise *n = p->r->noise;
	coef(p, "noise_cv", n->cv, n->cv_lo, n->cv_hi, "", sb_noise_name(n->kind));
	if (n->cv > 0.5)
		say(p->notes, "step noise cv %.3g is large: the server's timing was unstable during "
			      "the measurement (other load on the machine?); re-measure on a quiet "
			      "machine before trusting tail predictions", n->cv);
	coef(p, "prefill_cv", n->prefill_cv, n->prefill_cv_lo, n->prefill_cv_hi, "",
	     pcv_from_text(n->prefill_cv_from));
	coef(p, "overhead_sd_ms", n->overhead_sd_ms, NAN, NAN, "ms", "see fit.noise");
}

/* fit.support: the range of the closed-loop levels the fit read (mean
 * prompt and output tokens, the context at a request's end, concurrency),
 * so that a prediction can say how far beyond them it goes (sim/extrap.h). */
static json_t *support_json(const cal_data *d)
{
	double lo[4] = { INFINITY, INFINITY, INFINITY, INFINITY };
	double hi[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
	for (size_t l = 0; l < d->n_lv; l++) {
		const cal_level *v = &d->lvs[l];
		double x[4] = { v->P, v->N, v->P + v->N, v->c };
		for (int k = 0; k < 4; k++) {
			lo[k] = x[k] < lo[k] ? x[k] : lo[k];
			hi[k] = x[k] > hi[k] ? x[k] : hi[k];
		}
	}
	if (!d->n_lv)
		return json_null();
	return json_pack("{s:[f,f],s:[f,f],s:[f,f],s:[f,f],s:s}", "prompt_tokens", lo[0], hi[0],
			 "output_tokens", lo[1], hi[1], "context_tokens", lo[2], hi[2],
			 "concurrency", lo[3], hi[3], "from",
			 "the closed-loop levels the fit read: mean prompt and output tokens, "
			 "their sum (the context at a request's end), concurrency");
}

/* tool, inputs, data, support and batch_tokens. */
static void render_inputs(pv *p)
{
	const cal_data *d = p->r->data;
	json_t *inputs = json_array();
	size_t n_req = 0;
	for (size_t f = 0; f < d->n_in; f++) {
		size_t nl = 0, nr = 0;
		for (size_t l = 0; l < d->n_lv; l++)
			if (d->lvs[l].file == f) {
				nl++;
				nr += d->lvs[l].nrq;
			}
		n_req += nr;
		json_array_append_new(inputs, json_pack("{s:s,s:s,s:I,s:I}", "file", base(p, f),
							"source", d->in[f].res->source,
							"levels_used", (json_int_t)nl,
							"requests_used", (json_int_t)nr));
	}
	json_object_set_new(p->fit, "tool", json_string("servebench calibrate"));
	json_object_set_new(p->fit, "inputs", inputs);
	json_object_set_new(p->fit, "data", json_string(n_req ? "per-request records"
							      : "level summaries"));
	json_object_set_new(p->fit, "support", support_json(d));
	json_object_set_new(p->fit, "batch_tokens", json_integer(d->batch_tokens));
}

json_t *cal_provenance_render(const cal_results *r)
{
	pv p = { r, json_object(), json_object(), json_array(), json_array() };
	if (!p.fit || !p.coefs || !p.missing || !p.notes) {
		json_decref(p.fit);
		json_decref(p.coefs);
		json_decref(p.missing);
		json_decref(p.notes);
		return NULL;
	}
	render_collect(&p);
	render_decode1(&p);
	render_prefill(&p);
	render_cache(&p);
	render_slots(&p);
	render_decode(&p);
	render_groups(&p);
	render_pinned(&p);
	render_checks(&p);
	render_noise(&p);
	render_admit(&p);
	render_split(&p);
	render_release(&p);
	render_noise_coefs(&p);
	render_inputs(&p);
	json_object_set_new(p.fit, "coefficients", p.coefs);
	json_object_set_new(p.fit, "missing", p.missing);
	json_object_set_new(p.fit, "notes", p.notes);
	return p.fit;
}
