/* test_metric.c — the one metric table (core/metric.h): names, compact
 * keys, parsing, and reading/writing a level summary. */
#include <math.h>
#include <string.h>

#include "core/metric.h"
#include "../check.h"

int main(void)
{
	CHECK_STR(sb_metric_name(SB_MET_TTFT_P99), "ttft_ms.p99");
	CHECK_STR(sb_metric_name(SB_MET_OUT_TOK_S), "output_tok_s");
	CHECK_STR(sb_metric_name(SB_MET_TPOT_PCT), "tpot_ms.slo_pct");
	CHECK_STR(sb_metric_key(SB_MET_TTFT_P50), "ttft_p50");
	CHECK_STR(sb_metric_key(SB_MET_E2E_P99), "e2e_p99");
	CHECK_STR(sb_metric_key(SB_MET_REQ_S), "req_s");
	CHECK_STR(sb_metric_name(SB_MET_N), "?");
	/* every metric has a name, a key, and parses back to itself */
	for (int k = 0; k < SB_MET_N; k++) {
		sb_metric back = SB_MET_N;
		CHECK(strcmp(sb_metric_name((sb_metric)k), "?") != 0);
		CHECK(sb_metric_key((sb_metric)k) != NULL);
		CHECK(sb_metric_parse(sb_metric_name((sb_metric)k), &back) == 0 && (int)back == k);
	}
	sb_metric k;
	CHECK(sb_metric_parse("ttft_p50", &k) < 0); /* a key is no name */
	CHECK(sb_metric_quantity(SB_MET_TPOT_P99) == SB_QTY_TPOT);
	CHECK(sb_metric_quantity(SB_MET_REQ_S) == SB_QTY_NONE);
	CHECK(sb_metric_stat(SB_MET_E2E_P90) == SB_STAT_P90);
	CHECK(sb_metric_stat(SB_MET_GOODPUT) == SB_STAT_NONE);

	sb_level lv;
	memset(&lv, 0, sizeof(lv));
	lv.tpot_ms.p90 = 7;
	lv.output_tok_s = 99;
	lv.l_observed = 3;
	CHECK_NEAR(sb_metric_get(&lv, SB_MET_TPOT_P90), 7, 0);
	CHECK_NEAR(sb_metric_get(&lv, SB_MET_OUT_TOK_S), 99, 0);
	CHECK_NEAR(sb_metric_get(&lv, SB_MET_L_OBS), 3, 0);
	CHECK(isnan(sb_metric_get(&lv, SB_MET_UTIL))); /* the simulator's own */
	sb_metric_set(&lv, SB_MET_E2E_P99, 41);
	sb_metric_set(&lv, SB_MET_REQ_S, 2.5);
	sb_metric_set(&lv, SB_MET_REJECTED, 5); /* no such field: no-op */
	CHECK_NEAR(lv.e2e_ms.p99, 41, 0);
	CHECK_NEAR(lv.req_s, 2.5, 0);
	CHECK_DONE();
}
