/* whatif.c — what-if changes to a model (see whatif.h). */
#include "whatif.h"

#include <stdio.h>
#include <string.h>

_Static_assert(SB_KV_UNIFIED == 0 && SB_KV_PER_SLOT == 1,
	       "SB_WHATIF_KV_CHOICES lists the layouts in sb_kv_cache order");

void sb_whatif_init(sb_whatif *w)
{
	memset(w, 0, sizeof(*w));
	w->kv_cache = -1;
}

int sb_whatif_given(const sb_whatif *w)
{
	return sb_model_scale_given(&w->scale) || w->sim_slots > 0 || w->kv_cache >= 0;
}

void sb_whatif_apply(const sb_whatif *w, sb_model *m)
{
	sb_model_scale_apply(&w->scale, m);
	if (w->kv_cache >= 0)
		m->kv_cache = (sb_kv_cache)w->kv_cache;
}

json_t *sb_whatif_to_json(const sb_whatif *w)
{
	json_t *sc = sb_model_scale_to_json(&w->scale);
	if (!sc)
		return NULL;
	return json_pack("{s:o,s:o,s:o}", "scale", sc, "sim_slots",
			 w->sim_slots > 0 ? json_integer(w->sim_slots) : json_null(), "kv_cache",
			 w->kv_cache >= 0 ? json_string(sb_kv_cache_name((sb_kv_cache)w->kv_cache))
					  : json_null());
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
	if (w->sim_slots > 0 && o < len)
		o += (size_t)snprintf(buf + o, len - o, "%s%ld slot%s simulated", o ? "; " : "",
				      w->sim_slots, w->sim_slots == 1 ? "" : "s");
	if (w->kv_cache >= 0 && o < len)
		o += (size_t)snprintf(buf + o, len - o, "%sKV cache %s", o ? "; " : "",
				      sb_kv_cache_name((sb_kv_cache)w->kv_cache));
	if (o == 0)
		snprintf(buf, len, "nothing");
}
