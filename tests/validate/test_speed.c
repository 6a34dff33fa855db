/* test_speed.c — the speed-adjusted prediction (validate/speed.h): model
 * scaling, the per-level factors from the probes beside a level and the
 * probe-to-probe change against values computed by hand; then a simulated
 * server whose decode runs 1.25x slower than the model: the probes read
 * it and the adjusted prediction takes it out. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/model.h"
#include "core/model_scale.h"
#include "core/results.h"
#include "validate/speed.h"
#include "simdoc.h"
#include "../check.h"

static void test_scale_model(void)
{
	sb_model m;
	sb_error e = { "" };
	CHECK(sb_model_default(&m, &e) == 0);
	m.overhead_ms = 10;
	m.overhead_sd_ms = 2;
	m.overhead_per_token_ms = 0.01;
	m.prefill_base_ms = 4;
	m.per_prefill_token_ms = 0.5;
	m.per_prefill_attn_ms = 0.001;
	m.per_kv_token_ms = 0.002;
	m.decode[0].ms = 8;
	m.n_decode_kv = 1;
	m.decode_kv[0] = (sb_decode_point){ 1, 0.005 };
	int slots = m.slots, nd = m.n_decode;
	sb_model same;
	sb_model_copy(&same, &m);
	sb_speed_scale_model(&m, 1.5, 0.8);
	CHECK_NEAR(m.overhead_ms, 15, 1e-12);
	CHECK_NEAR(m.overhead_sd_ms, 3, 1e-12);
	CHECK_NEAR(m.overhead_per_token_ms, 0.015, 1e-15);
	CHECK_NEAR(m.prefill_base_ms, 6, 1e-12);
	CHECK_NEAR(m.per_prefill_token_ms, 0.75, 1e-12);
	CHECK_NEAR(m.per_prefill_attn_ms, 0.0015, 1e-15);
	CHECK_NEAR(m.decode[0].ms, 6.4, 1e-12);
	CHECK_NEAR(m.per_kv_token_ms, 0.0016, 1e-15);
	CHECK_NEAR(m.decode_kv[0].ms, 0.004, 1e-15); /* a decode time too */
	CHECK(m.slots == slots && m.n_decode == nd); /* nothing else moves */
	/* the one definition: --scale prompt=FP,decode=FD does the same */
	sb_model_scale s;
	sb_model_scale_init(&s);
	CHECK(sb_model_scale_parse("prompt=1.5,decode=0.8", &s, "--scale", &e) == 0);
	sb_model_scale_apply(&s, &same);
	CHECK(same.overhead_ms == m.overhead_ms && same.decode[0].ms == m.decode[0].ms &&
	      same.decode_kv[0].ms == m.decode_kv[0].ms && same.per_kv_token_ms == m.per_kv_token_ms &&
	      same.per_prefill_attn_ms == m.per_prefill_attn_ms);
	sb_model_fini(&same);
	sb_model_fini(&m);
}

/* Four probes: before levels 0, 1, 2 and after the last (3). */
static void test_factors(void)
{
	sb_speed sp;
	sb_speed_init(&sp);
	double ttft[4] = { 110, 120, 130, 100 }, ttft_m[4] = { 100, 100, 100, 100 };
	double tpot[4] = { 10, 12, 9, NAN }, tpot_m[4] = { 10, 10, 10, 10 };
	for (int i = 0; i < 4; i++)
		json_array_append_new(sp.probes, json_pack("{s:f,s:i,s:{}}", "t_s", 10.0 * i,
							   "before_level", i, "level"));
	sp.n_probes = 4;
	sp.ttft_ms = ttft;
	sp.ttft_model = ttft_m;
	sp.tpot_ms = tpot;
	sp.tpot_model = tpot_m;
	double fp = -1, fd = -1;
	/* level 0: probes 0 and 1: TTFT (1.1 + 1.2) / 2, TPOT (1.0 + 1.2) / 2 */
	CHECK(sb_speed_factors(&sp, 0, &fp, &fd) == 1);
	CHECK_NEAR(fp, 1.15, 1e-12);
	CHECK_NEAR(fd, 1.1, 1e-12);
	/* level 1: probes 1 and 2: (1.2 + 1.3) / 2, (1.2 + 0.9) / 2 */
	CHECK(sb_speed_factors(&sp, 1, &fp, &fd) == 1);
	CHECK_NEAR(fp, 1.25, 1e-12);
	CHECK_NEAR(fd, 1.05, 1e-12);
	/* level 2: probe 3's TPOT is unknown, so probe 2 alone */
	CHECK(sb_speed_factors(&sp, 2, &fp, &fd) == 1);
	CHECK_NEAR(fp, 1.3, 1e-12);
	CHECK_NEAR(fd, 0.9, 1e-12);
	/* level 5: no probe beside it; the factors stay as they were */
	CHECK(sb_speed_factors(&sp, 5, &fp, &fd) == 0);
	CHECK_NEAR(fp, 1.3, 0);

	/* probe to probe: TTFT ratios 1.1, 1.2, 1.3, 1.0 change by +9.0909%,
	 * +8.3333%, -23.0769%: median |change| 9.0909% */
	CHECK_NEAR(sb_speed_change_pct(ttft, ttft_m, 4), 100.0 / 11, 1e-9);
	/* TPOT 1.0, 1.2, 0.9: +20%, -25% -> 22.5% (NaN of the 4th skipped) */
	CHECK_NEAR(sb_speed_change_pct(tpot, tpot_m, 3), 22.5, 1e-9);
	CHECK(isnan(sb_speed_change_pct(tpot, tpot_m, 1)));
	json_decref(sp.probes);
}

/* A server 1.25x slower at decode than the model: three closed-loop
 * levels measured on it, with 5-request probes before each and after the
 * last, compared with the model. */
static void test_adjusted(void)
{
	sb_model m, slow;
	sb_error e = { "" };
	CHECK(sb_model_default(&m, &e) == 0);
	sb_model_copy(&slow, &m);
	sb_speed_scale_model(&slow, 1.0, 1.25);
	sb_workload w;
	sb_workload_init(&w);
	w.output_len = (sb_dist){ SB_DIST_DET, 64, 0 };
	w.requests = 24;
	w.warmup = 0;
	w.n_levels = 3;
	double lv[] = { 2, 3, 4 };
	memcpy(w.levels, lv, sizeof(lv));
	json_t *doc = simdoc_make(&slow, &w, 11);
	sb_workload wp = w;
	wp.levels[0] = 1;
	wp.n_levels = 1;
	wp.requests = 5;
	json_t *probes = json_array();
	for (int i = 0; i <= 3; i++) {
		json_t *pd = simdoc_make(&slow, &wp, 100 + (unsigned long)i);
		json_t *l0 = json_array_get(json_object_get(pd, "levels"), 0);
		json_array_append_new(probes, json_pack("{s:f,s:i,s:O}", "t_s", 60.0 * i,
							"before_level", i, "level", l0));
		json_decref(pd);
	}
	json_object_set_new(doc, "speed_probes", probes);
	sb_results meas;
	CHECK(sb_results_from_json(doc, &meas, "simulated truth", &e) == 0);
	sb_speed sp;
	sb_speed_init(&sp);
	CHECK(sb_speed_from_results(&sp, doc, &e) == 1);
	CHECK(sp.n_probes == 4 && sp.probe_requests == 5);
	sb_compare_opts o;
	sb_compare_opts_init(&o);
	o.replications = 5;
	sb_comparison c;
	CHECK(sb_compare_run(&m, &meas, &o, &c, &e) == 0);
	CHECK(sb_speed_analyse(&sp, &m, &meas, &c, &o, &e) == 0);
	CHECK(sp.analysed && sp.adj.n_levels == 3);
	printf("decode factors %.4f %.4f %.4f, prefill %.4f; TPOT central MdAPE plain %.1f%%, "
	       "adjusted %.1f%%\n", sp.f_decode[0], sp.f_decode[1], sp.f_decode[2],
	       sp.f_prefill[0], c.mdape_quant[SB_QTY_TPOT][0], sp.adj.mdape_quant[SB_QTY_TPOT][0]);
	for (size_t L = 0; L < 3; L++) {
		/* decode 1.25x; TTFT at one client holds one decode-free
		 * prefill, so its factor stays 1 */
		CHECK_NEAR(sp.f_decode[L], 1.25, 0.03);
		CHECK_NEAR(sp.f_prefill[L], 1.0, 0.03);
	}
	/* the plain prediction misses TPOT by the 20% of 1/1.25; the adjusted
	 * one does not */
	CHECK(c.mdape_quant[SB_QTY_TPOT][0] > 15);
	CHECK(sp.adj.mdape_quant[SB_QTY_TPOT][0] < 3);
	CHECK(sp.change_pct[1] < 3); /* the speed did not move between probes */
	sb_comparison_fini(&c);
	sb_speed_fini(&sp);
	sb_results_fini(&meas);
	json_decref(doc);
	sb_model_fini(&m);
	sb_model_fini(&slow);
}

int main(void)
{
	test_scale_model();
	test_factors();
	test_adjusted();
	CHECK_DONE();
}
