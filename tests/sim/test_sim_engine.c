/* test_sim_engine.c — the engine model's behaviour, the replay API,
 * determinism, and the streaming statistics' accuracy.
 *
 * Most checks run without noise on a hand-built model, so the expected
 * values are exact consequences of the model's formula (core/model.h):
 *   decode_ms(1)=5, (4)=9, (8)=15; per_kv_token 1e-4; per_prefill_token
 *   0.1; prefill_base 5; overhead 15 ms.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "core/stats.h"
#include "core/workload.h"
#include "sim/sim.h"
#include "sim/sweep.h"
#include "sim/whist.h"
#include "fixtures.h"
#include "../check.h"

#define NEAR(a, b, rel) (fabs((a) - (b)) <= (rel) * fabs(b) + 1e-12)

/* The shared model (fixtures.h) with a per_kv_token cost of 1e-4 ms. */
static void test_model(sb_model *m, int slots)
{
	simfix_model(m, slots, "test");
	m->per_kv_token_ms = 1e-4;
}

static int run(const sb_model *m, sb_mode mode, double level, long in, long out,
	       long n, unsigned long seed, sb_sim_level *lv)
{
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	o.no_noise = 1;
	sb_workload w;
	sb_workload_init(&w);
	w.mode = mode;
	w.input_len = (sb_dist){ SB_DIST_DET, (double)in, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, (double)out, 0 };
	w.requests = n;
	w.warmup = 0;
	sb_error e = { "" };
	int rc = sb_sim_run_level(m, &o, &w, level, seed, lv, &e);
	if (rc < 0)
		fprintf(stderr, "run failed: %s\n", e.msg);
	return rc;
}

/* c = 1: TTFT = overhead + prefill_base + per_prefill_token * L (linear in
 * L); TPOT = decode(1) + per_kv_token * (L + mean context growth). */
static void test_prefill_decode(void)
{
	sb_model m;
	test_model(&m, 4);
	const long lens[] = { 16, 256, 1024, 2048 };
	const long out = 64;
	double tpot16 = 0;
	for (size_t i = 0; i < 4; i++) {
		sb_sim_level lv;
		long L = lens[i];
		CHECK_MSG(run(&m, SB_MODE_CONCURRENCY, 1, L, out, 20, 1, &lv) == 0, "run");
		double ttft = 15 + 5 + 0.1 * (double)L;
		CHECK_MSG(NEAR(lv.sum.ttft_ms.p50, ttft, 1e-9), "L=%ld TTFT %.9g want %.9g", L,
		          lv.sum.ttft_ms.p50, ttft);
		/* decode step g (g = 1..out-1) has context L + g */
		double tpot = 5 + 1e-4 * ((double)L + (double)out / 2);
		CHECK_MSG(NEAR(lv.sum.tpot_ms.p50, tpot, 1e-9), "L=%ld TPOT %.12g want %.12g", L,
		          lv.sum.tpot_ms.p50, tpot);
		CHECK_MSG(NEAR(lv.sum.itl_ms.mean, tpot, 1e-9), "L=%ld ITL mean %.12g want %.12g", L,
		          lv.sum.itl_ms.mean, tpot);
		CHECK_MSG(lv.sum.wait_ms.max == 0, "c=1 never waits (%g)", lv.sum.wait_ms.max);
		CHECK_MSG(lv.sum.itl_ms.n == (uint64_t)(20 * (out - 1)), "ITL gaps %llu want %ld",
		          (unsigned long long)lv.sum.itl_ms.n, 20 * (out - 1));
		if (L == 16)
			tpot16 = lv.sum.tpot_ms.p50;
		else
			CHECK_MSG(lv.sum.tpot_ms.p50 / tpot16 < 1.1,
			          "TPOT nearly flat in prompt length: %g vs %g", lv.sum.tpot_ms.p50, tpot16);
		sb_sim_level_fini(&lv);
	}
	/* chunked prefill: 2048 tokens in chunks of 512 = 4 steps */
	m.batch_tokens = 512;
	sb_sim_level lv;
	CHECK_MSG(run(&m, SB_MODE_CONCURRENCY, 1, 2048, 8, 5, 1, &lv) == 0, "run");
	CHECK_MSG(NEAR(lv.sum.ttft_ms.p50, 15 + 4 * 5 + 0.1 * 2048, 1e-9), "chunked TTFT %.9g",
	          lv.sum.ttft_ms.p50);
	sb_sim_level_fini(&lv);
	sb_model_fini(&m);
}

/* Throughput with c = S grows with S, and the gain shrinks (plateau). */
static void test_batching_gain(void)
{
	double tput[4];
	const int ss[] = { 1, 2, 4, 8 };
	for (int i = 0; i < 4; i++) {
		sb_model m;
		test_model(&m, ss[i]);
		sb_sim_level lv;
		CHECK_MSG(run(&m, SB_MODE_CONCURRENCY, ss[i], 256, 128, 400, 3, &lv) == 0, "run");
		tput[i] = lv.sum.output_tok_s;
		sb_sim_level_fini(&lv);
		sb_model_fini(&m);
	}
	for (int i = 1; i < 4; i++)
		CHECK_MSG(tput[i] > tput[i - 1], "throughput grows with slots: %g <= %g", tput[i],
		          tput[i - 1]);
	double g1 = tput[2] / tput[0], g2 = tput[3] / tput[2];
	CHECK_MSG(g1 > 1.5, "batching gain 1->4 slots %.3f", g1);
	CHECK_MSG(g2 < g1 / 1.5 && g2 < 1.25, "gain plateaus: 4->8 %.3f vs 1->4 %.3f", g2, g1);
	printf("throughput at c=S=1,2,4,8: %.1f %.1f %.1f %.1f tok/s\n", tput[0], tput[1],
	       tput[2], tput[3]);
}

/* Closed loop against 4 slots: the knee is at c = 5, just past S. */
static void test_knee(void)
{
	sb_model m;
	test_model(&m, 4);
	m.noise_kind = SB_NOISE_LOGNORMAL;
	m.noise_cv = m.noise_prefill_cv = 0.03;
	m.overhead_sd_ms = 1;
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_CONCURRENCY;
	const double lv[] = { 1, 2, 3, 4, 5, 6, 8 };
	for (int i = 0; i < 7; i++)
		w.levels[i] = lv[i];
	w.n_levels = 7;
	w.requests = 300;
	sb_sweep sw;
	sb_error e = { "" };
	CHECK_MSG(sb_sweep_run(&m, &o, &w, 2, &sw, &e) == 0, "sweep: %s", e.msg);
	CHECK_MSG(sw.knee == 4, "knee at index %d (%s), want c=5", sw.knee, sw.knee_reason);
	for (int i = 0; i < sw.n_levels; i++)
		CHECK_MSG(NEAR(sw.levels[i].mean[SB_MET_L_LAW], sw.levels[i].mean[SB_MET_L_OBS], 1e-9),
		          "Little at c=%g", sw.levels[i].level);
	sb_sweep_fini(&sw);
	sb_model_fini(&m);
}

/* Open loop beyond capacity stops at the queue bound and says so; below
 * it, it does not. */
static void test_divergence(void)
{
	sb_model m;
	test_model(&m, 4);
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	o.queue_cap = 300;
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_RATE;
	w.requests = 100000;
	double mu;
	sb_error e = { "" };
	CHECK_MSG(sb_sim_capacity(&m, &o, &w, &mu, &e) == 0, "capacity: %s", e.msg);
	/* a slot holds a request ~ 1 prefill + 127 steps of decode(4) ~ 1.2 s */
	CHECK_MSG(mu > 2 && mu < 5, "capacity %g req/s", mu);
	sb_sim_level lv;
	CHECK_MSG(sb_sim_run_level(&m, &o, &w, 1.5 * mu, 5, &lv, &e) == 0, "run: %s", e.msg);
	CHECK_MSG(lv.diverged, "λ = 1.5 μ must hit the queue bound");
	/* the bound counts requests in transit too (~λ x 15 ms, under one) */
	CHECK_MSG(lv.max_waiting >= 290, "queue reached %ld", lv.max_waiting);
	CHECK_MSG(lv.generated < 100000, "stopped early (%ld requests)", lv.generated);
	sb_sim_level_fini(&lv);
	w.requests = 3000;
	CHECK_MSG(sb_sim_run_level(&m, &o, &w, 0.5 * mu, 5, &lv, &e) == 0, "run: %s", e.msg);
	CHECK_MSG(!lv.diverged, "λ = 0.5 μ must not diverge (queue %ld)", lv.max_waiting);
	sb_sim_level_fini(&lv);
	sb_model_fini(&m);
}

/* A replayed measurement with shared prefixes: a request whose slot last
 * held its prefix group prefills only its own tokens, after restoring the
 * prefix (per_cached_token each); another group, or no prefix, prefills
 * all. */
static void test_replay_prefix(void)
{
	sb_model m;
	test_model(&m, 1);
	m.prompt_cache = SB_PCACHE_SLOT;
	m.per_cached_token_ms = 0.01;
	sb_replay_opts ro = { .mode = SB_MODE_RATE, .seed = 1, .no_noise = 1 };
	sb_replay_req rq[4] = { { 0.0, 256, 10, -1, 200, 0, 0, 0, NULL, 0, 0 }, { 5.0, 256, 10, -1, 200, 0, 0, 0, NULL, 0, 0 },
				{ 10.0, 256, 10, -1, 200, 1, 0, 0, NULL, 0, 0 }, { 15.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 } };
	sb_replay_pred p[4];
	sb_error e = { "" };
	CHECK_MSG(sb_sim_replay(&m, &ro, rq, 4, p, NULL, &e) == 0, "replay: %s", e.msg);
	double saved = 200 * (0.1 - 0.01);
	CHECK_MSG(NEAR(p[1].ttft_ms, p[0].ttft_ms - saved, 1e-6),
		  "same group: TTFT %.9g, want %.9g", p[1].ttft_ms, p[0].ttft_ms - saved);
	CHECK_MSG(NEAR(p[2].ttft_ms, p[0].ttft_ms, 1e-6) && NEAR(p[3].ttft_ms, p[0].ttft_ms, 1e-6),
		  "other group / no prefix: TTFT %.9g, %.9g, want %.9g", p[2].ttft_ms,
		  p[3].ttft_ms, p[0].ttft_ms);
	m.prompt_cache = SB_PCACHE_NONE;
	CHECK_MSG(sb_sim_replay(&m, &ro, rq, 4, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[1].ttft_ms, p[0].ttft_ms, 1e-6), "no cache: TTFT %.9g, want %.9g",
		  p[1].ttft_ms, p[0].ttft_ms);
	/* the restores are engine work: two reusing prompts sent together pay
	 * both in their step (llama.cpp restores slots one after another), so
	 * each waits for the other's restore too; one alone pays its own */
	sb_model m2;
	test_model(&m2, 2);
	m2.prompt_cache = SB_PCACHE_SHARED;
	sb_replay_req two[4] = { { 0.0, 256, 10, -1, 200, 0, 0, 0, NULL, 0, 0 }, { 5.0, 256, 10, -1, 200, 0, 0, 0, NULL, 0, 0 },
				 { 5.0, 256, 10, -1, 200, 0, 0, 0, NULL, 0, 0 }, { 10.0, 256, 10, -1, 200, 0, 0, 0, NULL, 0, 0 } };
	double gap[2];
	for (int k = 0; k < 2; k++) {
		m2.per_cached_token_ms = k ? 0.05 : 0;
		CHECK_MSG(sb_sim_replay(&m2, &ro, two, 4, p, NULL, &e) == 0, "replay: %s", e.msg);
		gap[k] = p[1].ttft_ms - p[3].ttft_ms;
		CHECK_MSG(NEAR(p[1].ttft_ms, p[2].ttft_ms, 1e-9), "together: TTFT %.9g and %.9g",
			  p[1].ttft_ms, p[2].ttft_ms);
	}
	CHECK_MSG(NEAR(gap[1] - gap[0], 200 * 0.05, 1e-6),
		  "two restores in one step: together - alone grew %.9g ms, want %.9g", gap[1] - gap[0],
		  200 * 0.05);
	/* a prefix is held once a prompt of it was prefilled, not when sent:
	 * two prompts of a new prefix sent together both prefill it, as two
	 * prompts without one do */
	m2.per_cached_token_ms = 0;
	sb_replay_req fresh[4] = { { 0.0, 256, 10, -1, 200, 1, 0, 0, NULL, 0, 0 }, { 0.0, 256, 10, -1, 200, 1, 0, 0, NULL, 0, 0 },
				   { 5.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 }, { 5.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 } };
	CHECK_MSG(sb_sim_replay(&m2, &ro, fresh, 4, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[0].ttft_ms, p[2].ttft_ms, 1e-9) && NEAR(p[1].ttft_ms, p[3].ttft_ms, 1e-9),
		  "a new prefix sent twice at once: TTFT %.9g, %.9g; without a prefix %.9g, %.9g",
		  p[0].ttft_ms, p[1].ttft_ms, p[2].ttft_ms, p[3].ttft_ms);
	sb_model_fini(&m2);
	sb_replay_req bad = { 0.0, 16, 5, -1, 20, 0, 0, 0, NULL, 0, 0 };
	CHECK_MSG(sb_sim_replay(&m, &ro, &bad, 1, p, NULL, &e) < 0 && strstr(e.msg, "prefix"),
		  "a prefix longer than its prompt: %s", e.msg);
	sb_model_fini(&m);
}

static void test_replay(void)
{
	sb_model m;
	test_model(&m, 1);
	sb_replay_opts ro = { .mode = SB_MODE_RATE, .seed = 1, .no_noise = 1 };
	/* two requests at once on one slot: the second waits for the first */
	sb_replay_req rq[3] = { { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 },
				   { 5.0, 16, 1, -1, 0, -1, 0, 0, NULL, 0, 0 } };
	sb_replay_pred p[3];
	sb_level lv;
	sb_error e = { "" };
	CHECK_MSG(sb_sim_replay(&m, &ro, rq, 3, p, &lv, &e) == 0, "replay: %s", e.msg);
	double ttft = 15 + 5 + 0.1 * 256;
	CHECK_MSG(NEAR(p[0].ttft_ms, ttft, 1e-9), "replay TTFT %.9g want %.9g", p[0].ttft_ms, ttft);
	CHECK_MSG(NEAR(p[1].wait_ms, p[0].e2e_ms - 15, 1e-9), "second waits %.9g want %.9g",
	          p[1].wait_ms, p[0].e2e_ms - 15);
	CHECK_MSG(isnan(p[2].tpot_ms) && NEAR(p[2].e2e_ms, 15 + 5 + 1.6, 1e-9),
	          "1-token request: e2e %.9g", p[2].e2e_ms);
	CHECK_MSG(lv.requests_ok == 3, "summary counts %ld", lv.requests_ok);
	/* a request arriving mid-decode joins at the next step boundary:
	 * it waits less than one step, not until the other finishes */
	sb_model m2;
	test_model(&m2, 2);
	sb_replay_req rq2[2] = { { 0.0, 16, 200, -1, 0, -1, 0, 0, NULL, 0, 0 }, { 0.3, 16, 10, -1, 0, -1, 0, 0, NULL, 0, 0 } };
	CHECK_MSG(sb_sim_replay(&m2, &ro, rq2, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(p[1].wait_ms > 0 && p[1].wait_ms < 5.1, "mid-run join waits %.6g ms", p[1].wait_ms);
	/* closed-loop replay with one client runs the list back to back */
	sb_replay_opts rc = { .mode = SB_MODE_CONCURRENCY, .concurrency = 1, .no_noise = 1 };
	CHECK_MSG(sb_sim_replay(&m, &rc, rq, 3, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[1].t_sent_s, p[0].t_done_s, 1e-12) && NEAR(p[2].t_sent_s, p[1].t_done_s, 1e-12),
	          "closed replay issues on completion");
	CHECK_MSG(p[1].wait_ms == 0, "one client never queues");
	/* admission delay: a queued request starts admit_delay_ms after the
	 * slot frees */
	m.admit_delay_ms = 30;
	CHECK_MSG(sb_sim_replay(&m, &ro, rq, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[1].wait_ms, p[0].e2e_ms - 15 + 30, 1e-9), "admit delay: wait %.9g want %.9g",
	          p[1].wait_ms, p[0].e2e_ms - 15 + 30);
	m.admit_delay_ms = 0;
	/* split_prob: of two requests reaching an idle engine in the same
	 * instant, the second misses the first step always (1: its first
	 * token a whole mixed step later) or never (0: the same step) */
	sb_replay_opts rn = { .mode = SB_MODE_RATE, .seed = 1 };
	sb_replay_req pair[2] = { { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 } };
	m2.split_prob = 1;
	CHECK_MSG(sb_sim_replay(&m2, &rn, pair, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	double mixed = sb_model_decode_ms(&m2, 1) + 0.1 * 256;
	CHECK_MSG(p[1].ttft_ms - p[0].ttft_ms >= mixed - 0.01, "split: TTFTs %.6g and %.6g",
	          p[0].ttft_ms, p[1].ttft_ms);
	m2.split_prob = 0;
	CHECK_MSG(sb_sim_replay(&m2, &rn, pair, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[1].ttft_ms, p[0].ttft_ms, 1e-9), "together: TTFTs %.6g and %.6g",
	          p[0].ttft_ms, p[1].ttft_ms);
	/* split_prob_crowded: three at once to 2 slots (one queued) use it
	 * instead; a pair still uses split_prob */
	sb_replay_req three[3] = { { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 },
				   { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 } };
	m2.split_prob_crowded = 1;
	CHECK_MSG(sb_sim_replay(&m2, &rn, three, 3, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(p[1].ttft_ms - p[0].ttft_ms >= mixed - 0.01, "crowded split: TTFTs %.6g and %.6g",
	          p[0].ttft_ms, p[1].ttft_ms);
	CHECK_MSG(sb_sim_replay(&m2, &rn, pair, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[1].ttft_ms, p[0].ttft_ms, 1e-9), "pair, crowded 1: TTFTs %.6g and %.6g",
	          p[0].ttft_ms, p[1].ttft_ms);
	m2.split_prob = 1;
	m2.split_prob_crowded = 0;
	CHECK_MSG(sb_sim_replay(&m2, &rn, three, 3, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[1].ttft_ms, p[0].ttft_ms, 1e-9), "crowded together: TTFTs %.6g and %.6g",
	          p[0].ttft_ms, p[1].ttft_ms);
	m2.split_prob = 0;
	/* sent together, the longer prompt's overhead brings it 0.44 ms
	 * later: within the join window it still shares the first step (its
	 * first token 0.44 ms later at the client, not a step); 7.4 ms later
	 * it waits for the step to end */
	m2.overhead_per_token_ms = 0.01;
	sb_replay_req near[2] = { { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 300, 10, -1, 0, -1, 0, 0, NULL, 0, 0 } };
	CHECK_MSG(sb_sim_replay(&m2, &rn, near, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(fabs(p[1].ttft_ms - p[0].ttft_ms) < 1.0, "join window: TTFTs %.6g and %.6g",
	          p[0].ttft_ms, p[1].ttft_ms);
	sb_replay_req far[2] = { { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 1000, 10, -1, 0, -1, 0, 0, NULL, 0, 0 } };
	CHECK_MSG(sb_sim_replay(&m2, &rn, far, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(p[1].ttft_ms - p[0].ttft_ms > 0.1 * 1000, "past the window: TTFTs %.6g and %.6g",
	          p[0].ttft_ms, p[1].ttft_ms);
	m2.overhead_per_token_ms = 0;
	/* bad input is refused with a message */
	sb_replay_req bad = { 0.0, 0, 5, -1, 0, -1, 0, 0, NULL, 0, 0 };
	CHECK_MSG(sb_sim_replay(&m, &ro, &bad, 1, p, NULL, &e) < 0 && strstr(e.msg, "prompt"),
	          "bad replay input: %s", e.msg);
	sb_model_fini(&m);
	sb_model_fini(&m2);
}

/* numpy "linear" quantile of sorted x */
static double exact_q(const double *x, size_t n, double q)
{
	double h = (double)(n - 1) * q;
	size_t i = (size_t)floor(h);
	if (i + 1 >= n)
		return x[n - 1];
	return x[i] + (h - (double)i) * (x[i + 1] - x[i]);
}

/* Same seed, same numbers; streaming percentiles within 1% of exact. */
static void test_determinism_and_percentiles(void)
{
	sb_model m;
	sb_error e = { "" };
	CHECK_MSG(sb_model_default(&m, &e) == 0, "default model: %s", e.msg);
	m.slots = 8;
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	o.keep_records = 1;
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_RATE;
	w.requests = 60000;
	w.input_len = (sb_dist){ SB_DIST_LOGNORMAL, 5.5, 0.6 };
	sb_sim_level a, b, c;
	CHECK_MSG(sb_sim_run_level(&m, &o, &w, 2.0, 9, &a, &e) == 0, "run: %s", e.msg);
	CHECK_MSG(sb_sim_run_level(&m, &o, &w, 2.0, 9, &b, &e) == 0, "run: %s", e.msg);
	CHECK_MSG(sb_sim_run_level(&m, &o, &w, 2.0, 10, &c, &e) == 0, "run: %s", e.msg);
	CHECK_MSG(memcmp(&a.sum.ttft_ms, &b.sum.ttft_ms, sizeof a.sum.ttft_ms) == 0 &&
	          memcmp(&a.sum.e2e_ms, &b.sum.e2e_ms, sizeof a.sum.e2e_ms) == 0 &&
	          a.sum.l_observed == b.sum.l_observed && a.n_recs == b.n_recs,
	          "same seed, same result");
	CHECK_MSG(a.sum.ttft_ms.mean != c.sum.ttft_ms.mean, "another seed, another result");
	size_t n = a.n_recs;
	double *x = malloc(n * sizeof *x);
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < n; i++)
			x[i] = k == 0 ? a.recs[i].ttft_ms : k == 1 ? a.recs[i].e2e_ms : a.recs[i].tpot_ms;
		qsort(x, n, sizeof *x, sb_cmp_double);
		const sb_summary *s = k == 0 ? &a.sum.ttft_ms : k == 1 ? &a.sum.e2e_ms : &a.sum.tpot_ms;
		const double qs[3] = { 0.5, 0.9, 0.99 }, got[3] = { s->p50, s->p90, s->p99 };
		for (int j = 0; j < 3; j++) {
			double ex = exact_q(x, n, qs[j]);
			CHECK_MSG(NEAR(got[j], ex, 0.01), "metric %d q%.2f: streaming %.6g exact %.6g", k,
			          qs[j], got[j], ex);
		}
	}
	free(x);
	sb_sim_level_fini(&a);
	sb_sim_level_fini(&b);
	sb_sim_level_fini(&c);
	sb_model_fini(&m);
}

/* Noise keeps the mean and gives a run of k steps the cv of k independent
 * steps (cv/sqrt(k)). At c = 1 each request's decode is one run of out-1
 * steps, so per-request TPOT has mean = the noiseless TPOT and cv =
 * cv/sqrt(out-1). Tolerances: the mean within 4 standard errors (SE =
 * sd/sqrt(n)); the sample cv within 15% (its own relative SE is about
 * 1/sqrt(2n) = 1.6% for n = 2000). */
static void test_noise(void)
{
	sb_model m;
	test_model(&m, 1);
	m.noise_kind = SB_NOISE_LOGNORMAL;
	m.noise_cv = m.noise_prefill_cv = 0.1;
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	o.keep_records = 1;
	sb_workload w;
	sb_workload_init(&w);
	w.input_len = (sb_dist){ SB_DIST_DET, 256, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, 65, 0 };
	w.requests = 2000;
	sb_sim_level lv;
	sb_error e = { "" };
	CHECK_MSG(sb_sim_run_level(&m, &o, &w, 1, 17, &lv, &e) == 0, "run: %s", e.msg);
	double s1 = 0, s2 = 0;
	size_t n = lv.n_recs;
	for (size_t i = 0; i < n; i++) {
		s1 += lv.recs[i].tpot_ms;
		s2 += lv.recs[i].tpot_ms * lv.recs[i].tpot_ms;
	}
	double mean = s1 / (double)n;
	double sd = sqrt((s2 - s1 * s1 / (double)n) / (double)(n - 1));
	double want = 5 + 1e-4 * (256 + 65.0 / 2);
	CHECK_MSG(fabs(mean - want) < 4 * sd / sqrt((double)n), "noisy TPOT mean %.6g want %.6g (sd %.3g)",
	          mean, want, sd);
	double cv = sd / mean, wcv = 0.1 / sqrt(64.0);
	CHECK_MSG(fabs(cv - wcv) < 0.15 * wcv, "TPOT cv %.5g want %.5g", cv, wcv);
	printf("noise: TPOT mean %.5f (noiseless %.5f), cv %.5f (want %.5f)\n", mean, want, cv, wcv);
	sb_sim_level_fini(&lv);
	sb_model_fini(&m);
}

/* A weighted add equals the same value added w times. */
static void test_whist(void)
{
	sb_whist *h = sb_whist_new();
	sb_summary s;
	sb_whist_summary(h, &s);
	CHECK_MSG(s.n == 0 && isnan(s.p50), "empty whist");
	sb_whist_add(h, 10.0, 90);
	sb_whist_add(h, 100.0, 10);
	sb_whist_summary(h, &s);
	CHECK_MSG(NEAR(s.mean, 19.0, 1e-12), "weighted mean %g", s.mean);
	CHECK_MSG(NEAR(s.p50, 10.0, 0.004), "weighted p50 %g", s.p50);
	CHECK_MSG(NEAR(s.p99, 100.0, 0.004), "weighted p99 %g", s.p99);
	CHECK_MSG(s.n == 100, "weight total %llu", (unsigned long long)s.n);
	sb_whist_free(h);
	sb_whist_free(NULL);
}

/* kv_cache per-slot: a step costs decode_ms(n) for each run of n
 * consecutive decoding slots. With decode_ms 5 at one and 9 at four (7.67
 * at two, interpolated), two clients pinned to slots 0 and 1 run one pass
 * of two, pinned to 0 and 2 two passes of one; unified, both one pass of
 * two. A replay puts each request in the slot its record names. */
static void test_per_slot(void)
{
	sb_model m;
	test_model(&m, 4);
	m.per_kv_token_ms = 0;
	m.admit_delay_ms = 0;
	double one = 5.0, two = sb_model_decode_ms(&m, 2);
	for (int kv = 0; kv < 2; kv++) {
		m.kv_cache = kv ? SB_KV_PER_SLOT : SB_KV_UNIFIED;
		for (int k = 1; k <= 2; k++) {
			sb_sim_opts o;
			sb_sim_opts_init(&o);
			o.no_noise = 1;
			o.pin_stride = k;
			sb_workload w;
			sb_workload_init(&w);
			w.mode = SB_MODE_CONCURRENCY;
			w.input_len = (sb_dist){ SB_DIST_DET, 16, 0 };
			w.output_len = (sb_dist){ SB_DIST_DET, 50, 0 };
			w.requests = 20;
			w.warmup = 0;
			sb_sim_level lv;
			sb_error e = { "" };
			CHECK_MSG(sb_sim_run_level(&m, &o, &w, 2, 1, &lv, &e) == 0, "run: %s", e.msg);
			double want = kv && k == 2 ? 2 * one : two;
			CHECK_MSG(NEAR(lv.sum.tpot_ms.mean, want, 1e-6), "%s, stride %d: TPOT %.6g want %.6g",
			          sb_kv_cache_name(m.kv_cache), k, lv.sum.tpot_ms.mean, want);
			sb_sim_level_fini(&lv);
		}
	}
	/* replay: the measured slots decide the passes */
	sb_replay_opts ro = { .mode = SB_MODE_RATE, .seed = 1, .no_noise = 1 };
	sb_replay_req apart[2] = { { 0.0, 16, 50, 0, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 16, 50, 2, 0, -1, 0, 0, NULL, 0, 0 } };
	sb_replay_req beside[2] = { { 0.0, 16, 50, 1, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 16, 50, 2, 0, -1, 0, 0, NULL, 0, 0 } };
	sb_replay_pred p[2];
	sb_error e = { "" };
	CHECK_MSG(sb_sim_replay(&m, &ro, apart, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[0].tpot_ms, 2 * one, 1e-6), "replay slots 0,2: TPOT %.6g", p[0].tpot_ms);
	CHECK_MSG(sb_sim_replay(&m, &ro, beside, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[0].tpot_ms, two, 1e-6), "replay slots 1,2: TPOT %.6g", p[0].tpot_ms);
	sb_model_fini(&m);
}

/* prefill_per_prompt: each prompt beyond the first of a prefill pass;
 * per-slot, a pass is a run of consecutive slots (0,1,3: two passes, one
 * extra prompt), unified one pass for the step. Three prompts of 256
 * tokens, one output token, no noise: TTFT = overhead 15 + passes *
 * prefill_base 5 + 0.1 * 768 + 7 * (3 - passes). */
static void test_prefill_per_prompt(void)
{
	sb_model m;
	test_model(&m, 4);
	m.prefill_per_prompt_ms = 7;
	sb_replay_opts ro = { .mode = SB_MODE_RATE, .seed = 1, .no_noise = 1 };
	sb_replay_req run[3] = { { 0.0, 256, 1, 0, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 256, 1, 1, 0, -1, 0, 0, NULL, 0, 0 },
				   { 0.0, 256, 1, 2, 0, -1, 0, 0, NULL, 0, 0 } };
	sb_replay_req gap[3] = { { 0.0, 256, 1, 0, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 256, 1, 1, 0, -1, 0, 0, NULL, 0, 0 },
				   { 0.0, 256, 1, 3, 0, -1, 0, 0, NULL, 0, 0 } };
	sb_replay_pred p[3];
	sb_error e = { "" };
	for (int kv = 0; kv < 2; kv++) {
		m.kv_cache = kv ? SB_KV_PER_SLOT : SB_KV_UNIFIED;
		CHECK_MSG(sb_sim_replay(&m, &ro, run, 3, p, NULL, &e) == 0, "replay: %s", e.msg);
		double want = 15 + 5 + 76.8 + 14;
		CHECK_MSG(NEAR(p[2].ttft_ms, want, 1e-6), "%s slots 0,1,2: TTFT %.9g want %.9g",
		          sb_kv_cache_name(m.kv_cache), p[2].ttft_ms, want);
		CHECK_MSG(sb_sim_replay(&m, &ro, gap, 3, p, NULL, &e) == 0, "replay: %s", e.msg);
		want = kv ? 15 + 10 + 76.8 + 7 : 15 + 5 + 76.8 + 14;
		CHECK_MSG(NEAR(p[2].ttft_ms, want, 1e-6), "%s slots 0,1,3: TTFT %.9g want %.9g",
		          sb_kv_cache_name(m.kv_cache), p[2].ttft_ms, want);
	}
	sb_model_fini(&m);
}

/* release_ms with a request already queued: llama.cpp hands the freed slot
 * to it for the very next step (release_holds_queue false, the default);
 * with release_holds_queue it waits out the end-of-request cost too. */
static void test_release_queue(void)
{
	sb_model m;
	test_model(&m, 1);
	m.release[0] = (sb_decode_point){ 1, 20.0 };
	m.n_release = 1;
	sb_replay_opts ro = { .mode = SB_MODE_RATE, .seed = 1, .no_noise = 1 };
	sb_replay_req rq[2] = { { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 }, { 0.0, 256, 10, -1, 0, -1, 0, 0, NULL, 0, 0 } };
	sb_replay_pred p[2];
	sb_error e = { "" };
	CHECK_MSG(sb_sim_replay(&m, &ro, rq, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[1].wait_ms, p[0].e2e_ms - 15, 1e-9), "queued, not held: wait %.9g want %.9g",
	          p[1].wait_ms, p[0].e2e_ms - 15);
	m.release_holds_queue = 1;
	CHECK_MSG(sb_sim_replay(&m, &ro, rq, 2, p, NULL, &e) == 0, "replay: %s", e.msg);
	CHECK_MSG(NEAR(p[1].wait_ms, p[0].e2e_ms - 15 + 20, 1e-9), "held: wait %.9g want %.9g",
	          p[1].wait_ms, p[0].e2e_ms - 15 + 20);
	sb_model_fini(&m);
}

int main(void)
{
	test_release_queue();
	test_per_slot();
	test_prefill_per_prompt();
	test_prefill_decode();
	test_batching_gain();
	test_knee();
	test_divergence();
	test_replay();
	test_replay_prefix();
	test_determinism_and_percentiles();
	test_whist();
	test_noise();
	if (check_failures)
		fprintf(stderr, "%d failure(s)\n", check_failures);
	else
		printf("all engine checks passed\n");
	return check_failures ? 1 : 0;
}
