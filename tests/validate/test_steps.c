/* test_steps.c — the server's step speed read from a level's tokens
 * (validate/steps.h) and the capacity check's prediction at that speed
 * (validate/capacity_check.h).
 *
 * The levels come from a small engine written here: 2 slots, FIFO, one
 * step at a time, each step costing the model's time for it with the
 * decode part times fd and the prompt part times fp, every token of a step
 * written at its end plus a per-stream delay (threads writing streams). The
 * step speed must come back as (fd, fp); with random delays on every token
 * within the median's noise; and the capacity check's prediction at a speed of
 * exactly 1 must be the plan's own (same model, same seed); and validate of
 * a level run 1.3x slower than the model must predict it at its step speed.
 * On a per-slot cache a pair decoding in slots 0 and 2 runs two passes of
 * one, in slots 1 and 2 one pass of two: the speed read must be the one
 * the pair ran at either way. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/model.h"
#include "core/results.h"
#include "validate/capacity_check.h"
#include "validate/steps.h"
#include "validate/validate.h"
#include "../check.h"

#define NREQ 40
#define OUT 20
#define PROMPT 50

typedef struct engine_level {
	sb_reqrec reqs[NREQ];
	double itl[NREQ][OUT];
	sb_rlevel lv;
} engine_level;

static void model_for_test(sb_model *m)
{
	sb_error e = { "" };
	CHECK(sb_model_default(m, &e) == 0);
	m->slots = 2;
	m->n_decode = 2;
	m->decode[0] = (sb_decode_point){ 1, 10 };
	m->decode[1] = (sb_decode_point){ 2, 16 };
	m->n_decode_kv = 0;
	m->per_kv_token_ms = 0.001;
	m->per_prefill_token_ms = 2;
	m->per_prefill_attn_ms = 0.0005;
	m->prefill_base_ms = 7;
	m->kv_cache = SB_KV_UNIFIED;
	/* nothing the engine below does not do */
	m->overhead_ms = m->overhead_sd_ms = m->overhead_per_token_ms = 0;
	m->admit_delay_ms = m->prefill_per_prompt_ms = 0;
	m->split_prob = m->split_prob_crowded = 0;
	m->n_release = 0;
	m->noise_kind = SB_NOISE_NONE;
	m->noise_cv = m->noise_prefill_cv = 0;
	m->batch_tokens = 0;
	m->max_queue = -1;
}

/* Per-token delay of stream i's k-th token (s): fixed per stream, plus a
 * uniform one within +-2 ms drawn from rng when there is one. */
static double delay(int i, gsl_rng *rng)
{
	double d = 0.001 * (i % 3);
	return rng ? d + gsl_ran_flat(rng, -0.002, 0.002) : d;
}

/* Requests every `gap_s` from t = 0, PROMPT/OUT tokens, 2 slots. */
static void engine_run(engine_level *L, const sb_model *m, double fd, double fp, double gap_s,
		       gsl_rng *rng)
{
	memset(L, 0, sizeof(*L));
	int slot[2] = { -1, -1 }, gen[NREQ] = { 0 }, next = 0, done = 0;
	double T = 0, last[NREQ];
	for (int r = 0; r < NREQ; r++)
		L->reqs[r].t_scheduled_s = L->reqs[r].t_sent_s = r * gap_s;
	while (done < NREQ) {
		for (int s = 0; s < 2; s++)
			if (slot[s] < 0 && next < NREQ && next * gap_s <= T)
				slot[s] = next++;
		if (slot[0] < 0 && slot[1] < 0) {
			T = next * gap_s;
			continue;
		}
		int B = 0, np = 0;
		double ctx = 0;
		for (int s = 0; s < 2; s++)
			if (slot[s] >= 0 && gen[slot[s]] > 0) {
				B++;
				ctx += PROMPT + gen[slot[s]];
			} else if (slot[s] >= 0) {
				np++;
			}
		double dec = B ? sb_model_decode_ms(m, B) + sb_model_decode_kv(m, B) * ctx : 0;
		double pre = np * (m->per_prefill_token_ms * PROMPT +
				   m->per_prefill_attn_ms * PROMPT * (PROMPT - 1) / 2) +
			     (B ? 0 : m->prefill_base_ms);
		T += (fd * dec + fp * pre) / 1000;
		for (int s = 0; s < 2; s++) {
			int r = slot[s];
			if (r < 0)
				continue;
			double t = T + delay(r, rng);
			sb_reqrec *q = &L->reqs[r];
			if (gen[r] == 0) {
				q->ttft_ms = (t - q->t_sent_s) * 1000;
			} else {
				L->itl[r][gen[r] - 1] = (t - last[r]) * 1000;
			}
			last[r] = t;
			if (++gen[r] == OUT) {
				q->e2e_ms = (t - q->t_sent_s) * 1000;
				slot[s] = -1;
				done++;
			}
		}
	}
	for (int r = 0; r < NREQ; r++) {
		sb_reqrec *q = &L->reqs[r];
		q->id = r;
		q->itl_ms = L->itl[r];
		q->n_itl = OUT - 1;
		q->prompt_tokens = PROMPT;
		q->output_tokens = OUT;
		q->slot = q->replica = -1;
	}
	L->lv.sum.mode = SB_MODE_RATE;
	L->lv.sum.level = 1 / gap_s;
	L->lv.reqs = L->reqs;
	L->lv.n_reqs = NREQ;
}

static void test_recovers(void)
{
	sb_model m;
	model_for_test(&m);
	static engine_level L;
	const double f[3][2] = { { 1, 1 }, { 1.2, 1.5 }, { 0.8, 1.1 } };
	for (int i = 0; i < 3; i++) {
		engine_run(&L, &m, f[i][0], f[i][1], 0.25, NULL);
		sb_step_speed sp;
		CHECK(sb_step_speed_of(&L.lv, &m, &sp) == 0);
		CHECK_NEAR(sp.f_decode, f[i][0], 1e-9);
		CHECK_NEAR(sp.f_prefill, f[i][1], 1e-9);
		CHECK(sp.n_decode > NREQ * (OUT - 1) / 2 && sp.n_prefill >= SB_STEPS_MIN);
	}
	/* random delays of +-2 ms on every token: a gap's error has sd 1.63 ms
	 * (two uniform delays), 0.1 of a 12-19 ms decode step and 0.016 of the
	 * 100 ms prompt part; a median of n gaps has sd about 1.25 sd / sqrt(n):
	 * 0.005 over ~700 decode gaps, 0.003 over ~40 prompt gaps. Bounds: 4
	 * and 5 of those. */
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(rng, 7);
	engine_run(&L, &m, 1.2, 1.5, 0.25, rng);
	gsl_rng_free(rng);
	sb_step_speed sp;
	CHECK(sb_step_speed_of(&L.lv, &m, &sp) == 0);
	CHECK(sp.n_decode > 600 && sp.n_prefill > 30);
	CHECK_NEAR(sp.f_decode, 1.2, 0.02);
	CHECK_NEAR(sp.f_prefill, 1.5, 0.015);
	/* one request at a time: no step with a prompt beside a decoding one */
	engine_run(&L, &m, 1.2, 1.5, 5.0, NULL);
	CHECK(sb_step_speed_of(&L.lv, &m, &sp) == 0);
	CHECK_NEAR(sp.f_decode, 1.2, 1e-9);
	CHECK(isnan(sp.f_prefill) && sp.n_prefill == 0);
	/* prompts the model calls almost free say nothing of their factor: the
	 * decode factor stands in for it */
	sb_model cheap;
	sb_model_copy(&cheap, &m);
	cheap.per_prefill_token_ms = 1e-4;
	cheap.per_prefill_attn_ms = 0;
	engine_run(&L, &cheap, 1.2, 1.5, 0.02, NULL);
	CHECK(sb_step_speed_of(&L.lv, &cheap, &sp) == 0);
	CHECK_NEAR(sp.f_decode, 1.2, 1e-9);
	CHECK(isnan(sp.f_prefill) && sp.n_prefill == 0);
	double fp, fd;
	CHECK(sb_step_speed_factors(&sp, &fp, &fd) == 1);
	CHECK_NEAR(fp, 1.2, 1e-9);
	CHECK_NEAR(fd, 1.2, 1e-9);
	sb_model_fini(&cheap);
	/* failed requests and no requests: nothing to read */
	for (int r = 0; r < NREQ; r++)
		L.reqs[r].err_class = "http";
	CHECK(sb_step_speed_of(&L.lv, &m, &sp) == 0);
	CHECK(isnan(sp.f_decode) && isnan(sp.f_prefill) && sp.n_decode == 0);
	L.lv.n_reqs = 0;
	CHECK(sb_step_speed_of(&L.lv, &m, &sp) == 0);
	CHECK(isnan(sp.f_decode));
	CHECK(sb_step_speed_factors(&sp, &fp, &fd) == 0 && isnan(fp) && isnan(fd));
	sb_model_fini(&m);
}

/* Two requests decoding side by side on a per-slot cache, in slots 0 and s2,
 * every step costing f x the passes the slots make: (decode_ms(1) + kv) x 2
 * apart, decode_ms(2) + kv x 2 together. */
static void test_per_slot_runs(void)
{
	sb_model m;
	model_for_test(&m);
	m.kv_cache = SB_KV_PER_SLOT;
	m.slots = 4;
	m.per_kv_token_ms = 0;
	static engine_level L;
	const double f = 1.25;
	for (int s2 = 1; s2 <= 2; s2++) {
		memset(&L, 0, sizeof(L));
		double step = f * (s2 == 1 ? sb_model_decode_ms(&m, 2) : 2 * sb_model_decode_ms(&m, 1));
		for (int r = 0; r < 2; r++) {
			sb_reqrec *q = &L.reqs[r];
			q->id = r;
			q->ttft_ms = 100;
			for (int k = 0; k < OUT - 1; k++)
				L.itl[r][k] = step;
			q->itl_ms = L.itl[r];
			q->n_itl = OUT - 1;
			q->e2e_ms = 100 + step * (OUT - 1);
			q->prompt_tokens = PROMPT;
			q->output_tokens = OUT;
			q->slot = r ? s2 : 0;
			q->replica = -1;
		}
		L.lv.sum.mode = SB_MODE_CONCURRENCY;
		L.lv.sum.level = 2;
		L.lv.reqs = L.reqs;
		L.lv.n_reqs = 2;
		sb_step_speed sp;
		CHECK(sb_step_speed_of(&L.lv, &m, &sp) == 0);
		fprintf(stderr, "per-slot pair in slots 0 and %d: decode factor %.4f (ran at %.2f)\n",
			s2, sp.f_decode, f);
		CHECK_NEAR(sp.f_decode, f, 1e-9);
		CHECK(sp.n_decode == 2 * (OUT - 1));
		/* slots not reported: one pass of both, as the unified cost */
		L.reqs[0].slot = L.reqs[1].slot = -1;
		CHECK(sb_step_speed_of(&L.lv, &m, &sp) == 0);
		CHECK_NEAR(sp.f_decode, step / sb_model_decode_ms(&m, 2), 1e-9);
	}
	sb_model_fini(&m);
}

/* The plan's two rates measured by the engine at speed f: the prediction at
 * speed equals the plan's at f = 1 and rises with f. */
static void test_plan_at_speed(void)
{
	sb_model m;
	model_for_test(&m);
	sb_workload w;
	sb_workload_init(&w);
	w.input_len = (sb_dist){ SB_DIST_DET, PROMPT, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, OUT, 0 };
	w.requests = NREQ;
	w.seed = 3;
	w.slo.ttft_ms = 250;
	w.slo.percentile = 50;
	sb_error e = { "" };
	static engine_level L[2];
	for (int k = 0; k < 2; k++) {
		double f = k ? 1.3 : 1.0;
		sb_capacity_check p;
		if (sb_capacity_check_predict(&p, &m, &w, 10, &e) != 0) {
			fprintf(stderr, "plan: %s\n", e.msg);
			CHECK(0);
			break;
		}
		sb_rlevel lv[2];
		for (int i = 0; i < 2; i++) {
			engine_run(&L[i], &m, f, f, 1 / p.at[i].rate, NULL);
			lv[i] = L[i].lv;
			lv[i].sum.level = p.at[i].rate;
		}
		sb_results res;
		memset(&res, 0, sizeof(res));
		res.levels = lv;
		res.n_levels = 2;
		CHECK(sb_capacity_check_judge(&p, &res, &e) == 0);
		sb_step_speed st[2];
		for (int i = 0; i < 2; i++)
			CHECK(sb_step_speed_of(&lv[i], &m, &st[i]) == 0);
		CHECK(sb_capacity_check_at_speed(&p, &m, &w, st, 2, &e) == 0);
		for (int i = 0; i < 2; i++) {
			CHECK_NEAR(p.at[i].speed.f_decode, f, 1e-9);
			if (k == 0)
				CHECK_NEAR(p.at[i].pred_speed[SB_CAPACITY_TTFT], p.at[i].pred[SB_CAPACITY_TTFT],
					   1e-9);
			else
				CHECK(p.at[i].pred_speed[SB_CAPACITY_TTFT] > 1.2 * p.at[i].pred[SB_CAPACITY_TTFT]);
			CHECK(isnan(p.at[i].pred_speed[SB_CAPACITY_TPOT]));
		}
	}
	sb_model_fini(&m);
}

/* n engine levels as one measured level in a results file at path: one
 * server (n == 1), or a fleet of n whose k-th server ran L[k], shifted by
 * k x 50 ms, its records naming their replica as `servebench run` writes. */
static void write_results(const engine_level *L, int n, const sb_workload *w, const char *path)
{
	sb_levelacc acc;
	CHECK(sb_levelacc_init(&acc, NULL) == 0);
	json_t *reqs = json_array(), *target = json_pack("{s:i}", "slots", 2);
	json_t *reps = json_array();
	double rate = 0;
	for (int k = 0; k < n; k++) {
		rate += L[k].lv.sum.level;
		json_array_append_new(reps, json_pack("{s:s,s:i}", "url", "engine", "slots", 2));
		for (size_t i = 0; i < L[k].lv.n_reqs; i++) {
			sb_reqrec q = L[k].lv.reqs[i];
			q.id += k * NREQ;
			q.t_scheduled_s = q.t_sent_s += 0.05 * k;
			q.t_done_s = q.t_sent_s + q.e2e_ms / 1000;
			sb_levelacc_add(&acc, &q);
			json_t *j = sb_reqrec_to_json(&q, NULL);
			if (n > 1)
				json_object_set_new(j, "replica", json_integer(k));
			json_array_append_new(reqs, j);
		}
	}
	if (n > 1) {
		json_object_set_new(target, "replicas", reps);
		json_object_set_new(target, "route", json_string("round-robin"));
	} else {
		json_decref(reps);
	}
	sb_level sum;
	sb_levelacc_finish(&acc, rate, SB_MODE_RATE, 0, &sum);
	sb_levelacc_fini(&acc);
	json_t *doc = sb_results_new("measured", target, w);
	CHECK(sb_results_add_level(doc, &sum, reqs) == 0);
	CHECK(json_dump_file(doc, path, 0) == 0);
	json_decref(doc);
}

/* validate of a level the engine ran 1.3x slower than the model: the plain
 * prediction misses, the one at the level's step speed does not (the
 * simulator and the engine schedule alike; no noise on either side). */
static void test_validate_at_step_speed(void)
{
	sb_model m;
	model_for_test(&m);
	static engine_level L;
	engine_run(&L, &m, 1.3, 1.3, 0.1, NULL);
	char dir[] = "/tmp/sb-test-steps.XXXXXX", mp[64], rp[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(mp, sizeof(mp), "%s/model.json", dir);
	snprintf(rp, sizeof(rp), "%s/meas.json", dir);
	json_t *mj = sb_model_to_json(&m);
	CHECK(json_dump_file(mj, mp, 0) == 0);
	json_decref(mj);
	sb_validate_config c;
	sb_validate_config_init(&c);
	c.workload.input_len = (sb_dist){ SB_DIST_DET, PROMPT, 0 };
	c.workload.output_len = (sb_dist){ SB_DIST_DET, OUT, 0 };
	c.workload.warmup = 0;
	write_results(&L, 1, &c.workload, rp);
	c.model_file = mp;
	c.measured = rp;
	c.replications = 3;
	c.forecast = 0;
	sb_validate_result res;
	sb_error e = { "" };
	CHECK(sb_validate_run(&c, &res, &e) == 0);
	CHECK(res.step_adj.n_levels == 1);
	CHECK_NEAR(res.steps[0].f_decode, 1.3, 1e-6);
	CHECK_NEAR(res.steps[0].f_prefill, 1.3, 1e-6);
	double plain = res.cmp.levels[0].err_pct[SB_MET_TTFT_P50];
	double at = res.step_adj.n_levels ? res.step_adj.levels[0].err_pct[SB_MET_TTFT_P50] : NAN;
	CHECK(plain < -20); /* the model 1.3x too fast (-23%), and queueing on top */
	/* no noise on either side: what is left is the percentiles' binning
	 * (0.03% at the median here), the mean's exact */
	CHECK_NEAR(at, 0, 0.1);
	CHECK_NEAR(res.step_adj.levels[0].err_pct[SB_MET_TPOT_MEAN], 0, 1e-6);
	sb_validate_result_fini(&res);

	/* a fleet of two such servers: each step's batch is its own server's
	 * (interleaved, the two would look like batches of up to 4), and the
	 * replay at step speed keeps its per-replica figures apart from the
	 * comparison's (freed once) */
	static engine_level F[2];
	engine_run(&F[0], &m, 1.3, 1.3, 0.1, NULL);
	engine_run(&F[1], &m, 1.3, 1.3, 0.1, NULL);
	write_results(F, 2, &c.workload, rp);
	CHECK(sb_validate_run(&c, &res, &e) == 0);
	CHECK(res.step_adj.n_levels == 1);
	CHECK_NEAR(res.steps[0].f_decode, 1.3, 1e-6);
	CHECK_NEAR(res.steps[0].f_prefill, 1.3, 1e-6);
	CHECK(res.cmp.levels[0].n_replicas == 2 && res.step_adj.levels[0].replicas == NULL);
	sb_validate_result_fini(&res);
	unlink(mp);
	unlink(rp);
	rmdir(dir);
	sb_model_fini(&m);
}

/* The plan's outcome from hand-made levels (every request's TTFT x ms) and
 * simulated runs' ranges: SLO TTFT p50 <= 100 ms. */
static sb_capacity_outcome outcome_of(double x0, double lo0, double hi0, double x1, double lo1,
				  double hi1)
{
	static sb_reqrec rq[2][NREQ];
	sb_rlevel lv[2];
	sb_capacity_check p;
	memset(&p, 0, sizeof(p));
	memset(lv, 0, sizeof(lv));
	p.slo.ttft_ms = 100;
	p.slo.percentile = 50;
	p.replications = 20;
	const double x[2] = { x0, x1 }, lo[2] = { lo0, lo1 }, hi[2] = { hi0, hi1 };
	for (int i = 0; i < 2; i++) {
		p.at[i].rate = i ? 1.15 : 1;
		p.at[i].run_lo[SB_CAPACITY_TTFT] = lo[i];
		p.at[i].run_hi[SB_CAPACITY_TTFT] = hi[i];
		for (int r = 0; r < NREQ; r++)
			rq[i][r] = (sb_reqrec){ .id = r, .ttft_ms = x[i] + r % 5, .e2e_ms = 500,
						.slot = -1, .replica = -1 };
		lv[i].sum.mode = SB_MODE_RATE;
		lv[i].sum.level = p.at[i].rate;
		lv[i].reqs = rq[i];
		lv[i].n_reqs = NREQ;
	}
	sb_results res;
	memset(&res, 0, sizeof(res));
	res.levels = lv;
	res.n_levels = 2;
	sb_error e = { "" };
	CHECK(sb_capacity_check_judge(&p, &res, &e) == 0);
	return p.outcome;
}

/* Wrong only beyond every simulated run; a broken SLO at the planned rate
 * within them is no confirmation either. */
static void test_plan_outcome(void)
{
	CHECK(outcome_of(80, 30, 300, 300, 50, 500) == SB_CAPACITY_CONFIRMED);
	CHECK(outcome_of(150, 30, 300, 300, 50, 500) == SB_CAPACITY_INCONCLUSIVE);
	CHECK(outcome_of(150, 30, 120, 300, 50, 500) == SB_CAPACITY_WRONG);
	CHECK(outcome_of(80, 30, 300, 50, 60, 500) == SB_CAPACITY_WRONG);
	CHECK(outcome_of(80, 30, 300, 50, 40, 500) == SB_CAPACITY_INCONCLUSIVE);
}

int main(void)
{
	test_plan_outcome();
	test_recovers();
	test_per_slot_runs();
	test_plan_at_speed();
	test_validate_at_step_speed();
	CHECK_DONE();
}
