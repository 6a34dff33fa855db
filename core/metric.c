/* metric.c — the per-level figures and their names (metric.h). */
#include "metric.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#define NOFIELD ((size_t)-1)

/* One row per metric: its name, its compact key, what it measures, and
 * where a level summary holds it (a summary object and its statistic, or a
 * plain double; NOFIELD for the simulator's own). */
static const struct {
	const char *name, *key;
	sb_quantity q;
	sb_stat stat;
	size_t off;
} table[SB_MET_N] = {
#define SUM(K, N, KEY, Q, S, F) [K] = { N, KEY, Q, S, offsetof(sb_level, F) }
#define ONE(K, N, F) [K] = { N, N, SB_QTY_NONE, SB_STAT_NONE, offsetof(sb_level, F) }
#define SIM(K, N) [K] = { N, N, SB_QTY_NONE, SB_STAT_NONE, NOFIELD }
	SUM(SB_MET_TTFT_MEAN, "ttft_ms.mean", "ttft_mean", SB_QTY_TTFT, SB_STAT_MEAN, ttft_ms),
	SUM(SB_MET_TTFT_P50, "ttft_ms.p50", "ttft_p50", SB_QTY_TTFT, SB_STAT_P50, ttft_ms),
	SUM(SB_MET_TTFT_P90, "ttft_ms.p90", "ttft_p90", SB_QTY_TTFT, SB_STAT_P90, ttft_ms),
	SUM(SB_MET_TTFT_P99, "ttft_ms.p99", "ttft_p99", SB_QTY_TTFT, SB_STAT_P99, ttft_ms),
	SUM(SB_MET_TPOT_MEAN, "tpot_ms.mean", "tpot_mean", SB_QTY_TPOT, SB_STAT_MEAN, tpot_ms),
	SUM(SB_MET_TPOT_P50, "tpot_ms.p50", "tpot_p50", SB_QTY_TPOT, SB_STAT_P50, tpot_ms),
	SUM(SB_MET_TPOT_P90, "tpot_ms.p90", "tpot_p90", SB_QTY_TPOT, SB_STAT_P90, tpot_ms),
	SUM(SB_MET_TPOT_P99, "tpot_ms.p99", "tpot_p99", SB_QTY_TPOT, SB_STAT_P99, tpot_ms),
	SUM(SB_MET_ITL_P50, "itl_ms.p50", "itl_p50", SB_QTY_ITL, SB_STAT_P50, itl_ms),
	SUM(SB_MET_ITL_P99, "itl_ms.p99", "itl_p99", SB_QTY_ITL, SB_STAT_P99, itl_ms),
	SUM(SB_MET_E2E_MEAN, "e2e_ms.mean", "e2e_mean", SB_QTY_E2E, SB_STAT_MEAN, e2e_ms),
	SUM(SB_MET_E2E_P50, "e2e_ms.p50", "e2e_p50", SB_QTY_E2E, SB_STAT_P50, e2e_ms),
	SUM(SB_MET_E2E_P90, "e2e_ms.p90", "e2e_p90", SB_QTY_E2E, SB_STAT_P90, e2e_ms),
	SUM(SB_MET_E2E_P99, "e2e_ms.p99", "e2e_p99", SB_QTY_E2E, SB_STAT_P99, e2e_ms),
	SUM(SB_MET_WAIT_MEAN, "wait_ms.mean", "wait_mean", SB_QTY_WAIT, SB_STAT_MEAN, wait_ms),
	SUM(SB_MET_WAIT_P50, "wait_ms.p50", "wait_p50", SB_QTY_WAIT, SB_STAT_P50, wait_ms),
	SUM(SB_MET_WAIT_P99, "wait_ms.p99", "wait_p99", SB_QTY_WAIT, SB_STAT_P99, wait_ms),
	ONE(SB_MET_OUT_TOK_S, "output_tok_s", output_tok_s),
	ONE(SB_MET_REQ_S, "req_s", req_s),
	ONE(SB_MET_GOODPUT, "goodput_req_s", goodput_req_s),
	SIM(SB_MET_UTIL, "utilization"),
	ONE(SB_MET_L_LAW, "l_law", l_law),
	ONE(SB_MET_L_OBS, "l_observed", l_observed),
	SIM(SB_MET_TTFT_PCT, "ttft_ms.slo_pct"),
	SIM(SB_MET_TPOT_PCT, "tpot_ms.slo_pct"),
	SIM(SB_MET_REJECTED, "rejected"),
#undef SUM
#undef ONE
#undef SIM
};

static int valid(sb_metric k)
{
	return (int)k >= 0 && k < SB_MET_N;
}

const char *sb_metric_name(sb_metric k)
{
	return valid(k) ? table[k].name : "?";
}

const char *sb_metric_key(sb_metric k)
{
	return valid(k) ? table[k].key : "?";
}

int sb_metric_parse(const char *s, sb_metric *k)
{
	for (int i = 0; i < SB_MET_N; i++)
		if (!strcmp(s, table[i].name)) {
			*k = (sb_metric)i;
			return 0;
		}
	return -EINVAL;
}

sb_quantity sb_metric_quantity(sb_metric k)
{
	return valid(k) ? table[k].q : SB_QTY_NONE;
}

sb_stat sb_metric_stat(sb_metric k)
{
	return valid(k) ? table[k].stat : SB_STAT_NONE;
}

/* Where k lives in lv: the double itself, NULL when lv has no such field. */
static double *field(sb_level *lv, sb_metric k)
{
	if (!valid(k) || table[k].off == NOFIELD)
		return NULL;
	char *p = (char *)lv + table[k].off;
	if (table[k].stat == SB_STAT_NONE)
		return (double *)p;
	sb_summary *s = (sb_summary *)p;
	switch (table[k].stat) {
	case SB_STAT_MEAN: return &s->mean;
	case SB_STAT_P50: return &s->p50;
	case SB_STAT_P90: return &s->p90;
	case SB_STAT_P99: return &s->p99;
	case SB_STAT_NONE: break;
	}
	return NULL;
}

double sb_metric_get(const sb_level *lv, sb_metric k)
{
	const double *p = field((sb_level *)lv, k);
	return p ? *p : NAN;
}

void sb_metric_set(sb_level *lv, sb_metric k, double v)
{
	double *p = field(lv, k);
	if (p)
		*p = v;
}
