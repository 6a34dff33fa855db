/* extrap.h — how far a prediction lies beyond what the model was measured
 * on: which decode passes of a simulated level lay beyond the model's
 * measured decode table (core/model.h: decode_ms is extrapolated there by a
 * fitted line), and how the workload's prompts and contexts compare with
 * the range the calibration read (the model's fit.support); the labels
 * sbsim prints and writes for both. */
#ifndef SB_EXTRAP_H
#define SB_EXTRAP_H

#include <stddef.h>

#include <jansson.h>

#include "core/model.h"
#include "core/workload.h"
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

/* The workload's mean prompt tokens and context at a request's end (mean
 * prompt + mean output) against the ranges in m's fit.support (written by
 * `servebench calibrate`): "beyond the data the model was fitted to:
 * prompts of 1536 tokens (measured 16-256, 6x the longest: the prefill
 * cost extrapolated), ..." into buf; "" when m has no support record or
 * the workload lies inside it. */
void sb_extrap_data_label(char *buf, size_t len, const sb_model *m, const sb_workload *w);
/* {"prompt_tokens": {"value": v, "measured": [lo, hi]}, "context_tokens":
 * {...}} for the quantities outside, or NULL when none is (or m has no
 * support record). */
json_t *sb_extrap_data_json(const sb_model *m, const sb_workload *w);

#endif
