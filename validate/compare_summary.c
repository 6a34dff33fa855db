/* compare_summary.c — a comparison's summary over levels and its goals (compare.h). */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/knee.h"
#include "sim/sim.h"
#include "compare_internal.h"

/* ---- summaries ---------------------------------------------------------- */

/* Levels of one mode sorted by level: indices into c->levels. */
static size_t mode_levels(const sb_comparison *c, sb_mode mode, size_t *idx)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n_levels; i++) {
		if (c->levels[i].mode == mode)
			idx[n++] = i;
	}
	/* insertion sort by level (few levels) */
	for (size_t i = 1; i < n; i++) {
		size_t v = idx[i], j = i;
		while (j > 0 && c->levels[idx[j - 1]].level > c->levels[v].level) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = v;
	}
	return n;
}

/* Median |error| over every level of the compared metrics that match
 * quantity, class and metric (-1: any); buf holds n_levels *
 * SB_COMPARE_N_METRICS values. */
static double mdape_select(const sb_comparison *c, double *buf, int quantity, int cls,
			   int metric)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n_levels; i++) {
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			sb_metric k = sb_compare_metrics[j];
			if ((quantity < 0 || (int)sb_metric_quantity(k) == quantity) &&
			    (cls < 0 || sb_compare_metric_class(k) == cls) &&
			    (metric < 0 || (int)k == metric))
				buf[n++] = c->levels[i].err_pct[k];
		}
	}
	return sb_compare_median_abs(buf, n);
}

/* The knees of TTFT p99 against load, measured and predicted, per mode;
 * idx, lv, pm, pp: room for n_levels values each. */
static void summarize_knees(sb_comparison *c, double min_ratio, size_t *idx, double *lv,
			    double *pm, double *pp)
{
	for (int md = 0; md < 2; md++) {
		size_t n = mode_levels(c, (sb_mode)md, idx);
		for (size_t i = 0; i < n; i++) {
			lv[i] = c->levels[idx[i]].level;
			pm[i] = c->levels[idx[i]].meas[SB_MET_TTFT_P99];
			pp[i] = c->levels[idx[i]].pred[SB_MET_TTFT_P99];
		}
		int km = sb_knee_find(lv, pm, n, min_ratio);
		int kp = sb_knee_find(lv, pp, n, min_ratio);
		c->knee_meas[md] = km >= 0 ? lv[km] : NAN;
		c->knee_pred[md] = kp >= 0 ? lv[kp] : NAN;
		if (n >= 2)
			c->knee_match[md] = km == kp;
	}
}

/* The capacity measured and predicted at the saturated level with the
 * highest measured req/s (compare.h). */
static void summarize_capacity(sb_comparison *c)
{
	c->cap_meas = c->cap_pred = c->cap_err_pct = c->cap_level = NAN;
	c->cap_mode = -1;
	c->cap_metric = SB_MET_REQ_S;
	for (size_t i = 0; i < c->n_levels; i++)
		if (!(c->levels[i].meas[SB_MET_REQ_S] > 0))
			c->cap_metric = SB_MET_OUT_TOK_S;
	for (size_t i = 0; i < c->n_levels; i++) {
		const sb_cmp_level *l = &c->levels[i];
		double m = l->meas[c->cap_metric], rq = l->meas[SB_MET_REQ_S];
		int sat = l->mode == SB_MODE_CONCURRENCY
				  ? c->measured_slots > 0 && l->level >= c->measured_slots
				  : rq < SB_CMP_SATURATED * l->level;
		if (!sat || !(m > 0) || m <= c->cap_meas)
			continue;
		c->cap_meas = m;
		c->cap_pred = l->pred[c->cap_metric];
		c->cap_level = l->level;
		c->cap_mode = (int)l->mode;
	}
	c->cap_err_pct = sb_compare_err_pct(c->cap_meas, c->cap_pred);
}

static void summary_clear(sb_comparison *c)
{
	c->mdape_central = c->mdape_tail = c->mdape_throughput = NAN;
	for (int k = 0; k < SB_MET_N; k++)
		c->mdape_metric[k] = NAN;
	for (int q = 0; q < SB_CMP_N_QUANT; q++)
		c->mdape_quant[q][0] = c->mdape_quant[q][1] = NAN;
	for (int md = 0; md < 2; md++) {
		c->knee_meas[md] = c->knee_pred[md] = NAN;
		c->knee_match[md] = -1;
	}
}

void sb_compare_summarize(sb_comparison *c, double knee_min_ratio)
{
	size_t nl = c->n_levels ? c->n_levels : 1;
	double *buf = malloc(nl * SB_COMPARE_N_METRICS * sizeof(*buf));
	size_t *idx = malloc(nl * sizeof(*idx));
	double *lv = malloc(3 * nl * sizeof(*lv));
	summary_clear(c);
	if (buf && idx && lv) {
		c->mdape_central = mdape_select(c, buf, -1, SB_CMP_CENTRAL, -1);
		c->mdape_tail = mdape_select(c, buf, -1, SB_CMP_TAIL, -1);
		c->mdape_throughput = mdape_select(c, buf, -1, SB_CMP_THROUGHPUT, -1);
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			sb_metric k = sb_compare_metrics[j];
			c->mdape_metric[k] = mdape_select(c, buf, -1, -1, (int)k);
		}
		for (int q = 0; q < SB_CMP_N_QUANT; q++)
			for (int cls = SB_CMP_CENTRAL; cls <= SB_CMP_TAIL; cls++)
				c->mdape_quant[q][cls] = mdape_select(c, buf, q, cls, -1);
		summarize_knees(c, knee_min_ratio, idx, lv, lv + nl, lv + 2 * nl);
	}
	summarize_capacity(c);
	free(buf);
	free(idx);
	free(lv);
}

/* ---- goals ------------------------------------------------------------------ */

static void append(char *why, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void append(char *why, size_t len, size_t *pos, const char *fmt, ...)
{
	if (!why || *pos + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(why + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos = *pos + (size_t)n < len ? *pos + (size_t)n : len - 1;
}

int sb_compare_check(const sb_comparison *c, const sb_compare_goals *g, char *why, size_t len)
{
	sb_compare_goals def;
	if (!g) {
		sb_compare_goals_init(&def);
		g = &def;
	}
	size_t pos = 0;
	if (why && len)
		why[0] = 0;
	static const char *qn[SB_CMP_N_QUANT] = { "TTFT", "TPOT", "E2E" };
	int ok = 1, any = 0;
	for (int q = 0; q < SB_CMP_N_QUANT; q++) {
		for (int cls = 0; cls < 2; cls++) {
			double v = c->mdape_quant[q][cls];
			double lim = cls == 0 ? g->central_pct : g->tail_pct;
			if (!isfinite(v))
				continue;
			any = 1;
			if (v > lim) {
				ok = 0;
				append(why, len, &pos, "%s %s: median |error| %.1f%% > %g%%\n", qn[q],
				       cls == 0 ? "mean/p50" : "p90/p99", v, lim);
			}
		}
	}
	if (!any) {
		ok = 0;
		append(why, len, &pos, "no metric could be compared\n");
	}
	if (g->require_knee) {
		for (int md = 0; md < 2; md++) {
			if (c->knee_match[md] != 0)
				continue;
			ok = 0;
			char a[32] = "none", b[32] = "none";
			if (isfinite(c->knee_meas[md]))
				snprintf(a, sizeof(a), "%g", c->knee_meas[md]);
			if (isfinite(c->knee_pred[md]))
				snprintf(b, sizeof(b), "%g", c->knee_pred[md]);
			append(why, len, &pos, "knee (%s): measured at %s, predicted at %s\n",
			       sb_mode_name((sb_mode)md), a, b);
		}
	}
	return ok;
}
