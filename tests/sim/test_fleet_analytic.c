/* test_fleet_analytic.c — fleets of replicas behind a router against
 * closed forms (independent-service mode, Poisson arrivals, exp(1) service):
 *
 *  - random routing splits a Poisson stream into N independent Poisson
 *    streams of rate lambda/N: each replica is an M/M/c queue, and the mean
 *    wait is Erlang C's;
 *  - round-robin to single-slot replicas: each replica sees the sum of N
 *    exponential gaps (Erlang-N), an E_N/M/1 queue whose mean wait is
 *    sigma/(mu(1-sigma)) with sigma in (0,1) solving
 *    sigma = (N lam/(N lam + mu(1-sigma)))^N (lam the per-replica rate),
 *    solved here by fixed-point iteration;
 *  - least-queued is never worse than random on identical replicas (same
 *    seeds: the same arrivals), compared through the replications' paired
 *    differences;
 *  - no fleet of N single-slot replicas, whatever the route, beats one
 *    M/M/N queue (Erlang C with c = N) in mean wait;
 *  - Little's law per replica and for the fleet in every run (both sides
 *    are one integral computed two ways: only rounding may differ).
 *
 * Tolerances as in test_sim_analytic.c: K replications give a mean and its
 * standard error SE; a closed form must lie within t(0.9995, K-1) * SE (a
 * two-sided 99.9% Student-t bound; fixed seeds, so no flakes), and SE must
 * be under 4% of the exact value so that no check passes vacuously. The
 * first 2% of each replication's customers are not counted (the fleet
 * starts empty).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/model.h"
#include "core/workload.h"
#include "sim/sim.h"
#include "fixtures.h"

enum { K = 8 };

static int fails, checks;

/* M/M/c's mean wait with offered load a (mean service 1 s). */
static double erlang_c_wait(int c, double a)
{
	return simfix_erlang_c(c, a) / (c - a);
}

/* E_k/M/1 with per-replica arrival rate lam, service rate mu: mean wait. */
static double ek_m1_wait(int k, double lam, double mu)
{
	double s = 0.5;
	for (int it = 0; it < 100000; it++) {
		double nx = pow(k * lam / (k * lam + mu * (1 - s)), k);
		if (fabs(nx - s) < 1e-15)
			break;
		s = nx;
	}
	return s / (mu * (1 - s));
}

static void fail(const char *what, const char *why)
{
	fprintf(stderr, "FAIL %s: %s\n", what, why);
	fails++;
}

/* Little's law for the fleet and each replica of one run. */
static void check_little(const char *what, const sb_sim_level *lv)
{
	checks++;
	if (!(fabs(lv->sum.l_law - lv->sum.l_observed) <= 1e-9 * fabs(lv->sum.l_law) + 1e-12))
		fail(what, "Little's law for the fleet");
	long n = 0;
	for (int i = 0; i < lv->n_replicas; i++) {
		const sb_sim_replica *p = &lv->replicas[i];
		n += p->requests;
		checks++;
		if (!(fabs(p->l_law - p->mean_inflight) <= 1e-9 * fabs(p->l_law) + 1e-12)) {
			fprintf(stderr, "  replica %d: lambda*W %.12g vs L %.12g\n", i, p->l_law,
				p->mean_inflight);
			fail(what, "Little's law for a replica");
		}
	}
	checks++;
	if (n != (long)(lv->sum.requests_ok + lv->sum.requests_failed))
		fail(what, "the replicas' requests do not add up to the fleet's");
}

/* K replications of N replicas x c slots at total rate lambda routed by r:
 * each replication's mean wait (s) into x. Returns 0 or -1. */
static int run_fleet(const char *what, sb_route r, int N, int c, double lambda, long n,
		     unsigned long seed, double *x)
{
	sb_model m;
	sb_sim_opts o;
	simfix_service(&m, &o, c, (sb_dist){ SB_DIST_EXP, 1.0, 0 });
	o.fleet.replicas = N;
	o.fleet.route = r;
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_RATE;
	w.requests = n;
	w.warmup = n / 50;
	for (int k = 0; k < K; k++) {
		sb_sim_level lv;
		sb_error e = { "" };
		if (sb_sim_run_level(&m, &o, &w, lambda, sb_seed_derive(seed, (unsigned long)N,
									(unsigned long)k),
				     &lv, &e) < 0) {
			fail(what, e.msg);
			return -1;
		}
		checks++;
		if (lv.n_replicas != N)
			fail(what, "no per-replica figures");
		x[k] = lv.sum.wait_ms.mean / 1000.0;
		check_little(what, &lv);
		sb_sim_level_fini(&lv);
	}
	sb_model_fini(&m);
	return 0;
}

/* The replications' mean wait against a closed form. */
static void check_exact(const char *what, const double *x, double exact)
{
	checks++;
	if (!simfix_check_exact(x, K, exact, what, 40))
		fails++;
}

static void check_random_mmc(int N, int c, double rho, long n)
{
	char what[96];
	double x[K], lambda = rho * N * c;
	snprintf(what, sizeof what, "random %d x M/M/%d rho=%.2f", N, c, rho);
	if (run_fleet(what, SB_ROUTE_RANDOM, N, c, lambda, n, 4101, x) == 0)
		check_exact(what, x, erlang_c_wait(c, lambda / N));
}

static void check_round_robin(int N, double rho, long n)
{
	char what[96];
	double x[K], lambda = rho * N;
	snprintf(what, sizeof what, "round-robin %d x E%d/M/1 rho=%.2f", N, N, rho);
	if (run_fleet(what, SB_ROUTE_ROUND_ROBIN, N, 1, lambda, n, 4202, x) == 0)
		check_exact(what, x, ek_m1_wait(N, lambda / N, 1.0));
}

/* least-queued against random, same seeds: the paired differences'
 * mean must not be below -t * SE (least-queued not worse). */
static void check_lq_vs_random(int N, int c, double rho, long n)
{
	char what[96];
	double xr[K], xq[K], d[K], lambda = rho * N * c;
	snprintf(what, sizeof what, "least-queued vs random %d x %d rho=%.2f", N, c, rho);
	if (run_fleet(what, SB_ROUTE_RANDOM, N, c, lambda, n, 4303, xr) < 0 ||
	    run_fleet(what, SB_ROUTE_LEAST_QUEUED, N, c, lambda, n, 4303, xq) < 0)
		return;
	for (int k = 0; k < K; k++)
		d[k] = xr[k] - xq[k];
	double mean, se;
	simfix_mean_se(d, K, &mean, &se);
	double tol = simfix_t999(K, se);
	int ok = mean > -tol;
	checks++;
	printf("%-40s random - least-queued %9.5f s  SE %.5f  %s\n", what, mean, se,
	       ok ? "ok" : "FAIL");
	if (!ok)
		fails++;
}

/* Every route of N single-slot replicas: mean wait no less than M/M/N's. */
static void check_no_route_beats_mmn(int N, double rho, long n)
{
	double lambda = rho * N, exact = erlang_c_wait(N, lambda);
	for (int r = 0; r < SB_ROUTE_N; r++) {
		char what[96];
		double x[K], mean, se;
		snprintf(what, sizeof what, "%s %d x 1 vs M/M/%d rho=%.2f",
			 sb_route_name((sb_route)r), N, N, rho);
		if (run_fleet(what, (sb_route)r, N, 1, lambda, n, 4404, x) < 0)
			continue;
		simfix_mean_se(x, K, &mean, &se);
		double tol = simfix_t999(K, se);
		int ok = mean > exact - tol;
		checks++;
		printf("%-40s M/M/%d %9.5f  sim %9.5f  SE %.5f  %s\n", what, N, exact, mean, se,
		       ok ? "ok" : "FAIL");
		if (!ok)
			fails++;
	}
}

int main(void)
{
	check_random_mmc(4, 2, 0.8, 200000);
	check_random_mmc(3, 1, 0.7, 150000);
	check_random_mmc(10, 4, 0.9, 400000);
	check_round_robin(2, 0.8, 200000);
	check_round_robin(4, 0.9, 300000);
	check_lq_vs_random(4, 2, 0.85, 100000);
	check_lq_vs_random(8, 1, 0.9, 100000);
	check_no_route_beats_mmn(4, 0.8, 100000);
	printf("%d checks, %d failures\n", checks, fails);
	return fails ? 1 : 0;
}
