/* test_compare_math.c — the comparison's arithmetic on hand-made numbers:
 * signed percentage errors, median absolute errors, the metric classes, the
 * cross-level summaries and the goal check (the knee itself: tests/core).
 * Exact values: no tolerance beyond floating-point rounding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate/compare.h"
#include "../check.h"

static void test_err_pct(void)
{
	CHECK_NEAR(sb_compare_err_pct(100, 110), 10.0, 1e-12);
	CHECK_NEAR(sb_compare_err_pct(200, 150), -25.0, 1e-12);
	CHECK_NEAR(sb_compare_err_pct(3, 3), 0.0, 0);
	CHECK(isnan(sb_compare_err_pct(0, 1)));   /* no base */
	CHECK(isnan(sb_compare_err_pct(-1, 1)));
	CHECK(isnan(sb_compare_err_pct(NAN, 1)));
	CHECK(isnan(sb_compare_err_pct(1, NAN)));
	CHECK(isnan(sb_compare_err_pct(1, INFINITY)));
}

static void test_median_abs(void)
{
	double a[] = { -3, 1, 2 };
	CHECK_NEAR(sb_compare_median_abs(a, 3), 2.0, 0);
	double b[] = { -4, 1, NAN, 2, 10 }; /* |.| = 4 1 2 10 -> median 3 */
	CHECK_NEAR(sb_compare_median_abs(b, 5), 3.0, 1e-12);
	CHECK_NEAR(b[0], -4.0, 0); /* input untouched */
	double c[] = { NAN, INFINITY };
	CHECK(isnan(sb_compare_median_abs(c, 2)));
	CHECK(isnan(sb_compare_median_abs(c, 0)));
}

static void test_class(void)
{
	CHECK(sb_compare_metric_class(SB_MET_TPOT_MEAN) == SB_CMP_CENTRAL);
	CHECK(sb_compare_metric_class(SB_MET_TPOT_P50) == SB_CMP_CENTRAL);
	CHECK(sb_compare_metric_class(SB_MET_E2E_P90) == SB_CMP_TAIL);
	CHECK(sb_compare_metric_class(SB_MET_OUT_TOK_S) == SB_CMP_THROUGHPUT);
	/* the list: 12 latency statistics, then the two throughputs */
	CHECK(sb_compare_metrics[0] == SB_MET_TTFT_MEAN);
	CHECK(sb_compare_metrics[7] == SB_MET_TPOT_P99);
	CHECK(sb_compare_metrics[SB_COMPARE_N_METRICS - 1] == SB_MET_REQ_S);
}

/* The JSON form of c (test_summary_and_check's) carries the same numbers. */
static void check_json(const sb_comparison *c)
{
	/* the JSON form carries the same numbers */
	json_t *j = sb_comparison_to_json(c);
	CHECK(j != NULL);
	json_t *s = json_object_get(j, "summary");
	CHECK_NEAR(json_number_value(json_object_get(s, "tpot_tail_mdape_pct")), 20.0, 1e-9);
	json_t *cap = json_object_get(s, "capacity");
	CHECK(!strcmp(json_string_value(json_object_get(cap, "metric")), "req_s"));
	CHECK_NEAR(json_number_value(json_object_get(cap, "measured")), 100, 0);
	CHECK_NEAR(json_number_value(json_object_get(cap, "error_pct")), 0, 1e-12);
	json_t *l1 = json_array_get(json_object_get(j, "levels"), 1);
	json_t *m = json_object_get(json_object_get(l1, "metrics"), "ttft_mean");
	CHECK_NEAR(json_number_value(json_object_get(m, "error_pct")), 6.0, 1e-9);
	json_decref(j);
}

/* The report writes without failing and names the mismatch. */
static void check_report_text(const sb_comparison *c)
{
	/* the report writes without failing and names the mismatch */
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	CHECK(f != NULL);
	if (f) {
		CHECK(sb_compare_report(f, c, 1) == 0);
		fclose(f);
		CHECK(strstr(txt, "MISMATCH") != NULL);
		CHECK(strstr(txt, "closed loop c=5") != NULL);
		CHECK(strstr(txt, "capacity (saturated at concurrency 5): measured 100 req/s, "
				  "predicted 100 (+0.0%)") != NULL);
		free(txt);
	}
}

/* Two closed-loop levels and one open-loop level filled by hand. */
static void test_summary_and_check(void)
{
	sb_comparison c;
	memset(&c, 0, sizeof(c));
	sb_cmp_level lv[3];
	memset(lv, 0, sizeof(lv));
	c.levels = lv;
	c.n_levels = 3;
	double lvl[3] = { 1, 5, 2.0 };
	sb_mode md[3] = { SB_MODE_CONCURRENCY, SB_MODE_CONCURRENCY, SB_MODE_RATE };
	for (int i = 0; i < 3; i++) {
		lv[i].level = lvl[i];
		lv[i].mode = md[i];
		for (int k = 0; k < SB_MET_N; k++)
			lv[i].meas[k] = lv[i].pred[k] = lv[i].err_pct[k] = NAN;
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			lv[i].meas[sb_compare_metrics[j]] = 100;
			lv[i].pred[sb_compare_metrics[j]] = 100;
		}
	}
	/* central errors: TTFT +2/-4 at level 0, +6/+1 at level 1, 0 elsewhere
	 * -> TTFT central |errors| {2,4,6,1,0,0}: median 1.5 */
	lv[0].pred[SB_MET_TTFT_MEAN] = 102;
	lv[0].pred[SB_MET_TTFT_P50] = 96;
	lv[1].pred[SB_MET_TTFT_MEAN] = 106;
	lv[1].pred[SB_MET_TTFT_P50] = 101;
	/* TPOT tail all +20%: fails the 10% goal */
	for (int i = 0; i < 3; i++) {
		lv[i].pred[SB_MET_TPOT_P90] = 120;
		lv[i].pred[SB_MET_TPOT_P99] = 120;
	}
	/* closed-loop knee: p99 150 -> 900 measured, predicted flat */
	lv[0].meas[SB_MET_TTFT_P99] = 150;
	lv[1].meas[SB_MET_TTFT_P99] = 900;
	lv[0].pred[SB_MET_TTFT_P99] = 150;
	lv[1].pred[SB_MET_TTFT_P99] = 160;
	for (int i = 0; i < 3; i++)
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			sb_metric k = sb_compare_metrics[j];
			lv[i].err_pct[k] = sb_compare_err_pct(lv[i].meas[k], lv[i].pred[k]);
		}
	sb_compare_summarize(&c, 1.5);
	CHECK_NEAR(c.mdape_quant[SB_QTY_TTFT][0], 1.5, 1e-9);
	CHECK_NEAR(c.mdape_quant[SB_QTY_TPOT][1], 20.0, 1e-9);
	CHECK_NEAR(c.mdape_quant[SB_QTY_E2E][0], 0.0, 1e-12);
	CHECK_NEAR(c.mdape_metric[SB_MET_TTFT_MEAN], 2.0, 1e-9); /* {2,6,0} */
	CHECK_NEAR(c.knee_meas[SB_MODE_CONCURRENCY], 5, 0);
	CHECK(isnan(c.knee_pred[SB_MODE_CONCURRENCY])); /* 160 < 1.5 * 150 */
	CHECK(c.knee_match[SB_MODE_CONCURRENCY] == 0);
	CHECK(c.knee_match[SB_MODE_RATE] == -1); /* one open-loop level only */
	/* no slot count, open loop at 100 of rate 2: nothing saturated */
	CHECK(c.cap_mode == -1 && isnan(c.cap_meas));
	/* 4 slots: c=5 saturates (measured 100 req/s, predicted 100) */
	c.measured_slots = 4;
	lv[1].pred[SB_MET_REQ_S] = 110;
	sb_compare_summarize(&c, 1.5);
	CHECK(c.cap_mode == SB_MODE_CONCURRENCY && c.cap_level == 5);
	CHECK_NEAR(c.cap_meas, 100, 0);
	CHECK_NEAR(c.cap_err_pct, 10.0, 1e-9);
	lv[1].pred[SB_MET_REQ_S] = 100;
	sb_compare_summarize(&c, 1.5);

	sb_compare_goals g;
	sb_compare_goals_init(&g);
	char why[512];
	CHECK(sb_compare_check(&c, &g, why, sizeof(why)) == 0);
	CHECK(strstr(why, "TPOT p90/p99") != NULL);
	CHECK(strstr(why, "knee (concurrency)") != NULL);
	CHECK(strstr(why, "TTFT") == NULL);
	g.tail_pct = 25;
	g.require_knee = 0;
	CHECK(sb_compare_check(&c, &g, why, sizeof(why)) == 1);
	CHECK(why[0] == 0);
	check_json(&c);
	check_report_text(&c);

}

int main(void)
{
	test_err_pct();
	test_median_abs();
	test_class();
	test_summary_and_check();
	CHECK_DONE();
}
