/* slotprobe.c — see slotprobe.h. */
#include "slotprobe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/slotctx.h"

/* An integer >= 1 from a JSON number; -1 otherwise. */
static long positive(const json_t *v)
{
	double d = json_is_number(v) ? json_number_value(v) : -1;
	return d >= 1 && d <= 1e15 ? (long)d : -1;
}

long sb_slotprobe_llama_ctx(const json_t *props, const json_t *slots)
{
	long best = -1;
	size_t i;
	const json_t *s;
	json_array_foreach((json_t *)slots, i, s)
	{
		long n = positive(json_object_get(s, "n_ctx"));
		if (n > 0 && (best < 0 || n < best))
			best = n;
	}
	if (best > 0)
		return best;
	return positive(json_object_get(json_object_get(props, "default_generation_settings"),
					"n_ctx"));
}

/* Whether an /api/ps entry names model (with or without a ":tag"). */
static int same_model(const json_t *m, const char *model)
{
	const char *keys[] = { "name", "model" };
	size_t n = strlen(model);
	for (int k = 0; k < 2; k++) {
		const char *v = json_string_value(json_object_get(m, keys[k]));
		if (v && (!strcmp(v, model) || (!strncmp(v, model, n) && !strcmp(v + n, ":latest"))))
			return 1;
	}
	return 0;
}

long sb_slotprobe_ollama_ctx(const json_t *ps, const char *model)
{
	const json_t *models = json_object_get(ps, "models");
	size_t i;
	const json_t *m;
	json_array_foreach((json_t *)models, i, m)
	{
		if (!model || same_model(m, model))
			return positive(json_object_get(m, "context_length"));
	}
	return -1;
}

/* model_info["<arch>.<key>"] as a positive integer, else -1. */
static long arch_key(const json_t *info, const char *arch, const char *key)
{
	char k[160];
	snprintf(k, sizeof k, "%s.%s", arch, key);
	return positive(json_object_get(info, k));
}

double sb_slotprobe_ollama_kv_bytes(const json_t *show)
{
	const json_t *info = json_object_get(show, "model_info");
	const char *arch = json_string_value(json_object_get(info, "general.architecture"));
	if (!arch)
		return 0;
	long layers = arch_key(info, arch, "block_count");
	long heads = arch_key(info, arch, "attention.head_count");
	long kv_heads = arch_key(info, arch, "attention.head_count_kv");
	long embd = arch_key(info, arch, "embedding_length");
	long hk = arch_key(info, arch, "attention.key_length");
	long hv = arch_key(info, arch, "attention.value_length");
	if (kv_heads < 0)
		kv_heads = heads; /* no grouped-query attention */
	if (hk < 0 && embd > 0 && heads > 0)
		hk = embd / heads;
	if (hv < 0)
		hv = hk;
	/* K and V rows may differ in width: 2 x L x H x width x 1 byte is one
	 * of them at 2 bytes per element (f16) */
	return sb_slotctx_kv_bytes(layers, kv_heads, hk, 1.0) +
	       sb_slotctx_kv_bytes(layers, kv_heads, hv, 1.0);
}

/* GET (body NULL) or POST url; the reply parsed when HTTP 200, else NULL. */
static json_t *get_json(const sb_probe_opts *o, const char *root, const char *path,
			const char *body)
{
	char url[2048];
	snprintf(url, sizeof url, "%s%s", root, path);
	long st = 0;
	char *text = NULL;
	sb_error e;
	json_t *j = NULL;
	if (sb_probe_http(o, url, body, &st, &text, &e) == 0 && st == 200 && text)
		j = json_loads(text, 0, NULL);
	free(text);
	return j;
}

/* Ollama's /api/show for model: its KV bytes per token. */
static double ollama_kv_bytes(const sb_probe_opts *o, const char *root, const char *model)
{
	json_t *req = json_pack("{s:s}", "model", model);
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!body)
		return 0;
	json_t *show = get_json(o, root, "/api/show", body);
	free(body);
	double b = sb_slotprobe_ollama_kv_bytes(show);
	json_decref(show);
	return b;
}

void sb_slotprobe_read(const sb_probe_opts *o, const char *root, const char *kind,
		       const char *model, sb_slot_context *out)
{
	out->ctx_per_slot = -1;
	out->kv_bytes_per_token = 0;
	out->overflow = NULL;
	if (!strcmp(kind, "llama.cpp")) {
		json_t *props = get_json(o, root, "/props", NULL);
		json_t *slots = get_json(o, root, "/slots", NULL);
		out->ctx_per_slot = sb_slotprobe_llama_ctx(props, slots);
		out->overflow = "reject";
		json_decref(props);
		json_decref(slots);
	} else if (!strcmp(kind, "ollama")) {
		json_t *ps = get_json(o, root, "/api/ps", NULL);
		out->ctx_per_slot = sb_slotprobe_ollama_ctx(ps, model);
		json_decref(ps);
		if (model)
			out->kv_bytes_per_token = ollama_kv_bytes(o, root, model);
		out->overflow = "truncate";
	}
}
