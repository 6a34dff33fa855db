/* model.c — the engine model file (schema "servebench.model/1"). */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"

#define SCHEMA "servebench.model/1"

extern const char sb_default_model_json[];

void sb_model_init(sb_model *m)
{
	memset(m, 0, sizeof(*m));
	m->slots = 1;
	m->max_queue = -1;
	m->batch_tokens = 2048;
	m->block_size = 16;
	m->decode[0] = (sb_decode_point){ 1, 5.0 };
	m->n_decode = 1;
}

void sb_model_fini(sb_model *m)
{
	if (!m)
		return;
	json_decref(m->fit);
	m->fit = NULL;
}

void sb_model_copy(sb_model *dst, const sb_model *src)
{
	*dst = *src;
	if (dst->fit)
		json_incref(dst->fit);
}

const char *sb_noise_name(sb_noise_kind k)
{
	switch (k) {
	case SB_NOISE_LOGNORMAL:
		return "lognormal";
	case SB_NOISE_GAMMA:
		return "gamma";
	case SB_NOISE_NONE:
		break;
	}
	return "none";
}

static int cmp_point(const void *a, const void *b)
{
	const sb_decode_point *x = a, *y = b;
	return (x->batch > y->batch) - (x->batch < y->batch);
}

/* Reads a table of positive numbers keyed by batch size ("1": 4.9, ...)
 * into pts (ascending); *n = 0 when key is absent. */
static int table_from_json_at(const json_t *step, const char *where, const char *key,
			      int allow_zero, sb_decode_point *pts, int *n, sb_error *e)
{
	const json_t *tab = json_object_get(step, key);
	*n = 0;
	if (!tab || json_is_null(tab))
		return 0;
	if (!json_is_object(tab) || json_object_size(tab) == 0)
		return sb_error_set(e, "%s.%s: expected an object like "
				       "{\"1\": 4.9, \"4\": 9.4}", where, key);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)tab, k, v)
	{
		char *end = NULL;
		long b = strtol(k, &end, 10);
		if (end == k || *end || b < 1 || b > 100000)
			return sb_error_set(e, "%s.%s: key \"%s\" is not a "
					       "count >= 1", where, key, k);
		double x = json_is_number(v) ? json_number_value(v) : NAN;
		if (!isfinite(x) || x < 0 || (x == 0 && !allow_zero))
			return sb_error_set(e, "%s.%s.%s: expected a %s number of ms", where, key,
					    k, allow_zero ? "non-negative" : "positive");
		if (*n >= SB_MODEL_MAX_DECODE)
			return sb_error_set(e, "%s.%s: more than %d points", where, key,
					    SB_MODEL_MAX_DECODE);
		pts[(*n)++] = (sb_decode_point){ (int)b, x };
	}
	qsort(pts, (size_t)*n, sizeof(pts[0]), cmp_point);
	return 0;
}

static int table_from_json(const json_t *step, const char *key, int allow_zero,
			   sb_decode_point *pts, int *n, sb_error *e)
{
	return table_from_json_at(step, "model.step_ms", key, allow_zero, pts, n, e);
}

/* scheduler.release_ms: one number (every slot count) or a table keyed by
 * slot count. */
static int release_from_json(const json_t *sched, sb_model *m, sb_error *e)
{
	const json_t *v = json_object_get(sched, "release_ms");
	m->n_release = 0;
	if (!v || json_is_object(v))
		return table_from_json_at(sched, "model.scheduler", "release_ms", 1, m->release,
					  &m->n_release, e);
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	if (!isfinite(x) || x < 0 || x > 1e7)
		return sb_error_set(e, "model.scheduler.release_ms: expected a non-negative number "
				       "of ms or an object keyed by slot count like {\"4\": 35}");
	m->release[0] = (sb_decode_point){ 1, x };
	m->n_release = 1;
	return 0;
}

static int decode_from_json(const json_t *step, sb_model *m, sb_error *e)
{
	if (table_from_json(step, "decode_kv", 1, m->decode_kv, &m->n_decode_kv, e) < 0)
		return -EINVAL;
	if (table_from_json(step, "decode_ms", 0, m->decode, &m->n_decode, e) < 0)
		return -EINVAL;
	if (m->n_decode > 0)
		return 0;
	double base = NAN, per_seq = NAN;
	if (sb_json_get_double(step, "base", 0, 1e9, &base, "model.step_ms", e) < 0 ||
	    sb_json_get_double(step, "per_seq", 0, 1e9, &per_seq, "model.step_ms", e) < 0)
		return -EINVAL;
	if (isnan(base) || isnan(per_seq))
		return sb_error_set(e, "model.step_ms: needs \"decode_ms\" (per batch size) or "
				       "both \"base\" and \"per_seq\"");
	if (!(base + per_seq > 0))
		return sb_error_set(e, "model.step_ms: base + per_seq must be > 0");
	m->decode[0] = (sb_decode_point){ 1, base + per_seq };
	m->decode[1] = (sb_decode_point){ 2, base + 2 * per_seq };
	m->n_decode = 2;
	return 0;
}

/* Reads the context keys of the "server" object (ctx_per_slot,
 * kv_bytes_per_token, context_overflow) into m. Returns 0 or -EINVAL. */
static int context_from_json(const json_t *server, sb_model *m, sb_error *e)
{
	const char *ov = NULL;
	if (sb_json_get_long(server, "ctx_per_slot", 0, 1L << 40, &m->ctx_per_slot,
			     "model.server", e) < 0 ||
	    sb_json_get_double(server, "kv_bytes_per_token", 0, 1e12, &m->kv_bytes_per_token,
			       "model.server", e) < 0 ||
	    sb_json_get_string(server, "context_overflow", &ov, "model.server", e) < 0)
		return -EINVAL;
	if (ov && sb_ctx_overflow_parse(ov, &m->context_overflow, "model.server.context_overflow",
					e) < 0)
		return -EINVAL;
	return 0;
}

/* Reads the engine keys of the "server" object (engine, block_size,
 * gpu_blocks, prompt_cache) into m. Returns 0 or -EINVAL. */
static int engine_from_json(const json_t *server, sb_model *m, sb_error *e)
{
	const char *en = NULL;
	if (sb_json_get_string(server, "engine", &en, "model.server", e) < 0 ||
	    sb_json_get_long(server, "block_size", 1, 1L << 20, &m->block_size, "model.server",
			     e) < 0 ||
	    sb_json_get_long(server, "gpu_blocks", 0, 1L << 40, &m->gpu_blocks, "model.server",
			     e) < 0)
		return -EINVAL;
	if (en && !strcmp(en, "vllm"))
		m->engine = SB_ENGINE_VLLM;
	else if (en && strcmp(en, "llama.cpp"))
		return sb_error_set(e, "model.server.engine: \"%s\" is neither \"llama.cpp\" "
				       "nor \"vllm\"", en);
	const char *pc = NULL;
	if (sb_json_get_string(server, "prompt_cache", &pc, "model.server", e) < 0)
		return -EINVAL;
	if (pc && !strcmp(pc, "slot"))
		m->prompt_cache = SB_PCACHE_SLOT;
	else if (pc && !strcmp(pc, "shared"))
		m->prompt_cache = SB_PCACHE_SHARED;
	else if (pc && !strcmp(pc, "ram"))
		m->prompt_cache = SB_PCACHE_RAM;
	else if (pc && strcmp(pc, "none"))
		return sb_error_set(e, "model.server.prompt_cache: \"%s\" is none of \"none\", "
				       "\"slot\", \"shared\" and \"ram\"", pc);
	return 0;
}

/* Reads the optional "server" object of model j (slots, max_queue,
 * batch_tokens, kv_cache) into m. Returns 0 or -EINVAL (e set). */
static int server_from_json(const json_t *j, sb_model *m, sb_error *e)
{
	static const char *const server_keys[] = { "slots", "max_queue", "batch_tokens",
						   "kv_cache", "ctx_per_slot", "kv_bytes_per_token",
						   "context_overflow", "engine", "block_size",
						   "gpu_blocks", "prompt_cache", NULL };
	const json_t *server = json_object_get(j, "server");
	if (!server)
		return 0;
	long slots = m->slots;
	if (!json_is_object(server))
		return sb_error_set(e, "model.server: expected an object");
	if (sb_json_check_keys(server, server_keys, "model.server", e) < 0 ||
	    sb_json_get_long(server, "slots", 1, 100000, &slots, "model.server", e) < 0 ||
	    sb_json_get_long(server, "max_queue", -1, 1000000000L, &m->max_queue,
			     "model.server", e) < 0 ||
	    sb_json_get_long(server, "batch_tokens", -1, 100000000L, &m->batch_tokens,
			     "model.server", e) < 0)
		return -EINVAL;
	m->slots = (int)slots;
	const char *kv = NULL;
	if (sb_json_get_string(server, "kv_cache", &kv, "model.server", e) < 0)
		return -EINVAL;
	if (kv && !strcmp(kv, "per-slot"))
		m->kv_cache = SB_KV_PER_SLOT;
	else if (kv && strcmp(kv, "unified"))
		return sb_error_set(e, "model.server.kv_cache: \"%s\" is neither \"unified\" "
				       "nor \"per-slot\"", kv);
	if (engine_from_json(server, m, e) < 0)
		return -EINVAL;
	return context_from_json(server, m, e);
}

/* Reads the per-request overhead keys of model j (overhead_ms,
 * overhead_sd_ms, overhead_per_prompt_token_ms) into m. Returns 0 or -EINVAL
 * (e set). */
static int overhead_from_json(const json_t *j, sb_model *m, sb_error *e)
{
	if (sb_json_get_double(j, "overhead_ms", 0, 1e7, &m->overhead_ms, "model", e) < 0 ||
	    sb_json_get_double(j, "overhead_sd_ms", 0, 1e7, &m->overhead_sd_ms, "model", e) < 0 ||
	    sb_json_get_double(j, "overhead_per_prompt_token_ms", 0, 1e4,
			       &m->overhead_per_token_ms, "model", e) < 0)
		return -EINVAL;
	return 0;
}

/* Reads the required "step_ms" object of model j (the decode table or line,
 * the KV and prefill coefficients) into m. Returns 0 or -EINVAL (e set). */
static int step_from_json(const json_t *j, sb_model *m, sb_error *e)
{
	static const char *const step_keys[] = { "decode_ms", "decode_kv", "base",
						 "per_seq",	     "per_kv_token",
						 "per_prefill_token", "per_prefill_attn",
						 "prefill_base",     "prefill_per_prompt",
						 "per_cached_token", "per_restored_token", NULL };
	const json_t *step = json_object_get(j, "step_ms");
	if (!json_is_object(step))
		return sb_error_set(e, "model: missing \"step_ms\" object (the step-time coefficients)");
	if (sb_json_check_keys(step, step_keys, "model.step_ms", e) < 0 ||
	    decode_from_json(step, m, e) < 0)
		return -EINVAL;
	const char *w = "model.step_ms";
	if (sb_json_get_double(step, "per_kv_token", 0, 1e6, &m->per_kv_token_ms, w, e) < 0 ||
	    sb_json_get_double(step, "per_prefill_token", 0, 1e6, &m->per_prefill_token_ms, w, e) < 0 ||
	    sb_json_get_double(step, "per_prefill_attn", 0, 1e6, &m->per_prefill_attn_ms, w, e) < 0 ||
	    sb_json_get_double(step, "prefill_base", 0, 1e7, &m->prefill_base_ms, w, e) < 0 ||
	    sb_json_get_double(step, "prefill_per_prompt", 0, 1e7, &m->prefill_per_prompt_ms, w,
			       e) < 0 ||
	    sb_json_get_double(step, "per_cached_token", 0, 1e6, &m->per_cached_token_ms, w, e) < 0)
		return -EINVAL;
	m->per_restored_token_ms = m->per_cached_token_ms; /* unless given */
	if (sb_json_get_double(step, "per_restored_token", 0, 1e6, &m->per_restored_token_ms, w,
			       e) < 0)
		return -EINVAL;
	return 0;
}

/* Reads the optional "scheduler" object of model j (admit_delay_ms,
 * split_prob, split_prob_crowded: split_prob unless given,
 * release_ms, release_holds_queue) into m. Returns 0
 * or -EINVAL (e set). */
static int scheduler_from_json(const json_t *j, sb_model *m, sb_error *e)
{
	static const char *const sched_keys[] = { "admit_delay_ms", "split_prob",
						  "split_prob_crowded", "release_ms",
						  "release_holds_queue", NULL };
	const json_t *sched = json_object_get(j, "scheduler");
	if (sched) {
		if (!json_is_object(sched))
			return sb_error_set(e, "model.scheduler: expected an object");
		if (sb_json_check_keys(sched, sched_keys, "model.scheduler", e) < 0 ||
		    release_from_json(sched, m, e) < 0 ||
		    sb_json_get_double(sched, "admit_delay_ms", 0, 1e7, &m->admit_delay_ms,
				       "model.scheduler", e) < 0 ||
		    (json_object_get(sched, "split_prob") &&
		     sb_json_get_double(sched, "split_prob", 0, 1, &m->split_prob, "model.scheduler",
					e) < 0))
			return -EINVAL;
	}
	const json_t *hold = json_object_get(sched, "release_holds_queue");
	if (hold && !json_is_boolean(hold))
		return sb_error_set(e, "model.scheduler.release_holds_queue: expected true or false");
	m->release_holds_queue = hold && json_is_true(hold);
	m->split_prob_crowded = m->split_prob;
	if (json_object_get(sched, "split_prob_crowded") &&
	    sb_json_get_double(sched, "split_prob_crowded", 0, 1, &m->split_prob_crowded,
			       "model.scheduler", e) < 0)
		return -EINVAL;
	return 0;
}

/* Reads the optional "noise" object of model j (kind, cv, prefill_cv: cv
 * unless given) into m. Returns 0 or -EINVAL (e set). */
static int noise_from_json(const json_t *j, sb_model *m, sb_error *e)
{
	static const char *const noise_keys[] = { "kind", "cv", "prefill_cv", "gof", NULL };
	const json_t *noise = json_object_get(j, "noise");
	const char *kind = "none";
	if (!noise)
		return 0;
	if (!json_is_object(noise))
		return sb_error_set(e, "model.noise: expected an object");
	if (sb_json_check_keys(noise, noise_keys, "model.noise", e) < 0 ||
	    sb_json_get_string(noise, "kind", &kind, "model.noise", e) < 0 ||
	    sb_json_get_double(noise, "cv", 0, 10, &m->noise_cv, "model.noise", e) < 0)
		return -EINVAL;
	m->noise_prefill_cv = m->noise_cv; /* unless given */
	if (json_object_get(noise, "prefill_cv") &&
	    sb_json_get_double(noise, "prefill_cv", 0, 10, &m->noise_prefill_cv, "model.noise",
			       e) < 0)
		return -EINVAL;
	if (!strcmp(kind, "none"))
		m->noise_kind = SB_NOISE_NONE;
	else if (!strcmp(kind, "lognormal"))
		m->noise_kind = SB_NOISE_LOGNORMAL;
	else if (!strcmp(kind, "gamma"))
		m->noise_kind = SB_NOISE_GAMMA;
	else
		return sb_error_set(e, "model.noise.kind: '%s' is not none, lognormal or gamma",
				    kind);
	return 0;
}

int sb_model_from_json(const json_t *j, sb_model *m, sb_error *e)
{
	static const char *const top_keys[] = { "schema",      "name",	    "server",
						"overhead_ms", "overhead_sd_ms", "step_ms",
						"scheduler",   "noise",	    "fit",
						"description", "overhead_per_prompt_token_ms",
						NULL };
	sb_model_init(m);
	if (!json_is_object(j))
		return sb_error_set(e, "model: expected a JSON object");
	const char *schema = NULL;
	if (sb_json_get_string(j, "schema", &schema, "model", e) != 1)
		return sb_error_set(e, "model: missing \"schema\" (expected \"%s\")", SCHEMA);
	if (strcmp(schema, SCHEMA))
		return sb_error_set(e, "model: schema \"%s\" is not \"%s\"", schema, SCHEMA);
	if (sb_json_check_keys(j, top_keys, "model", e) < 0)
		return -EINVAL;
	const char *name = NULL;
	if (sb_json_get_string(j, "name", &name, "model", e) < 0)
		return -EINVAL;
	snprintf(m->name, sizeof(m->name), "%s", name ? name : "");
	if (server_from_json(j, m, e) < 0 || overhead_from_json(j, m, e) < 0 ||
	    step_from_json(j, m, e) < 0 || scheduler_from_json(j, m, e) < 0 ||
	    noise_from_json(j, m, e) < 0)
		return -EINVAL;
	const json_t *fit = json_object_get(j, "fit");
	if (fit && !json_is_null(fit))
		m->fit = json_deep_copy(fit);
	return sb_model_validate(m, e);
}

int sb_model_load(const char *path, sb_model *m, sb_error *e)
{
	json_t *j = sb_json_load_file(path, e);
	if (!j) {
		sb_model_init(m);
		return -EINVAL;
	}
	int r = sb_model_from_json(j, m, e);
	json_decref(j);
	if (r < 0) {
		sb_error_prefix(e, "%s", path);
		sb_model_fini(m);
	}
	return r;
}

/* The context keys into the "server" object (only those set, so that
 * models without them read as before). */
static void context_to_json(const sb_model *m, json_t *server)
{
	if (m->ctx_per_slot > 0)
		json_object_set_new(server, "ctx_per_slot", json_integer(m->ctx_per_slot));
	if (m->kv_bytes_per_token > 0)
		json_object_set_new(server, "kv_bytes_per_token", sb_json_number(m->kv_bytes_per_token));
	if (m->ctx_per_slot > 0 || m->context_overflow != SB_CTX_REJECT)
		json_object_set_new(server, "context_overflow",
				    json_string(sb_ctx_overflow_name(m->context_overflow)));
}

/* A table as {"BATCH": ms, ...} (table_from_json reads it back). */
static json_t *table_to_json(const sb_decode_point *d, int n)
{
	json_t *t = json_object();
	for (int i = 0; i < n; i++) {
		char k[16];
		snprintf(k, sizeof(k), "%d", d[i].batch);
		json_object_set_new(t, k, sb_json_number(d[i].ms));
	}
	return t;
}

json_t *sb_model_to_json(const sb_model *m)
{
	json_t *dec = table_to_json(m->decode, m->n_decode);
	json_t *j = json_pack(
		"{s:s,s:s,s:{s:i,s:I,s:I},s:f,s:f,s:{s:o,s:f,s:f,s:f,s:f},s:{s:f},s:{s:s,s:f,s:f}}",
		"schema", SCHEMA, "name", m->name, "server", "slots", m->slots, "max_queue",
		(json_int_t)m->max_queue, "batch_tokens", (json_int_t)m->batch_tokens,
		"overhead_ms", m->overhead_ms, "overhead_sd_ms", m->overhead_sd_ms, "step_ms",
		"decode_ms", dec, "per_kv_token", m->per_kv_token_ms, "per_prefill_token",
		m->per_prefill_token_ms, "per_prefill_attn", m->per_prefill_attn_ms,
		"prefill_base", m->prefill_base_ms, "scheduler", "admit_delay_ms",
		m->admit_delay_ms, "noise", "kind", sb_noise_name(m->noise_kind), "cv",
		m->noise_cv, "prefill_cv", m->noise_prefill_cv);
	if (j && m->n_decode_kv > 0)
		json_object_set_new(json_object_get(j, "step_ms"), "decode_kv",
				    table_to_json(m->decode_kv, m->n_decode_kv));
	if (j && m->prefill_per_prompt_ms > 0) {
		json_object_set_new(json_object_get(j, "step_ms"), "prefill_per_prompt",
				    sb_json_number(m->prefill_per_prompt_ms));
	}
	if (j && m->kv_cache != SB_KV_UNIFIED)
		json_object_set_new(json_object_get(j, "server"), "kv_cache",
				    json_string(sb_kv_cache_name(m->kv_cache)));
	if (j && m->prompt_cache != SB_PCACHE_NONE) {
		json_object_set_new(json_object_get(j, "server"), "prompt_cache",
				    json_string(sb_prompt_cache_name(m->prompt_cache)));
		json_object_set_new(json_object_get(j, "step_ms"), "per_cached_token",
				    sb_json_number(m->per_cached_token_ms));
		if (m->prompt_cache == SB_PCACHE_RAM)
			json_object_set_new(json_object_get(j, "step_ms"), "per_restored_token",
					    sb_json_number(m->per_restored_token_ms));
	}
	if (j)
		context_to_json(m, json_object_get(j, "server"));
	if (j && m->engine == SB_ENGINE_VLLM) {
		json_t *server = json_object_get(j, "server");
		json_object_set_new(server, "engine", json_string(sb_engine_name(m->engine)));
		json_object_set_new(server, "block_size", json_integer(m->block_size));
		json_object_set_new(server, "gpu_blocks", json_integer(m->gpu_blocks));
	}
	if (j && m->overhead_per_token_ms > 0)
		json_object_set_new(j, "overhead_per_prompt_token_ms",
				    sb_json_number(m->overhead_per_token_ms));
	if (j && m->split_prob > 0)
		json_object_set_new(json_object_get(j, "scheduler"), "split_prob",
				    sb_json_number(m->split_prob));
	if (j && m->split_prob_crowded != m->split_prob)
		json_object_set_new(json_object_get(j, "scheduler"), "split_prob_crowded",
				    sb_json_number(m->split_prob_crowded));
	if (j && m->release_holds_queue)
		json_object_set_new(json_object_get(j, "scheduler"), "release_holds_queue",
				    json_true());
	if (j && m->n_release > 0)
		json_object_set_new(json_object_get(j, "scheduler"), "release_ms",
				    table_to_json(m->release, m->n_release));
	if (j && m->fit)
		json_object_set(j, "fit", m->fit);
	return j;
}

const char *sb_model_default_text(void)
{
	return sb_default_model_json;
}

int sb_model_default(sb_model *m, sb_error *e)
{
	json_t *j = sb_json_load_string(sb_default_model_json, "<embedded default model>", e);
	if (!j) {
		sb_model_init(m);
		return -EINVAL;
	}
	int r = sb_model_from_json(j, m, e);
	json_decref(j);
	return r;
}

/* The line decode_ms(B) = a + b * B that extrapolates the table past its
 * last point: least squares through the points from B = 2 on when the table
 * has 3 or more points (B = 1 often runs a different kernel), through all of
 * them otherwise (two points: the line through both). Slope clamped at 0. */
static void decode_line(const sb_decode_point *d, int n, double *a, double *b)
{
	int i0 = 0;
	if (n >= 3)
		while (i0 < n - 2 && d[i0].batch < 2)
			i0++;
	double k = (double)(n - i0), sx = 0, sy = 0;
	for (int i = i0; i < n; i++) {
		sx += d[i].batch;
		sy += d[i].ms;
	}
	double mx = sx / k, my = sy / k, sxx = 0, sxy = 0;
	for (int i = i0; i < n; i++) {
		sxx += (d[i].batch - mx) * (d[i].batch - mx);
		sxy += (d[i].batch - mx) * (d[i].ms - my);
	}
	*b = sxx > 0 && sxy > 0 ? sxy / sxx : 0;
	*a = my - *b * mx;
}

/* Table d[0..n) (batches ascending) at x > d[0].batch: into *v the line
 * between the first point at or past x and the one before it; 0 when x
 * lies past the last point. */
static int table_within(const sb_decode_point *d, int n, int x, double *v)
{
	for (int i = 1; i < n; i++) {
		if (x <= d[i].batch) {
			double f = (double)(x - d[i - 1].batch) /
				   (double)(d[i].batch - d[i - 1].batch);
			*v = d[i - 1].ms + f * (d[i].ms - d[i - 1].ms);
			return 1;
		}
	}
	return 0;
}

/* Table d[0..n) (n >= 1) at x: linear between its points, its first value
 * below them and its last above. */
static double table_at(const sb_decode_point *d, int n, int x)
{
	double v;
	if (x <= d[0].batch)
		return d[0].ms;
	return table_within(d, n, x, &v) ? v : d[n - 1].ms;
}

/* Table d[0..n) at x inside it (d[0].batch < x <= d[n - 1].batch) with the
 * form error form (model.h, form_interp): between two points a fraction
 * phi of their gap, phi = f + form * 4 f (1 - f) held within [0, 1]. */
static double decode_between(const sb_decode_point *d, int n, int x, double form)
{
	int i = 1;
	while (i < n - 1 && x > d[i].batch)
		i++;
	double f = (double)(x - d[i - 1].batch) / (double)(d[i].batch - d[i - 1].batch);
	double phi = f + form * 4 * f * (1 - f);
	phi = phi < 0 ? 0 : phi > 1 ? 1 : phi;
	return d[i - 1].ms + phi * (d[i].ms - d[i - 1].ms);
}

double sb_model_decode_ms(const sb_model *m, int batch)
{
	const sb_decode_point *d = m->decode;
	int n = m->n_decode;
	if (batch < 1 || n < 1)
		return 0.0;
	if (batch <= d[0].batch)
		return d[0].ms * (double)batch / (double)d[0].batch;
	double v;
	if (table_within(d, n, batch, &v))
		return m->form_interp == 0 ? v : decode_between(d, n, batch, m->form_interp);
	if (n == 1)
		return d[0].ms;
	double a, b;
	decode_line(d, n, &a, &b);
	double x = a + b * (double)batch;
	if (!(b > 0) || !(x > d[n - 1].ms))
		x = d[n - 1].ms; /* a flat or falling tail: the last value */
	if (m->form_decode == 0)
		return x;
	double u = (double)(batch - d[n - 1].batch) / (double)(d[n - 1].batch - d[n - 2].batch);
	double y = x * (1 + m->form_decode * u * (u + 1) / 2);
	/* held from below by physics alone: a pass of more sequences is never
	 * quicker than the last measured one; no hold above (sbsim's central
	 * figures come from the model as it is, not from the draws' mean) */
	return y > d[n - 1].ms ? y : d[n - 1].ms;
}

double sb_model_release_ms(const sb_model *m, int slots)
{
	const sb_decode_point *d = m->release;
	int n = m->n_release;
	return n < 1 ? 0.0 : table_at(d, n, slots);
}

int sb_model_decode_last(const sb_model *m)
{
	return m->n_decode > 0 ? m->decode[m->n_decode - 1].batch : 0;
}

double sb_model_decode_kv(const sb_model *m, int batch)
{
	const sb_decode_point *d = m->decode_kv;
	int n = m->n_decode_kv;
	return n < 1 ? m->per_kv_token_ms : table_at(d, n, batch);
}

int sb_model_validate(const sb_model *m, sb_error *e)
{
	if (m->slots < 1)
		return sb_error_set(e, "model: slots must be >= 1 (got %d)", m->slots);
	if (m->n_decode < 1)
		return sb_error_set(e, "model: no decode step times");
	for (int i = 0; i < m->n_decode; i++) {
		if (!(m->decode[i].ms > 0) || !isfinite(m->decode[i].ms))
			return sb_error_set(e, "model: decode_ms(%d) must be a positive number",
					    m->decode[i].batch);
		if (i && m->decode[i].batch <= m->decode[i - 1].batch)
			return sb_error_set(e, "model: decode_ms batch sizes must be distinct");
	}
	const double c[] = { m->overhead_ms,	      m->overhead_sd_ms,     m->overhead_per_token_ms,
			     m->per_kv_token_ms,
			     m->per_prefill_token_ms, m->per_prefill_attn_ms, m->prefill_base_ms,
			     m->prefill_per_prompt_ms, m->per_cached_token_ms, m->per_restored_token_ms,
			     m->admit_delay_ms,	      m->noise_cv,	     m->noise_prefill_cv };
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (!isfinite(c[i]) || c[i] < 0)
			return sb_error_set(e, "model: coefficients must be finite and >= 0");
	}
	if (m->engine == SB_ENGINE_VLLM && m->kv_cache != SB_KV_UNIFIED)
		return sb_error_set(e, "model: a vllm engine's kv_cache is \"unified\"");
	if (m->block_size < 1 || m->gpu_blocks < 0)
		return sb_error_set(e, "model: server.block_size must be >= 1 and gpu_blocks >= 0");
	if (m->ctx_per_slot < 0)
		return sb_error_set(e, "model: server.ctx_per_slot must be >= 0 (got %ld)",
				    m->ctx_per_slot);
	if (!isfinite(m->kv_bytes_per_token) || m->kv_bytes_per_token < 0)
		return sb_error_set(e, "model: server.kv_bytes_per_token must be >= 0 (got %g)",
				    m->kv_bytes_per_token);
	if (!(m->split_prob >= 0 && m->split_prob <= 1))
		return sb_error_set(e, "model: scheduler.split_prob must be a probability in [0, 1]");
	if (!(m->split_prob_crowded >= 0 && m->split_prob_crowded <= 1))
		return sb_error_set(e, "model: scheduler.split_prob_crowded must be a probability "
				       "in [0, 1]");
	return 0;
}

double sb_model_step_base_ms(const sb_model *m)
{
	if (m->engine != SB_ENGINE_VLLM)
		return m->prefill_base_ms;
	if (m->n_decode < 2)
		return m->decode[0].ms;
	const sb_decode_point *a = &m->decode[0], *b = &m->decode[1];
	double base = a->ms - (b->ms - a->ms) / (b->batch - a->batch) * a->batch;
	return base > 0 ? base : 0;
}

const char *sb_engine_name(sb_engine k)
{
	return k == SB_ENGINE_VLLM ? "vllm" : "llama.cpp";
}

const char *sb_prompt_cache_name(sb_prompt_cache k)
{
	return k == SB_PCACHE_SLOT ? "slot" : k == SB_PCACHE_SHARED ? "shared"
	       : k == SB_PCACHE_RAM ? "ram" : "none";
}

const char *sb_kv_cache_name(sb_kv_cache k)
{
	return k == SB_KV_PER_SLOT ? "per-slot" : "unified";
}

const char *sb_ctx_overflow_name(sb_ctx_overflow o)
{
	return o == SB_CTX_TRUNCATE ? "truncate" : "reject";
}

int sb_ctx_overflow_parse(const char *s, sb_ctx_overflow *o, const char *what, sb_error *e)
{
	if (!strcmp(s, "reject"))
		*o = SB_CTX_REJECT;
	else if (!strcmp(s, "truncate"))
		*o = SB_CTX_TRUNCATE;
	else
		return sb_error_set(e, "%s: \"%s\" is neither \"reject\" (llama.cpp) nor "
				       "\"truncate\" (Ollama)", what, s);
	return 0;
}
