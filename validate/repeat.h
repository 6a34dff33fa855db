/* repeat.h — repeatability of calibration: two models calibrated on the
 * same server (minutes apart) predicting the same measured requests.
 *
 * Both comparisons (compare.h) replay the same measured document with the
 * same seed and replications, so their predictions differ only by the
 * models. Per level and metric the difference is the signed percentage
 *     100 * (predicted_B - predicted_A) / predicted_A
 * (NaN unless predicted_A > 0 and both are finite) and the summaries are
 * median absolute differences over levels and the class's statistics,
 * exactly as compare.h's MdAPEs pool errors: TTFT, TPOT, E2E by mean/p50
 * and p90/p99, and the throughputs. Issue 12 asks that this
 * calibration-to-calibration difference stay within the difference between
 * two repeat measurements of the workload; validate measures no repeat
 * itself (`servebench run` of the same levels gives it), so this only
 * reports the model-vs-model figure beside the prediction errors.
 */
#ifndef SB_REPEAT_H
#define SB_REPEAT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "core/error.h"
#include "validate/compare.h"

/* One level: the second model's prediction and its difference from the
 * first's, indexed by sb_metric (NaN for metrics not compared). */
typedef struct sb_repeat_level {
	double level;
	sb_mode mode;
	double pred_b[SB_MET_N];   /* the second model's prediction */
	double err_b[SB_MET_N];    /* its error against the measurement, % */
	double diff_pct[SB_MET_N]; /* 100 * (pred_b - pred_a) / pred_a */
} sb_repeat_level;

typedef struct sb_repeatability {
	sb_repeat_level *levels;  /* owned, in the comparisons' level order */
	size_t n_levels;
	/* median |diff_pct| over levels: per [quantity][central|tail], then
	 * pooled over TTFT/TPOT/E2E and the throughputs */
	double diff_quant[SB_CMP_N_QUANT][2];
	double diff_central, diff_tail, diff_throughput;
	/* the second model's own median |error| (its comparison's MdAPEs) */
	double mdape_b_quant[SB_CMP_N_QUANT][2];
	double mdape_b_central, mdape_b_tail;
} sb_repeatability;

/* Fills *out (release with sb_repeatability_fini) from a and b, two
 * comparisons of the same measured document (a: the first model, b: the
 * second; both borrowed): the same number of levels with the same level
 * and mode in the same order. Returns 0, -EINVAL when they do not match
 * (e names the level), or -ENOMEM. O(levels * metrics). */
int sb_repeatability_compute(const sb_comparison *a, const sb_comparison *b,
			     sb_repeatability *out, sb_error *e);

void sb_repeatability_fini(sb_repeatability *r);

/* New JSON object: {"definition", "levels": [{"level", "mode", "metrics":
 * {KEY: {"predicted", "error_pct", "difference_pct"}}}], "summary":
 * {"ttft": {"central_pct", "tail_pct"}, "tpot": ..., "e2e": ...,
 * "central_pct", "tail_pct", "throughput_pct", "second_model_mdape":
 * {"ttft": {"central_pct", "tail_pct"}, ..., "central_pct", "tail_pct"}}}
 * (docs/formats.md). NULL on allocation failure. */
json_t *sb_repeatability_to_json(const sb_repeatability *r);

/* Writes the table to f: per quantity and class the median |B - A| / A
 * beside the first model's (a's) and the second's median |error|; `name`
 * (may be NULL) names the second model. Returns 0 or -EIO. */
int sb_repeatability_report(FILE *f, const sb_repeatability *r, const sb_comparison *a,
			    const char *name);

#endif
