/* test_repeat.c — the calibration-to-calibration difference (validate/repeat.h)
 * on two comparisons filled by hand: per level 100 * (B - A) / A, the median
 * |difference| per quantity and class and pooled, the second model's own
 * errors, the JSON and the report; comparisons of different measurements
 * refused. Exact values: no tolerance beyond floating-point rounding. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate/repeat.h"
#include "../check.h"

#define NL 3

/* Comparison c over lv: three levels (closed loop 1 and 2, open loop 0.5)
 * measured as the first model predicts, predictions `pred` everywhere. */
static void fill(sb_comparison *c, sb_cmp_level *lv, double pred)
{
	memset(c, 0, sizeof(*c));
	memset(lv, 0, NL * sizeof(*lv));
	c->levels = lv;
	c->n_levels = NL;
	static const double lvl[NL] = { 1, 2, 0.5 };
	static const sb_mode md[NL] = { SB_MODE_CONCURRENCY, SB_MODE_CONCURRENCY, SB_MODE_RATE };
	for (int i = 0; i < NL; i++) {
		lv[i].level = lvl[i];
		lv[i].mode = md[i];
		for (int k = 0; k < SB_MET_N; k++)
			lv[i].meas[k] = lv[i].pred[k] = lv[i].err_pct[k] = NAN;
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++)
			lv[i].meas[sb_compare_metrics[j]] = lv[i].pred[sb_compare_metrics[j]] = pred;
	}
}

static void errors(sb_comparison *c)
{
	for (size_t i = 0; i < c->n_levels; i++)
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			sb_metric k = sb_compare_metrics[j];
			c->levels[i].err_pct[k] = sb_compare_err_pct(c->levels[i].meas[k],
								     c->levels[i].pred[k]);
		}
	sb_compare_summarize(c, 1.5);
}

/* The JSON of the repeatability computed in test_repeatability. */
static void check_json(const sb_repeatability *r_)
{
	json_t *j = sb_repeatability_to_json(r_);
	CHECK(j != NULL);
	json_t *s = json_object_get(j, "summary");
	CHECK_NEAR(json_number_value(json_object_get(json_object_get(s, "ttft"), "central_pct")),
		   1.5, 1e-12);
	CHECK_NEAR(json_number_value(json_object_get(json_object_get(s, "ttft"), "tail_pct")),
		   10.0, 1e-12);
	CHECK_NEAR(json_number_value(json_object_get(s, "throughput_pct")), 10.0, 1e-9);
	CHECK(json_is_number(json_object_get(s, "central_pct")));
	json_t *bm = json_object_get(s, "second_model_mdape");
	CHECK_NEAR(json_number_value(json_object_get(json_object_get(bm, "e2e"), "central_pct")),
		   2.5, 1e-12);
	json_t *l1 = json_array_get(json_object_get(j, "levels"), 1);
	CHECK_STR(json_string_value(json_object_get(l1, "mode")), "concurrency");
	json_t *m = json_object_get(json_object_get(l1, "metrics"), "ttft_mean");
	CHECK_NEAR(json_number_value(json_object_get(m, "difference_pct")), -5.0, 1e-12);
	CHECK_NEAR(json_number_value(json_object_get(m, "predicted")), 95.0, 0);
	CHECK_NEAR(json_number_value(json_object_get(m, "error_pct")), -5.0, 1e-12);
	json_t *l2 = json_array_get(json_object_get(j, "levels"), 2);
	m = json_object_get(json_object_get(l2, "metrics"), "e2e_p99");
	CHECK(json_is_null(json_object_get(m, "difference_pct")));
	CHECK(json_is_string(json_object_get(j, "definition")));
	json_decref(j);

}

/* Its report table. */
static void check_table(const sb_repeatability *r_, const sb_comparison *a_)
{
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	CHECK(f != NULL);
	if (f) {
		CHECK(sb_repeatability_report(f, r_, a_, "b.json") == 0);
		fclose(f);
		CHECK(strstr(txt, "repeatability: second model b.json against the first") != NULL);
		/* TTFT: difference 1.5/10.0, A's errors 0/0, B's 1.5/10.0 */
		CHECK(strstr(txt, "TTFT          1.5%     10.0%        0.0%      0.0%        1.5%"
				  "     10.0%\n") != NULL);
		free(txt);
	}
}

static void test_repeatability(void)
{
	sb_comparison a, b;
	sb_cmp_level la[NL], lb[NL];
	fill(&a, la, 100);
	fill(&b, lb, 100);
	/* TTFT mean B: +2, -5, 0 %; p50: +1, 0, +10 %
	 * -> TTFT central |diff| {2,5,0,1,0,10}: median (1 + 2) / 2 = 1.5 */
	lb[0].pred[SB_MET_TTFT_MEAN] = 102;
	lb[1].pred[SB_MET_TTFT_MEAN] = 95;
	lb[0].pred[SB_MET_TTFT_P50] = 101;
	lb[2].pred[SB_MET_TTFT_P50] = 110;
	/* TTFT p90 +20% everywhere, p99 0: tail {20,20,20,0,0,0} -> 10 */
	for (int i = 0; i < NL; i++)
		lb[i].pred[SB_MET_TTFT_P90] = 120;
	/* E2E mean +5% everywhere: central {5,5,5,0,0,0} -> 2.5 */
	for (int i = 0; i < NL; i++)
		lb[i].pred[SB_MET_E2E_MEAN] = 105;
	/* E2E p99: the first model's 0 at level 3 has no base (NaN, left out)
	 * and its -30% at level 1 is B's: E2E tail {0,0,0,30,0} -> 0 */
	la[2].pred[SB_MET_E2E_P99] = 0;
	lb[0].pred[SB_MET_E2E_P99] = 70;
	/* throughputs: out tok/s -10% everywhere, req/s +10%: -> 10 */
	for (int i = 0; i < NL; i++) {
		lb[i].pred[SB_MET_OUT_TOK_S] = 90;
		lb[i].pred[SB_MET_REQ_S] = 110;
	}
	errors(&a);
	errors(&b);

	sb_repeatability r;
	sb_error e = { "" };
	CHECK(sb_repeatability_compute(&a, &b, &r, &e) == 0);
	CHECK(r.n_levels == NL);
	CHECK_NEAR(r.levels[0].diff_pct[SB_MET_TTFT_MEAN], 2.0, 1e-12);
	CHECK_NEAR(r.levels[1].diff_pct[SB_MET_TTFT_MEAN], -5.0, 1e-12);
	CHECK_NEAR(r.levels[0].diff_pct[SB_MET_E2E_P99], -30.0, 1e-12);
	CHECK(isnan(r.levels[2].diff_pct[SB_MET_E2E_P99]));
	CHECK(isnan(r.levels[0].diff_pct[SB_MET_ITL_P50])); /* not compared */
	CHECK_NEAR(r.levels[2].pred_b[SB_MET_TTFT_P50], 110.0, 0);
	CHECK_NEAR(r.levels[2].err_b[SB_MET_TTFT_P50], 10.0, 1e-12);
	CHECK(r.levels[2].mode == SB_MODE_RATE && r.levels[2].level == 0.5);
	CHECK_NEAR(r.diff_quant[SB_QTY_TTFT][SB_CMP_CENTRAL], 1.5, 1e-12);
	CHECK_NEAR(r.diff_quant[SB_QTY_TTFT][SB_CMP_TAIL], 10.0, 1e-12);
	CHECK_NEAR(r.diff_quant[SB_QTY_TPOT][SB_CMP_CENTRAL], 0.0, 0);
	CHECK_NEAR(r.diff_quant[SB_QTY_TPOT][SB_CMP_TAIL], 0.0, 0);
	CHECK_NEAR(r.diff_quant[SB_QTY_E2E][SB_CMP_CENTRAL], 2.5, 1e-12);
	CHECK_NEAR(r.diff_quant[SB_QTY_E2E][SB_CMP_TAIL], 0.0, 0);
	/* pooled central: TTFT {0,0,1,2,5,10}, TPOT six 0, E2E {0,0,0,5,5,5}:
	 * 18 values, 11 zeros -> median 0; pooled tail: TTFT {20,20,20,0,0,0},
	 * TPOT six 0, E2E {0,0,0,30,0}: 17 values, 13 zeros -> 0 */
	CHECK_NEAR(r.diff_central, 0.0, 0);
	CHECK_NEAR(r.diff_tail, 0.0, 0);
	CHECK_NEAR(r.diff_throughput, 10.0, 1e-9);
	/* measured 100 everywhere, as A predicts but for E2E p99 at level 3: B's
	 * errors are its differences, there 0 where the difference has no base */
	CHECK_NEAR(r.mdape_b_quant[SB_QTY_TTFT][SB_CMP_CENTRAL], 1.5, 1e-12);
	CHECK_NEAR(r.mdape_b_quant[SB_QTY_E2E][SB_CMP_CENTRAL], 2.5, 1e-12);
	CHECK_NEAR(r.levels[2].err_b[SB_MET_E2E_P99], 0.0, 0);
	CHECK_NEAR(r.mdape_b_central, b.mdape_central, 0);

	check_json(&r);
	check_table(&r, &a);
	sb_repeatability_fini(&r);
	sb_repeatability_fini(&r); /* a second fini is a no-op */

	/* not the same measurement: refused, naming the level */
	lb[1].mode = SB_MODE_RATE;
	CHECK(sb_repeatability_compute(&a, &b, &r, &e) == -EINVAL);
	CHECK(strstr(e.msg, "level 2") != NULL && r.levels == NULL);
	lb[1].mode = SB_MODE_CONCURRENCY;
	b.n_levels = 2;
	CHECK(sb_repeatability_compute(&a, &b, &r, &e) == -EINVAL);
	CHECK(strstr(e.msg, "3 and 2 levels") != NULL);
}

int main(void)
{
	test_repeatability();
	CHECK_DONE();
}
