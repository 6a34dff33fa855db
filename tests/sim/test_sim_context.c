/* test_sim_context.c — requests that do not fit a slot's context
 * (model ctx_per_slot, context_overflow; core/slotctx.h) in the simulator:
 * rejected as too long (llama.cpp), truncated (Ollama), outputs stopped at
 * the context, and the counts in the level. Without noise the expected
 * values are exact consequences of the rules; the share of too-long prompts
 * drawn from a log-normal is held to 4 binomial standard errors of its
 * exact probability. */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/model.h"
#include "core/slotctx.h"
#include "core/workload.h"
#include "sim/sim.h"
#include "../check.h"

static void model(sb_model *m, long ctx, sb_ctx_overflow ov)
{
	sb_model_init(m);
	m->slots = 2;
	m->overhead_ms = 10;
	m->decode[0] = (sb_decode_point){ 1, 5.0 };
	m->n_decode = 1;
	m->per_prefill_token_ms = 0.1;
	m->prefill_base_ms = 5;
	m->ctx_per_slot = ctx;
	m->context_overflow = ov;
}

/* Closed loop at 2 clients, n requests of lengths in (a distribution) and
 * out, records kept. */
static int run(const sb_model *m, sb_dist in, long out, long n, sb_sim_level *lv)
{
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	o.no_noise = 1;
	o.keep_records = 1;
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_CONCURRENCY;
	w.input_len = in;
	w.output_len = (sb_dist){ SB_DIST_DET, (double)out, 0 };
	w.requests = n;
	w.warmup = 0;
	sb_error e = { "" };
	int rc = sb_sim_run_level(m, &o, &w, 2, 7, lv, &e);
	if (rc < 0)
		fprintf(stderr, "run failed: %s\n", e.msg);
	return rc;
}

static sb_dist det(long n)
{
	return (sb_dist){ SB_DIST_DET, (double)n, 0 };
}

/* llama.cpp: a prompt of ctx tokens is refused; one of ctx - 1 runs. */
static void test_reject(void)
{
	sb_model m;
	sb_sim_level lv;
	model(&m, 1024, SB_CTX_REJECT);
	CHECK_MSG(run(&m, det(1024), 10, 50, &lv) == 0, "run");
	CHECK_MSG(lv.too_long == 50 && lv.rejected == 50 && lv.sum.requests_ok == 0,
	          "too_long %ld rejected %ld ok %ld", lv.too_long, lv.rejected, lv.sum.requests_ok);
	CHECK_MSG(lv.n_recs == 50 && lv.recs[0].rejected == SB_SIM_REJECT_TOO_LONG &&
	          lv.recs[0].output_tokens == 0, "records");
	CHECK_MSG(!strcmp(sb_sim_reject_msg(SB_SIM_REJECT_TOO_LONG), "prompt exceeds the slot's context"),
	          "message");
	sb_sim_level_fini(&lv);
	/* 1023 fits and yields one token (the output stops at the context) */
	CHECK_MSG(run(&m, det(1023), 10, 50, &lv) == 0, "run");
	CHECK_MSG(lv.too_long == 0 && lv.output_cut == 50 && lv.sum.requests_ok == 50,
	          "too_long %ld cut %ld ok %ld", lv.too_long, lv.output_cut, lv.sum.requests_ok);
	CHECK_MSG(lv.recs[0].output_tokens == 1, "output %ld", lv.recs[0].output_tokens);
	sb_sim_level_fini(&lv);
	/* 1000 + 100 wanted: 24 generated */
	CHECK_MSG(run(&m, det(1000), 100, 20, &lv) == 0, "run");
	CHECK_MSG(lv.output_cut == 20 && lv.recs[3].output_tokens == 24, "cut %ld output %ld",
	          lv.output_cut, lv.recs[3].output_tokens);
	sb_sim_level_fini(&lv);
}

/* Ollama: a 3000-token prompt in a 1024 context runs as 514 tokens (4 kept
 * + the last 510), exactly as a 514-token prompt would. */
static void test_truncate(void)
{
	sb_model m, u;
	sb_sim_level a, b;
	model(&m, 1024, SB_CTX_TRUNCATE);
	model(&u, 0, SB_CTX_REJECT);
	CHECK_MSG(run(&m, det(3000), 50, 40, &a) == 0 && run(&u, det(514), 50, 40, &b) == 0, "runs");
	CHECK_MSG(a.truncated == 40 && a.too_long == 0 && a.rejected == 0 && a.output_cut == 0,
	          "truncated %ld", a.truncated);
	CHECK_MSG(a.recs[5].prompt_tokens == 514 && a.recs[5].output_tokens == 50, "prompt %ld",
	          a.recs[5].prompt_tokens);
	CHECK_MSG(a.sum.ttft_ms.p50 == b.sum.ttft_ms.p50 && a.sum.e2e_ms.p99 == b.sum.e2e_ms.p99,
	          "ttft %g vs %g", a.sum.ttft_ms.p50, b.sum.ttft_ms.p50);
	CHECK_MSG(b.truncated == 0 && b.too_long == 0, "unlimited context counts nothing");
	sb_sim_level_fini(&a);
	sb_sim_level_fini(&b);
}

/* Log-normal prompts around the context: the share refused is
 * P(round(X) >= 1024) = Q((ln 1023.5 - mu) / sigma). */
static void test_share(void)
{
	sb_model m;
	sb_sim_level lv;
	model(&m, 1024, SB_CTX_REJECT);
	double mu = log(1000.0), sigma = 0.5;
	long n = 4000;
	CHECK_MSG(run(&m, (sb_dist){ SB_DIST_LOGNORMAL, mu, sigma }, 4, n, &lv) == 0, "run");
	double p = gsl_cdf_ugaussian_Q((log(1023.5) - mu) / sigma);
	double se = sqrt(p * (1 - p) / (double)n), got = (double)lv.too_long / (double)n;
	CHECK_MSG(fabs(got - p) <= 4 * se, "too long %.4f, expected %.4f +- %.4f", got, p, 4 * se);
	CHECK_MSG(lv.rejected == lv.too_long && lv.sum.requests_ok == n - lv.too_long,
	          "rejected %ld ok %ld", lv.rejected, lv.sum.requests_ok);
	sb_sim_level_fini(&lv);
}

int main(void)
{
	test_reject();
	test_truncate();
	test_share();
	if (check_failures)
		fprintf(stderr, "%d check(s) failed\n", check_failures);
	return check_failures ? 1 : 0;
}
