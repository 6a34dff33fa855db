/* calibrate.c — the engine model from results files (see calibrate.h): runs
 * the steps in their order (data → checks → decode1 → prefill → groups →
 * slotcount → decode → pinned → noise → admit → split), has provenance.c
 * render the fit object and builds the model from the coefficients. */
#include "calibrate/calibrate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "calibrate/covariance.h"
#include "calibrate/provenance.h"
#include "calibrate/release.h"

void sb_calib_opts_init(sb_calib_opts *o)
{
	memset(o, 0, sizeof(*o));
}

/* Every step's results of one calibration (each owns what its fini frees). */
typedef struct cal_run {
	cal_data data;
	cal_engine engine;
	cal_decode1 decode1;
	cal_checks checks;
	cal_prefill prefill;
	cal_groups groups;
	cal_slots slots;
	cal_decode decode;
	cal_pinned pinned;
	cal_cache cache;
	cal_noise noise;
	cal_admit admit;
	cal_split split;
	cal_release release;
} cal_run;

static void run_fini(cal_run *k)
{
	cal_data_fini(&k->data);
	cal_decode1_fini(&k->decode1);
	cal_prefill_fini(&k->prefill);
	cal_groups_fini(&k->groups);
	cal_slots_fini(&k->slots);
	cal_decode_fini(&k->decode);
	cal_pinned_fini(&k->pinned);
	cal_noise_fini(&k->noise);
	cal_release_fini(&k->release);
}

/* The steps in order, each reading what the earlier ones found. Returns 0
 * or the first step's -errno (message in e). */
static int run_steps(cal_run *k, const sb_calib_input *in, size_t n, const sb_calib_opts *o,
		     sb_error *e)
{
	int r = cal_collect(&k->data, in, n, o, e);
	if (r < 0)
		return r;
	k->engine.batch_tokens = k->data.batch_tokens;
	if (cal_checks_prompts(&k->data, &k->checks) < 0)
		return sb_error_code(e, -ENOMEM, "out of memory");
	if ((r = cal_decode1_fit(&k->data, &k->engine, &k->decode1, e)) < 0 ||
	    (r = cal_prefill_fit(&k->data, &k->engine, &k->prefill, e)) < 0 ||
	    (r = cal_groups_fit(&k->data, &k->engine, &k->groups, &k->checks, e)) < 0 ||
	    (r = cal_slots_resolve(&k->data, &k->engine, o, &k->slots, e)) < 0 ||
	    (r = cal_decode_fit(&k->data, &k->engine, &k->slots, &k->decode, e)) < 0 ||
	    (r = cal_pinned_fit(&k->data, &k->engine, &k->pinned, e)) < 0 ||
	    (r = cal_noise_fit(&k->data, &k->engine, k->prefill.timings, &k->noise, e)) < 0 ||
	    (r = cal_admit_fit(&k->data, &k->engine, &k->slots, k->noise.overhead_sd_ms,
			       &k->admit)) < 0)
		return r;
	cal_cache_fit(&k->data, &k->engine, &k->prefill, k->slots.slots, &k->cache);
	r = cal_split_fit(&k->data, &k->engine, k->slots.slots, &k->split);
	if (r == 0)
		r = cal_release_fit(&k->data, &k->slots, &k->release);
	if (r < 0)
		sb_error_code(e, r, "out of memory");
	return r;
}

/* With pinned measurements: the decode and decode_kv tables are theirs
 * (decode_ms(1) and its context cost from concurrency 1), and the layout
 * their stride-2 pair showed. */
static void pinned_tables(const cal_pinned *p, const cal_engine *g, sb_model *out)
{
	out->decode[0] = (sb_decode_point){ 1, g->decode_1_ms };
	out->decode_kv[0] = (sb_decode_point){ 1, g->kv_ms_per_token };
	for (int i = 0; i < p->n_tab && i + 1 < SB_MODEL_MAX_DECODE; i++) {
		out->decode[i + 1] = (sb_decode_point){ p->tab[i].batch, p->tab[i].ms };
		out->decode_kv[i + 1] = (sb_decode_point){ p->tab[i].batch, p->tab[i].kv };
	}
	out->n_decode = out->n_decode_kv = p->n_tab + 1 < SB_MODEL_MAX_DECODE
						   ? p->n_tab + 1
						   : SB_MODEL_MAX_DECODE;
	if (p->has_layout)
		out->kv_cache = p->layout;
}

/* The slot's context and KV bytes per token: the options, else the n
 * inputs' targets (the smallest context reported; the first bytes/token);
 * how the server treats a prompt past it from the target's context_overflow
 * or server kind. */
static void context_from_targets(const sb_calib_input *in, size_t n, const sb_calib_opts *o,
				 sb_model *out)
{
	for (size_t f = 0; f < n; f++) {
		const sb_target_info *t = &in[f].res->target;
		if (t->ctx_per_slot > 0 &&
		    (out->ctx_per_slot == 0 || t->ctx_per_slot < out->ctx_per_slot))
			out->ctx_per_slot = t->ctx_per_slot;
		if (t->kv_bytes_per_token > 0 && out->kv_bytes_per_token == 0)
			out->kv_bytes_per_token = t->kv_bytes_per_token;
		if ((t->context_overflow && !strcmp(t->context_overflow, "truncate")) ||
		    (!t->context_overflow && t->server && !strcmp(t->server, "ollama")))
			out->context_overflow = SB_CTX_TRUNCATE;
	}
	if (o->ctx_per_slot > 0)
		out->ctx_per_slot = o->ctx_per_slot;
	if (o->kv_bytes_per_token > 0)
		out->kv_bytes_per_token = o->kv_bytes_per_token;
}

/* The model from the steps' results into *out (initialised); its fit
 * object (stolen) is fit. */
static void build_model(const cal_run *k, const sb_calib_input *in, const sb_calib_opts *o,
			json_t *fit, sb_model *out)
{
	const cal_engine *g = &k->engine;
	const char *mname = o->name ? o->name : in[0].res->target.model;
	snprintf(out->name, sizeof(out->name), "%s%s", mname ? mname : "calibrated",
		 o->name ? "" : " (calibrated)");
	out->slots = k->slots.slots;
	out->max_queue = -1;
	out->batch_tokens = k->data.batch_tokens;
	out->overhead_ms = g->overhead_ms;
	out->overhead_per_token_ms = g->overhead_ms_per_token;
	out->overhead_sd_ms = k->noise.overhead_sd_ms;
	memcpy(out->decode, k->decode.table, sizeof(k->decode.table));
	out->n_decode = k->decode.n_table;
	if (k->pinned.n_tab > 0)
		pinned_tables(&k->pinned, g, out);
	out->per_kv_token_ms = g->kv_ms_per_token;
	out->per_prefill_token_ms = g->prefill_ms_per_token;
	out->per_prefill_attn_ms = g->prefill_attn_ms;
	out->prefill_base_ms = g->prefill_base_ms;
	out->prefill_per_prompt_ms = g->prefill_per_prompt_ms;
	out->prompt_cache = k->cache.kind;
	if (k->cache.kind != SB_PCACHE_NONE && !k->cache.clamped)
		out->per_cached_token_ms = k->cache.per_token.value;
	out->per_restored_token_ms = out->per_cached_token_ms;
	if (isfinite(k->cache.per_restored.value))
		out->per_restored_token_ms =
			k->cache.restored_clamped ? 0 : k->cache.per_restored.value;
	out->admit_delay_ms = k->admit.value_ms;
	out->split_prob = k->split.cls[0].value;
	out->split_prob_crowded = k->split.cls[1].value;
	out->n_release = k->release.n_tab;
	for (int i = 0; i < k->release.n_tab; i++)
		out->release[i] = (sb_decode_point){ k->release.tab[i].slots,
						     k->release.tab[i].value_ms };
	out->noise_kind = k->noise.kind;
	out->noise_cv = k->noise.kind == SB_NOISE_NONE ? 0 : k->noise.cv;
	out->noise_prefill_cv = k->noise.kind == SB_NOISE_NONE ? 0 : k->noise.prefill_cv;
	out->fit = fit;
	context_from_targets(in, k->data.n_in, o, out);
}

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
	cal_run k;
	memset(&k, 0, sizeof(k));
	/* GSL's default handler, which aborts the process, is off while the
	 * steps run: here its functions report errors by return value */
	gsl_error_handler_t *old_handler = gsl_set_error_handler_off();
	int r = run_steps(&k, in, n, o, e);
	gsl_set_error_handler(old_handler);
	if (r == 0) {
		cal_results res = { &k.data,   &k.engine, &k.decode1, &k.prefill,
				    &k.slots,  &k.decode, &k.pinned,  &k.noise,
				    &k.admit,  &k.split,  &k.release, &k.groups,
				    &k.checks, &k.cache };
		json_t *fit = cal_provenance_render(&res);
		if (!fit)
			r = sb_error_code(e, -ENOMEM, "out of memory");
		else
			build_model(&k, in, o, fit, out);
		json_t *cov = r == 0 ? cal_covariance_render(&res, out) : NULL;
		if (r == 0 && (!cov || json_object_set_new(fit, "covariance", cov) < 0))
			r = sb_error_code(e, -ENOMEM, "out of memory");
		json_t *form = r == 0 ? cal_form_render(out) : NULL;
		if (r == 0 && (!form || json_object_set_new(fit, "form", form) < 0))
			r = sb_error_code(e, -ENOMEM, "out of memory");
		if (r == 0 && json_is_array(json_object_get(fit, "missing")))
			cal_form_missing(out, json_object_get(fit, "missing"));
	}
	if (r == 0) {
		r = sb_model_validate(out, e);
		if (r < 0) {
			sb_error_prefix(e, "the fitted model is not valid");
			sb_model_fini(out);
			sb_model_init(out);
		}
	}
	run_fini(&k);
	return r;
}
