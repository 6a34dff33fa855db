/* test_replay_fleet.c — replaying a list of requests through a simulated
 * fleet (sb_replay_opts.fleet): the simulated router decides where each
 * replayed request goes.
 *
 *  - round-robin, open loop, no noise: the routed replay of 600 Poisson
 *    arrivals equals, request by request, replaying the even and the odd
 *    ones (in send order) each on a server of its own (exact: the replicas
 *    share no state and no noise is drawn; tolerance 1e-9 ms for rounding
 *    only); recorded slots are ignored by a routed replay;
 *  - least-outstanding against brute force: with no overhead and no
 *    release time a request reaches its replica when it is sent and a slot
 *    is busy exactly while its request is in flight, so the in-flight
 *    counts rebuilt from the predictions (sent before, done after) say
 *    which replicas had a free slot; every request must go to a replica
 *    with the fewest in flight, and none may wait for a slot while another
 *    replica had one free. Round-robin on the same arrivals does leave
 *    requests waiting beside a free slot (the check can fail);
 *  - closed loop through a fleet: every request predicted, each replica
 *    used; a fleet the simulator refuses is an error naming it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "../check.h"
#include "core/dist.h"
#include "sim/sim.h"

enum { N = 600, REPLICAS = 3, SLOTS = 2 };

static void test_model(sb_model *m, double overhead_ms)
{
	sb_model_init(m);
	snprintf(m->name, sizeof m->name, "test");
	m->slots = SLOTS;
	m->max_queue = -1;
	m->batch_tokens = 2048;
	m->overhead_ms = overhead_ms;
	m->overhead_sd_ms = 0;
	m->decode[0] = (sb_decode_point){ 1, 5.0 };
	m->decode[1] = (sb_decode_point){ 2, 6.0 };
	m->n_decode = 2;
	m->per_kv_token_ms = 1e-4;
	m->per_prefill_token_ms = 0.1;
	m->prefill_base_ms = 5;
	m->noise_kind = SB_NOISE_NONE;
}

/* n Poisson arrivals at `rate` per second, random lengths, sorted by send
 * time; slot as given. */
static void make_reqs(sb_replay_req *rq, size_t n, double rate, int slot, unsigned long seed)
{
	gsl_rng *g = sb_rng_new(seed);
	double t = 0;
	for (size_t i = 0; i < n; i++) {
		t += gsl_ran_exponential(g, 1.0 / rate);
		rq[i] = (sb_replay_req){ .t_sched_s = t,
					 .prompt_tokens = 20 + (long)gsl_rng_uniform_int(g, 200),
					 .output_tokens = 5 + (long)gsl_rng_uniform_int(g, 40),
					 .slot = slot };
	}
	gsl_rng_free(g);
}

static int same_pred(const sb_replay_pred *a, const sb_replay_pred *b)
{
	return fabs(a->t_done_s - b->t_done_s) <= 1e-12 && fabs(a->ttft_ms - b->ttft_ms) <= 1e-9 &&
	       fabs(a->e2e_ms - b->e2e_ms) <= 1e-9 && fabs(a->wait_ms - b->wait_ms) <= 1e-9 &&
	       a->rejected == b->rejected;
}

static void test_round_robin_halves(void)
{
	sb_model m;
	test_model(&m, 15);
	static sb_replay_req rq[N], half[N / 2];
	static sb_replay_pred p[N], ph[N / 2], ps[N];
	make_reqs(rq, N, 40, -1, 3); /* ~85% of two replicas' capacity */
	sb_fleet f;
	sb_fleet_init(&f);
	f.replicas = 2;
	f.route = SB_ROUTE_ROUND_ROBIN;
	sb_replay_opts ro = { .mode = SB_MODE_RATE, .seed = 1, .no_noise = 1, .fleet = &f };
	sb_error e = { "" };
	sb_level lv;
	CHECK(sb_sim_replay(&m, &ro, rq, N, p, &lv, &e) == 0);
	CHECK(lv.requests_ok == N);
	long queued = 0;
	for (int h = 0; h < 2; h++) {
		for (size_t i = 0; i < N / 2; i++)
			half[i] = rq[2 * i + (size_t)h];
		sb_replay_opts one = ro;
		one.fleet = NULL;
		CHECK(sb_sim_replay(&m, &one, half, N / 2, ph, NULL, &e) == 0);
		int bad = 0;
		for (size_t i = 0; i < N / 2; i++) {
			const sb_replay_pred *q = &p[2 * i + (size_t)h];
			bad += q->replica != h || !same_pred(q, &ph[i]);
			queued += q->wait_ms > 20; /* waited beyond a step */
		}
		CHECK(bad == 0);
	}
	CHECK(queued > 20); /* the case exercises the queues */
	/* recorded slots name a slot of one server: a routed replay ignores them */
	for (size_t i = 0; i < N; i++)
		rq[i].slot = 1;
	CHECK(sb_sim_replay(&m, &ro, rq, N, ps, NULL, &e) == 0);
	int diff = 0;
	for (size_t i = 0; i < N; i++)
		diff += !same_pred(&p[i], &ps[i]);
	CHECK(diff == 0);
	sb_model_fini(&m);
}

/* Brute force over the predictions (sorted by send time): returns how many
 * requests went to a replica without the fewest in flight (*not_min) and
 * how many waited for a slot while another replica had one free. */
static long waits_beside_free(const sb_replay_pred *p, size_t n, long *not_min)
{
	long bad = 0;
	*not_min = 0;
	for (size_t i = 0; i < n; i++) {
		long infl[REPLICAS] = { 0 };
		for (size_t j = 0; j < i; j++)
			infl[p[j].replica] += p[j].t_done_s > p[i].t_sent_s;
		long min = infl[0];
		for (int r = 1; r < REPLICAS; r++)
			min = infl[r] < min ? infl[r] : min;
		*not_min += infl[p[i].replica] != min;
		bad += infl[p[i].replica] >= SLOTS && min < SLOTS;
	}
	return bad;
}

static void test_least_outstanding(void)
{
	sb_model m;
	test_model(&m, 0);
	static sb_replay_req rq[N];
	static sb_replay_pred p[N];
	make_reqs(rq, N, 55, -1, 7);
	sb_fleet f;
	sb_fleet_init(&f);
	f.replicas = REPLICAS;
	f.route = SB_ROUTE_LEAST_OUTSTANDING;
	sb_replay_opts ro = { .mode = SB_MODE_RATE, .seed = 2, .no_noise = 1, .fleet = &f };
	sb_error e = { "" };
	CHECK(sb_sim_replay(&m, &ro, rq, N, p, NULL, &e) == 0);
	long not_min, queued = 0, used[REPLICAS] = { 0 };
	CHECK(waits_beside_free(p, N, &not_min) == 0);
	CHECK(not_min == 0);
	for (size_t i = 0; i < N; i++) {
		queued += p[i].wait_ms > 20;
		used[p[i].replica]++;
	}
	CHECK(queued > 10); /* some requests did find every slot busy */
	for (int r = 0; r < REPLICAS; r++)
		CHECK(used[r] > N / 5);
	/* the check discriminates: round-robin ignores the state */
	f.route = SB_ROUTE_ROUND_ROBIN;
	CHECK(sb_sim_replay(&m, &ro, rq, N, p, NULL, &e) == 0);
	CHECK(waits_beside_free(p, N, &not_min) > 0);
	sb_model_fini(&m);
}

static void test_closed_and_bad(void)
{
	sb_model m;
	test_model(&m, 15);
	static sb_replay_req rq[N];
	static sb_replay_pred p[N];
	make_reqs(rq, N, 40, -1, 9);
	sb_fleet f;
	sb_fleet_init(&f);
	f.replicas = REPLICAS;
	f.route = SB_ROUTE_LEAST_OUTSTANDING;
	sb_replay_opts ro = { .mode = SB_MODE_CONCURRENCY, .concurrency = 8, .seed = 4,
			      .fleet = &f };
	sb_error e = { "" };
	sb_level lv;
	CHECK(sb_sim_replay(&m, &ro, rq, N, p, &lv, &e) == 0);
	long used[REPLICAS] = { 0 }, finite = 0;
	for (size_t i = 0; i < N; i++) {
		used[p[i].replica]++;
		finite += isfinite(p[i].e2e_ms) && isfinite(p[i].ttft_ms);
	}
	CHECK(finite == N);
	for (int r = 0; r < REPLICAS; r++)
		CHECK(used[r] > 0);
	CHECK_NEAR(lv.level, 8, 0);
	f.replicas = -3;
	CHECK(sb_sim_replay(&m, &ro, rq, N, p, NULL, &e) == -EINVAL);
	CHECK(strstr(e.msg, "-3") != NULL);
	sb_model_fini(&m);
}

int main(void)
{
	test_round_robin_halves();
	test_least_outstanding();
	test_closed_and_bad();
	return check_report("sim-replay-fleet");
}
