/* model_scale.c — a model's times scaled by key (see model_scale.h). */
#include "model_scale.h"

#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

static const char *const key_names[SB_SCALE_N_KEYS] = {
	[SB_SCALE_ALL] = "all",
	[SB_SCALE_PROMPT] = "prompt",
	[SB_SCALE_PREFILL_TOKEN] = "prefill_token",
	[SB_SCALE_DECODE] = "decode",
	[SB_SCALE_DECODE_BATCHED] = "decode_batched",
};

#define KEY_LIST "all, prompt, prefill_token, decode or decode_batched"

void sb_model_scale_init(sb_model_scale *s)
{
	memset(s, 0, sizeof(*s));
}

int sb_model_scale_given(const sb_model_scale *s)
{
	for (int k = 0; k < SB_SCALE_N_KEYS; k++)
		if (s->f[k] > 0)
			return 1;
	return 0;
}

const char *sb_model_scale_key_name(sb_scale_key k)
{
	return k >= 0 && k < SB_SCALE_N_KEYS ? key_names[k] : "?";
}

/* The key called name, or -1. */
static int key_index(const char *name)
{
	for (int k = 0; k < SB_SCALE_N_KEYS; k++)
		if (!strcmp(key_names[k], name))
			return k;
	return -1;
}

/* One "KEY=F" item (NUL-terminated, in a scratch copy) into out. */
static int parse_item(char *item, void *ctx, const char *what, sb_error *e)
{
	sb_model_scale *out = ctx;
	char *eq = strchr(item, '=');
	if (!eq)
		return sb_error_set(e, "%s: '%s' is not KEY=F (KEY: " KEY_LIST ")", what, item);
	*eq = '\0';
	int k = key_index(item);
	if (k < 0)
		return sb_error_set(e, "%s: unknown key '%s' (expected " KEY_LIST ")", what, item);
	if (out->f[k] > 0)
		return sb_error_set(e, "%s: key '%s' given twice", what, item);
	char flag[96];
	snprintf(flag, sizeof(flag), "%s %s", what, item);
	double v;
	if (sb_parse_double(eq + 1, -DBL_MAX, DBL_MAX, &v, flag, e) < 0)
		return -EINVAL;
	if (!(v > 0))
		return sb_error_set(e, "%s: %s is not a positive factor", flag, eq + 1);
	out->f[k] = v;
	return 0;
}

int sb_model_scale_parse(const char *text, sb_model_scale *s, const char *what, sb_error *e)
{
	if (!text || !*text)
		return sb_error_set(e, "%s: empty value (expected KEY=F[,KEY=F...])", what);
	sb_model_scale got = *s;
	int r = sb_parse_items(text, parse_item, &got, what, e);
	if (r == 0)
		*s = got;
	return r;
}

int sb_model_scale_cli(const char *text, void *dest, const char *flag, sb_error *e)
{
	return sb_model_scale_parse(text, dest, flag, e);
}

static void scale_prefill_token(sb_model *m, double f)
{
	m->per_prefill_token_ms *= f;
	m->per_prefill_attn_ms *= f;
}

static void scale_prompt(sb_model *m, double f)
{
	m->overhead_ms *= f;
	m->overhead_sd_ms *= f;
	m->overhead_per_token_ms *= f;
	m->prefill_base_ms *= f;
	m->prefill_per_prompt_ms *= f;
	scale_prefill_token(m, f);
}

/* Passes of at least min_batch sequences (the table's own entries). */
static void scale_decode_table(sb_model *m, double f, int min_batch)
{
	for (int i = 0; i < m->n_decode; i++)
		if (m->decode[i].batch >= min_batch)
			m->decode[i].ms *= f;
}

static void scale_decode(sb_model *m, double f)
{
	scale_decode_table(m, f, 1);
	for (int i = 0; i < m->n_decode_kv; i++)
		m->decode_kv[i].ms *= f;
	m->per_kv_token_ms *= f;
}

void sb_model_scale_apply(const sb_model_scale *s, sb_model *m)
{
	const double *f = s->f;
	if (f[SB_SCALE_ALL] > 0) {
		scale_prompt(m, f[SB_SCALE_ALL]);
		scale_decode(m, f[SB_SCALE_ALL]);
	}
	if (f[SB_SCALE_PROMPT] > 0)
		scale_prompt(m, f[SB_SCALE_PROMPT]);
	if (f[SB_SCALE_PREFILL_TOKEN] > 0)
		scale_prefill_token(m, f[SB_SCALE_PREFILL_TOKEN]);
	if (f[SB_SCALE_DECODE] > 0)
		scale_decode(m, f[SB_SCALE_DECODE]);
	if (f[SB_SCALE_DECODE_BATCHED] > 0)
		scale_decode_table(m, f[SB_SCALE_DECODE_BATCHED], 2);
}

json_t *sb_model_scale_to_json(const sb_model_scale *s)
{
	json_t *j = json_object();
	/* json_real, not sb_json_number: an infinite factor fails the whole
	 * write (NULL) rather than reading back as an absent key. */
	for (int k = 0; j && k < SB_SCALE_N_KEYS; k++)
		if (s->f[k] > 0 && json_object_set_new(j, key_names[k], json_real(s->f[k])) < 0) {
			json_decref(j);
			return NULL;
		}
	return j;
}

void sb_model_scale_format(const sb_model_scale *s, char *buf, size_t len)
{
	size_t o = 0;
	if (len == 0)
		return;
	buf[0] = '\0';
	for (int k = 0; k < SB_SCALE_N_KEYS && o < len; k++) {
		if (!(s->f[k] > 0))
			continue;
		int n = snprintf(buf + o, len - o, "%s%s=%g", o ? "," : "", key_names[k], s->f[k]);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}
