/* metric.h — the per-level figures servebench reports, predicts and
 * compares: one enum and one table of names for the simulator's sweeps
 * (confidence intervals, scenario expectations) and the comparison of
 * measured with predicted results.
 */
#ifndef SB_METRIC_H
#define SB_METRIC_H

#include "level.h"

/* Per-level figures. The order is the order of every table and JSON object
 * written from it. */
typedef enum sb_metric {
	SB_MET_TTFT_MEAN = 0, SB_MET_TTFT_P50, SB_MET_TTFT_P90, SB_MET_TTFT_P99,
	SB_MET_TPOT_MEAN, SB_MET_TPOT_P50, SB_MET_TPOT_P90, SB_MET_TPOT_P99,
	SB_MET_ITL_P50, SB_MET_ITL_P99,
	SB_MET_E2E_MEAN, SB_MET_E2E_P50, SB_MET_E2E_P90, SB_MET_E2E_P99,
	SB_MET_WAIT_MEAN, SB_MET_WAIT_P50, SB_MET_WAIT_P99,
	SB_MET_OUT_TOK_S, SB_MET_REQ_S, SB_MET_GOODPUT, SB_MET_UTIL,
	SB_MET_L_LAW, SB_MET_L_OBS, SB_MET_TTFT_PCT, SB_MET_TPOT_PCT,
	SB_MET_REJECTED,
	SB_MET_N
} sb_metric;

/* What a metric measures. TTFT, TPOT and E2E come first: they are the
 * quantities the accuracy goals judge. SB_QTY_NONE: a rate or a count. */
typedef enum sb_quantity {
	SB_QTY_TTFT = 0, SB_QTY_TPOT, SB_QTY_E2E, SB_QTY_ITL, SB_QTY_WAIT, SB_QTY_NONE
} sb_quantity;

/* Which statistic of its quantity's distribution; SB_STAT_NONE for a
 * figure that is no statistic of a distribution (rates, counts). */
typedef enum sb_stat {
	SB_STAT_MEAN = 0, SB_STAT_P50, SB_STAT_P90, SB_STAT_P99, SB_STAT_NONE
} sb_stat;

/* The name: the results-schema path, "ttft_ms.p99", "output_tok_s" (as in
 * sbsim's JSON and scenario files). Static string; "?" when out of range. */
const char *sb_metric_name(sb_metric k);
/* The compact key of the comparison documents (servebench.comparison/1):
 * "ttft_p99", "output_tok_s". Static string; "?" when out of range. */
const char *sb_metric_key(sb_metric k);
/* Returns 0 and sets *k, or -EINVAL when s is no metric's name. */
int sb_metric_parse(const char *s, sb_metric *k);
sb_quantity sb_metric_quantity(sb_metric k);
sb_stat sb_metric_stat(sb_metric k);

/* The metric's value in a level summary; NaN for the figures a summary
 * does not hold (utilization, SLO percentiles, rejections: the simulator's
 * own, see sim/sweep.h). */
double sb_metric_get(const sb_level *lv, sb_metric k);
/* Writes v where sb_metric_get reads k; no-op for the figures it lacks. */
void sb_metric_set(sb_level *lv, sb_metric k, double v);

#endif
