/* whatif.c — what-if changes to a model (see whatif.h). */
#include "whatif.h"

#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "jsonfile.h"
#include "parse.h"

_Static_assert(SB_KV_UNIFIED == 0 && SB_KV_PER_SLOT == 1,
	       "SB_WHATIF_KV_CHOICES lists the layouts in sb_kv_cache order");
_Static_assert(SB_PCACHE_NONE == 0 && SB_PCACHE_SLOT == 1 && SB_PCACHE_SHARED == 2 &&
		       SB_PCACHE_RAM == 3,
	       "SB_WHATIF_PCACHE_CHOICES lists the kinds in sb_prompt_cache order");

void sb_whatif_init(sb_whatif *w)
{
	memset(w, 0, sizeof(*w));
	w->kv_cache = -1;
	w->prompt_cache = -1;
}

int sb_whatif_given(const sb_whatif *w)
{
	return sb_model_scale_given(&w->scale) || w->n_set > 0 || w->sim_slots > 0 ||
	       w->kv_cache >= 0 || w->prompt_cache >= 0;
}

/* One "NAME=V" item into the sb_whatif at ctx. */
static int set_item(char *item, void *ctx, const char *what, sb_error *e)
{
	sb_whatif *w = ctx;
	char *eq = strchr(item, '=');
	if (!eq || eq == item)
		return sb_error_set(e, "%s: '%s' is not NAME=V (a coefficient's name, "
				       "docs/formats.md fit.covariance)", what, item);
	*eq = '\0';
	if (strlen(item) >= SB_MODEL_PARAM_NAME_MAX)
		return sb_error_set(e, "%s: '%s' is too long for a coefficient's name", what, item);
	for (int i = 0; i < w->n_set; i++)
		if (!strcmp(w->set[i].name, item))
			return sb_error_set(e, "%s: '%s' given twice", what, item);
	if (w->n_set >= SB_WHATIF_MAX_SETS)
		return sb_error_set(e, "%s: at most %d coefficients", what, SB_WHATIF_MAX_SETS);
	char flag[96];
	snprintf(flag, sizeof(flag), "%s %s", what, item);
	sb_whatif_set *s = &w->set[w->n_set];
	if (sb_parse_double(eq + 1, -DBL_MAX, DBL_MAX, &s->value, flag, e) < 0)
		return -EINVAL;
	snprintf(s->name, sizeof(s->name), "%s", item);
	w->n_set++;
	return 0;
}

int sb_whatif_set_cli(const char *text, void *dest, const char *flag, sb_error *e)
{
	sb_whatif got = *(sb_whatif *)dest;
	got.n_set = 0; /* a later --set replaces an earlier one */
	int r = sb_parse_items(text, set_item, &got, flag, e);
	if (r == 0)
		*(sb_whatif *)dest = got;
	return r;
}

int sb_whatif_apply(const sb_whatif *w, sb_model *m, sb_error *e)
{
	sb_model_scale_apply(&w->scale, m);
	for (int i = 0; i < w->n_set; i++) {
		const sb_whatif_set *s = &w->set[i];
		if (sb_model_param_set(m, s->name, s->value, e) < 0) {
			sb_error_prefix(e, "--set");
			return -EINVAL;
		}
		if (s->value < sb_model_param_floor(s->name))
			return sb_error_set(e, "--set %s=%g: below its least valid value %g",
					    s->name, s->value, sb_model_param_floor(s->name));
	}
	if (w->kv_cache >= 0)
		m->kv_cache = (sb_kv_cache)w->kv_cache;
	if (w->prompt_cache >= 0)
		m->prompt_cache = (sb_prompt_cache)w->prompt_cache;
	return 0;
}

json_t *sb_whatif_to_json(const sb_whatif *w)
{
	json_t *sc = sb_model_scale_to_json(&w->scale), *set = json_object();
	for (int i = 0; sc && set && i < w->n_set; i++)
		json_object_set_new(set, w->set[i].name, sb_json_number(w->set[i].value));
	if (!sc || !set) {
		json_decref(sc);
		json_decref(set);
		return NULL;
	}
	json_t *j = json_pack("{s:o,s:o,s:o,s:o}", "scale", sc, "set", set, "sim_slots",
			      w->sim_slots > 0 ? json_integer(w->sim_slots) : json_null(),
			      "kv_cache",
			      w->kv_cache >= 0
				      ? json_string(sb_kv_cache_name((sb_kv_cache)w->kv_cache))
				      : json_null());
	if (j && w->prompt_cache >= 0)
		json_object_set_new(
			j, "prompt_cache",
			json_string(sb_prompt_cache_name((sb_prompt_cache)w->prompt_cache)));
	return j;
}

void sb_whatif_describe(const sb_whatif *w, char *buf, size_t len)
{
	char sc[256];
	size_t o = 0;
	if (len == 0)
		return;
	buf[0] = '\0';
	sb_model_scale_format(&w->scale, sc, sizeof(sc));
	if (sc[0])
		o += (size_t)snprintf(buf + o, len - o, "times scaled %s", sc);
	for (int i = 0; i < w->n_set && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s%s=%g", o == 0 ? "" : i ? "," : "; ",
				      i ? "" : "set ", w->set[i].name, w->set[i].value);
	if (w->sim_slots > 0 && o < len)
		o += (size_t)snprintf(buf + o, len - o, "%s%ld slot%s simulated", o ? "; " : "",
				      w->sim_slots, w->sim_slots == 1 ? "" : "s");
	if (w->kv_cache >= 0 && o < len)
		o += (size_t)snprintf(buf + o, len - o, "%sKV cache %s", o ? "; " : "",
				      sb_kv_cache_name((sb_kv_cache)w->kv_cache));
	if (w->prompt_cache >= 0 && o < len)
		o += (size_t)snprintf(buf + o, len - o, "%sprompt cache %s", o ? "; " : "",
				      sb_prompt_cache_name((sb_prompt_cache)w->prompt_cache));
	if (o == 0)
		snprintf(buf, len, "nothing");
}
