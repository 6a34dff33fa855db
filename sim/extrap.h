/* extrap.h — which decode passes of a simulated level lay beyond the
 * model's measured decode table (core/model.h: decode_ms is extrapolated
 * there by a fitted line), and the label sbsim prints and writes for it. */
#ifndef SB_EXTRAP_H
#define SB_EXTRAP_H

#include <stddef.h>

#include <jansson.h>

#include "core/model.h"
#include "sweep.h"

/* The pass sizes beyond the table over all replications of l: *lo..*hi, or
 * 0 and 0 when none was used. Returns 1 when some was, else 0. */
int sb_extrap_level(const sb_sweep_level *l, int *lo, int *hi);
/* "extrapolated: passes of 5-8 beyond the measured 1-4" into buf (one size:
 * "passes of 5"); "" when the level used none. */
void sb_extrap_label(char *buf, size_t len, const sb_sweep_level *l, const sb_model *m);
/* {"passes": [lo, hi], "measured": [first, last]}, or NULL when the level
 * used none (new reference). */
json_t *sb_extrap_json(const sb_sweep_level *l, const sb_model *m);

#endif
