/* test_compare_math.c — the comparison's arithmetic on hand-made numbers:
 * signed percentage errors, median absolute errors, knee detection, the
 * cross-level summaries and the goal check. Exact values: no tolerance
 * beyond floating-point rounding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/compare.h"
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

static void test_knee(void)
{
	/* 4 slots: TTFT p99 creeps up to c=4, jumps at c=5 (a queued request
	 * waits a whole service), then grows slowly. */
	double lv[] = { 1, 2, 4, 5, 6, 8 };
	double p99[] = { 150, 180, 280, 1200, 1300, 1500 };
	CHECK(sb_compare_knee(lv, p99, 6, 1.5) == 3);
	/* uneven spacing: the rise per unit of load counts, not the rise */
	double lv2[] = { 1, 2, 10, 11 };
	double y2[] = { 100, 300, 1000, 1100 }; /* slopes 200, 87.5, 100 */
	CHECK(sb_compare_knee(lv2, y2, 4, 1.5) == 1);
	/* flat curve: below min_ratio, no knee */
	double flat[] = { 100, 101, 102, 104, 105, 110 };
	CHECK(sb_compare_knee(lv, flat, 6, 1.5) == -1);
	/* decreasing: no knee */
	double dec[] = { 500, 400, 300, 200, 100, 50 };
	CHECK(sb_compare_knee(lv, dec, 6, 1.5) == -1);
	/* a burst at the lightest level (short open-loop run): the baseline
	 * is the lowest p99 below the knee */
	double lv3[] = { 0.4, 0.7, 1.0, 1.2 };
	double burst[] = { 1339, 256, 257, 1955 };
	CHECK(sb_compare_knee(lv3, burst, 4, 1.5) == 3);
	/* bad inputs */
	CHECK(sb_compare_knee(lv, p99, 1, 1.5) == -1);
	double lvbad[] = { 1, 1, 2 };
	CHECK(sb_compare_knee(lvbad, p99, 3, 1.5) == -1);
	double nanv[] = { 1, NAN, 3 };
	CHECK(sb_compare_knee(lv, nanv, 3, 1.5) == -1);
}

static void test_names(void)
{
	CHECK(!strcmp(sb_compare_metric_name(SB_CMP_TTFT_P50), "ttft_p50"));
	CHECK(!strcmp(sb_compare_metric_name(SB_CMP_E2E_P99), "e2e_p99"));
	CHECK(!strcmp(sb_compare_metric_name(SB_CMP_REQ_S), "req_s"));
	CHECK(sb_compare_metric_class(SB_CMP_TPOT_MEAN) == SB_CMP_CENTRAL);
	CHECK(sb_compare_metric_class(SB_CMP_TPOT_P50) == SB_CMP_CENTRAL);
	CHECK(sb_compare_metric_class(SB_CMP_E2E_P90) == SB_CMP_TAIL);
	CHECK(sb_compare_metric_class(SB_CMP_OUT_TOK_S) == SB_CMP_THROUGHPUT);
	CHECK(sb_compare_metric_quantity(SB_CMP_TPOT_P99) == SB_CMP_Q_TPOT);
	CHECK(sb_compare_metric_quantity(SB_CMP_REQ_S) == -1);
	sb_level lv;
	memset(&lv, 0, sizeof(lv));
	lv.tpot_ms.p90 = 7;
	lv.output_tok_s = 99;
	CHECK_NEAR(sb_compare_metric_get(&lv, SB_CMP_TPOT_P90), 7, 0);
	CHECK_NEAR(sb_compare_metric_get(&lv, SB_CMP_OUT_TOK_S), 99, 0);
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
		for (int k = 0; k < SB_CMP_N_METRICS; k++) {
			lv[i].meas[k] = 100;
			lv[i].pred[k] = 100;
		}
	}
	/* central errors: TTFT +2/-4 at level 0, +6/+1 at level 1, 0 elsewhere
	 * -> TTFT central |errors| {2,4,6,1,0,0}: median 1.5 */
	lv[0].pred[SB_CMP_TTFT_MEAN] = 102;
	lv[0].pred[SB_CMP_TTFT_P50] = 96;
	lv[1].pred[SB_CMP_TTFT_MEAN] = 106;
	lv[1].pred[SB_CMP_TTFT_P50] = 101;
	/* TPOT tail all +20%: fails the 10% goal */
	for (int i = 0; i < 3; i++) {
		lv[i].pred[SB_CMP_TPOT_P90] = 120;
		lv[i].pred[SB_CMP_TPOT_P99] = 120;
	}
	/* closed-loop knee: p99 150 -> 900 measured, predicted flat */
	lv[0].meas[SB_CMP_TTFT_P99] = 150;
	lv[1].meas[SB_CMP_TTFT_P99] = 900;
	lv[0].pred[SB_CMP_TTFT_P99] = 150;
	lv[1].pred[SB_CMP_TTFT_P99] = 160;
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < SB_CMP_N_METRICS; k++)
			lv[i].err_pct[k] = sb_compare_err_pct(lv[i].meas[k], lv[i].pred[k]);
	sb_compare_summarize(&c, 1.5);
	CHECK_NEAR(c.mdape_quant[SB_CMP_Q_TTFT][0], 1.5, 1e-9);
	CHECK_NEAR(c.mdape_quant[SB_CMP_Q_TPOT][1], 20.0, 1e-9);
	CHECK_NEAR(c.mdape_quant[SB_CMP_Q_E2E][0], 0.0, 1e-12);
	CHECK_NEAR(c.mdape_metric[SB_CMP_TTFT_MEAN], 2.0, 1e-9); /* {2,6,0} */
	CHECK_NEAR(c.knee_meas[SB_MODE_CONCURRENCY], 5, 0);
	CHECK(isnan(c.knee_pred[SB_MODE_CONCURRENCY])); /* 160 < 1.5 * 150 */
	CHECK(c.knee_match[SB_MODE_CONCURRENCY] == 0);
	CHECK(c.knee_match[SB_MODE_RATE] == -1); /* one open-loop level only */

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

	/* the JSON form carries the same numbers */
	json_t *j = sb_comparison_to_json(&c);
	CHECK(j != NULL);
	json_t *s = json_object_get(j, "summary");
	CHECK_NEAR(json_number_value(json_object_get(s, "tpot_tail_mdape_pct")), 20.0, 1e-9);
	json_t *l1 = json_array_get(json_object_get(j, "levels"), 1);
	json_t *m = json_object_get(json_object_get(l1, "metrics"), "ttft_mean");
	CHECK_NEAR(json_number_value(json_object_get(m, "error_pct")), 6.0, 1e-9);
	json_decref(j);

	/* the report writes without failing and names the mismatch */
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	CHECK(f != NULL);
	if (f) {
		CHECK(sb_compare_report(f, &c, 1) == 0);
		fclose(f);
		CHECK(strstr(txt, "MISMATCH") != NULL);
		CHECK(strstr(txt, "closed loop c=5") != NULL);
		free(txt);
	}
}

int main(void)
{
	test_err_pct();
	test_median_abs();
	test_knee();
	test_names();
	test_summary_and_check();
	CHECK_DONE();
}
