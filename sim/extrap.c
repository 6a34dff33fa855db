/* extrap.c — decode passes beyond the measured table (see extrap.h). */
#include "extrap.h"

#include <stdio.h>

int sb_extrap_level(const sb_sweep_level *l, int *lo, int *hi)
{
	*lo = *hi = 0;
	for (int r = 0; r < l->n_reps; r++) {
		const sb_sim_level *x = &l->reps[r];
		if (x->extrap_lo <= 0)
			continue;
		if (!*lo || x->extrap_lo < *lo)
			*lo = x->extrap_lo;
		if (x->extrap_hi > *hi)
			*hi = x->extrap_hi;
	}
	return *lo > 0;
}

/* "5" or "5-8" */
static void range(char *buf, size_t len, int lo, int hi)
{
	if (lo == hi)
		snprintf(buf, len, "%d", lo);
	else
		snprintf(buf, len, "%d-%d", lo, hi);
}

void sb_extrap_label(char *buf, size_t len, const sb_sweep_level *l, const sb_model *m)
{
	int lo, hi;
	buf[0] = 0;
	if (!sb_extrap_level(l, &lo, &hi) || m->n_decode < 1)
		return;
	char used[32], meas[32];
	range(used, sizeof used, lo, hi);
	range(meas, sizeof meas, m->decode[0].batch, m->decode[m->n_decode - 1].batch);
	snprintf(buf, len, "extrapolated: passes of %s beyond the measured %s", used, meas);
}

json_t *sb_extrap_json(const sb_sweep_level *l, const sb_model *m)
{
	int lo, hi;
	if (!sb_extrap_level(l, &lo, &hi) || m->n_decode < 1)
		return NULL;
	return json_pack("{s:[i,i],s:[i,i]}", "passes", lo, hi, "measured", m->decode[0].batch,
			 m->decode[m->n_decode - 1].batch);
}
