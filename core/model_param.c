/* model_param.c — a model coefficient by name (see model_param.h). */
#include "model_param.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* The entry at batch b of a table pts[0..n), or NULL. */
static double *table_entry(sb_decode_point *pts, int n, long b)
{
	for (int i = 0; i < n; i++)
		if (pts[i].batch == b)
			return &pts[i].ms;
	return NULL;
}

/* "PREFIX[B]" with a whole B >= 1: B, else -1. */
static long table_batch(const char *name, const char *prefix)
{
	size_t k = strlen(prefix);
	if (strncmp(name, prefix, k) || name[k] != '[')
		return -1;
	char *end = NULL;
	long b = strtol(name + k + 1, &end, 10);
	if (end == name + k + 1 || strcmp(end, "]") || b < 1)
		return -1;
	return b;
}

/* Where the coefficient `name` lives in m, or NULL. */
static double *param_slot(sb_model *m, const char *name)
{
	static const struct {
		const char *name;
		size_t off;
	} scalars[] = {
		{ "per_kv_token", offsetof(sb_model, per_kv_token_ms) },
		{ "per_prefill_token", offsetof(sb_model, per_prefill_token_ms) },
		{ "per_prefill_attn", offsetof(sb_model, per_prefill_attn_ms) },
		{ "prefill_base", offsetof(sb_model, prefill_base_ms) },
		{ "overhead_ms", offsetof(sb_model, overhead_ms) },
		{ "overhead_per_prompt_token", offsetof(sb_model, overhead_per_token_ms) },
		{ "per_cached_token", offsetof(sb_model, per_cached_token_ms) },
		{ "per_restored_token", offsetof(sb_model, per_restored_token_ms) },
		{ "admit_delay_ms", offsetof(sb_model, admit_delay_ms) },
		{ "form_decode", offsetof(sb_model, form_decode) },
		{ "form_interp", offsetof(sb_model, form_interp) },
		{ "noise_cv", offsetof(sb_model, noise_cv) },
		{ "noise_prefill_cv", offsetof(sb_model, noise_prefill_cv) },
	};
	for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
		if (!strcmp(name, scalars[i].name))
			return (double *)((char *)m + scalars[i].off);
	long b = table_batch(name, "decode_ms");
	if (b > 0)
		return table_entry(m->decode, m->n_decode, b);
	b = table_batch(name, "decode_kv");
	if (b > 0)
		return table_entry(m->decode_kv, m->n_decode_kv, b);
	return NULL;
}

/* A vllm engine's decode line (core/model.h): its table {1: base +
 * per_seq, 2: base + 2 per_seq}. 1 when m has one. */
static int decode_line(const sb_model *m)
{
	return m->engine == SB_ENGINE_VLLM && m->n_decode == 2 && m->decode[0].batch == 1 &&
	       m->decode[1].batch == 2;
}

/* "base" or "per_seq" of m's decode line into *v. 1 when `name` is one
 * of them and m has the line. */
static int line_get(const sb_model *m, const char *name, double *v)
{
	if (!decode_line(m) || (strcmp(name, "base") && strcmp(name, "per_seq")))
		return 0;
	double slope = m->decode[1].ms - m->decode[0].ms;
	*v = !strcmp(name, "per_seq") ? slope : m->decode[0].ms - slope;
	return 1;
}

static int line_set(sb_model *m, const char *name, double v)
{
	double base, per_seq;
	if (!line_get(m, "base", &base) || !line_get(m, "per_seq", &per_seq) ||
	    (strcmp(name, "base") && strcmp(name, "per_seq")))
		return 0;
	if (!strcmp(name, "base"))
		base = v;
	else
		per_seq = v;
	m->decode[0].ms = base + per_seq;
	m->decode[1].ms = base + 2 * per_seq;
	return 1;
}

static int unknown(const char *name, sb_error *e)
{
	return sb_error_set(e, "parameter \"%s\" is not a coefficient of the model (expected "
			       "decode_ms[B] or decode_kv[B] for a batch B of its tables, "
			       "per_kv_token, per_prefill_token, per_prefill_attn, prefill_base, "
			       "overhead_ms, overhead_per_prompt_token, per_cached_token, per_restored_token, "
			       "admit_delay_ms, form_decode, form_interp, noise_cv, noise_prefill_cv, "
			       "or base and per_seq of a vllm engine's decode line)",
			    name);
}

int sb_model_param_get(const sb_model *m, const char *name, double *v, sb_error *e)
{
	/* param_slot only reads through the pointer here */
	if (line_get(m, name, v))
		return 0;
	const double *p = param_slot((sb_model *)m, name);
	if (!p)
		return unknown(name, e);
	*v = *p;
	return 0;
}

int sb_model_param_set(sb_model *m, const char *name, double v, sb_error *e)
{
	if (line_set(m, name, v))
		return 0;
	double *p = param_slot(m, name);
	if (!p)
		return unknown(name, e);
	*p = v;
	return 0;
}

double sb_model_param_floor(const char *name)
{
	if (!strcmp(name, "form_decode") || !strcmp(name, "form_interp"))
		return -INFINITY; /* a relative error: either sign (model.h) */
	return table_batch(name, "decode_ms") > 0 || !strcmp(name, "base")
		       ? SB_MODEL_PARAM_DECODE_FLOOR_MS
		       : 0.0;
}
