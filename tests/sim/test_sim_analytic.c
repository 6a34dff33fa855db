/* test_sim_analytic.c — the independent-service mode against closed forms.
 *
 *  - M/M/c mean wait vs Erlang C, c in {1,2,4,8,16}, utilisation 0.5, 0.8,
 *    0.95;
 *  - M/G/1 mean wait vs Pollaczek-Khinchine (deterministic, gamma and
 *    log-normal service);
 *  - the closed loop as the machine-repair model M/M/c//N (N clients with
 *    exponential think time, c servers): exact mean response time;
 *  - Little's law (lambda*W vs the time-averaged number in system) in every
 *    run.
 *
 * Tolerances come from the runs themselves: K independent replications
 * give a mean and a standard error SE (sample sd / sqrt(K)); the check is
 * |mean - exact| < t(0.9995, K-1) * SE, a two-sided 99.9% Student-t bound,
 * so a correct simulator fails one comparison with probability 0.001 (the
 * seeds are fixed, so a run is reproducible and cannot flake). The initial
 * transient (the queue starts empty) is removed by deleting the first 2% of
 * customers of each replication, far more than the queue's relaxation time
 * (~1/(1-sqrt(rho))^2 ~ 1600 mean services at rho=0.95). So that the test
 * cannot pass vacuously, each comparison also requires SE < 4% of the exact
 * value: a simulator off by 20% would fail.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/model.h"
#include "core/workload.h"
#include "sim/sim.h"
#include "fixtures.h"

static int fails, checks;

/* Runs K replications of an open-loop Poisson M/G/c and compares the mean
 * wait (seconds) with `exact`. */
static void check_wait(const char *what, int c, double lambda, const sb_dist *svc,
		       long n, double exact)
{
	const int K = 8;
	sb_model m;
	sb_sim_opts o;
	simfix_service(&m, &o, c, *svc);
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_RATE;
	w.requests = n;
	w.warmup = n / 50;
	double x[16];
	for (int k = 0; k < K; k++) {
		sb_sim_level lv;
		sb_error e = { "" };
		if (sb_sim_run_level(&m, &o, &w, lambda, sb_seed_derive(977, (unsigned long)c, (unsigned long)k), &lv, &e) < 0) {
			fprintf(stderr, "FAIL %s: %s\n", what, e.msg);
			fails++;
			return;
		}
		x[k] = lv.sum.wait_ms.mean / 1000.0;
		/* Little's law holds on every sample path: both sides are the
		 * same integral computed two ways, so only rounding differs */
		double ll = lv.sum.l_law, lo = lv.sum.l_observed;
		checks++;
		if (!(fabs(ll - lo) <= 1e-9 * fabs(ll) + 1e-12)) {
			fprintf(stderr, "FAIL %s rep %d: Little: lambda*W %.12g vs L %.12g\n", what,
				k, ll, lo);
			fails++;
		}
		sb_sim_level_fini(&lv);
	}
	checks++;
	if (!simfix_check_exact(x, K, exact, what, 28))
		fails++;
	sb_model_fini(&m);
}

/* Closed loop: N clients thinking exp(Z) between requests, c servers with
 * exp(1) service. The number at the servers is a birth-death chain with
 * birth rate (N-n)/Z and death rate min(n,c); throughput X = sum p_n
 * min(n,c), mean response time R = N/X - Z (Little over the whole loop). */
static void check_closed(int N, int c, double Z)
{
	const int K = 8;
	double p[64], tot = 0, X = 0;
	p[0] = 1;
	for (int n = 1; n <= N; n++)
		p[n] = p[n - 1] * ((N - n + 1) / Z) / (n < c ? n : c);
	for (int n = 0; n <= N; n++)
		tot += p[n];
	for (int n = 0; n <= N; n++)
		X += p[n] / tot * (n < c ? n : c);
	double exact = N / X - Z;
	sb_model m;
	sb_sim_opts o;
	simfix_service(&m, &o, c, (sb_dist){ SB_DIST_EXP, 1.0, 0 });
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_CONCURRENCY;
	w.think_s = (sb_dist){ SB_DIST_EXP, Z, 0 };
	w.requests = 200000;
	w.warmup = 4000;
	double x[16];
	for (int k = 0; k < K; k++) {
		sb_sim_level lv;
		sb_error e = { "" };
		if (sb_sim_run_level(&m, &o, &w, N, sb_seed_derive(31, (unsigned long)N, (unsigned long)k), &lv, &e) < 0) {
			fprintf(stderr, "FAIL closed loop: %s\n", e.msg);
			fails++;
			return;
		}
		x[k] = lv.sum.e2e_ms.mean / 1000.0;
		sb_sim_level_fini(&lv);
	}
	char what[64];
	snprintf(what, sizeof what, "M/M/%d//%d think %.1f s      ", c, N, Z);
	checks++;
	if (!simfix_check_exact(x, K, exact, what, 0))
		fails++;
	sb_model_fini(&m);
}

int main(void)
{
	static const int cs[] = { 1, 2, 4, 8, 16 };
	static const double rhos[] = { 0.5, 0.8, 0.95 };
	char what[64];
	for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
		for (size_t j = 0; j < sizeof rhos / sizeof rhos[0]; j++) {
			int c = cs[i];
			double rho = rhos[j];
			double lambda = rho * c; /* mean service 1 s */
			sb_dist svc = { SB_DIST_EXP, 1.0, 0 };
			/* heavier load needs longer runs for the same precision */
			long n = rho > 0.9 ? (c < 4 ? 800000 : 300000) : 100000;
			if (c >= 16)
				n *= rho > 0.9 ? 2 : 4; /* tiny waits: rare queueing */
			double exact = simfix_erlang_c(c, lambda) / (c - lambda);
			snprintf(what, sizeof what, "M/M/%d rho=%.2f", c, rho);
			check_wait(what, c, lambda, &svc, n, exact);
		}
	/* Pollaczek-Khinchine: Wq = lambda E[S^2] / (2 (1 - rho)) */
	const sb_dist svcs[] = {
		{ SB_DIST_DET, 1.0, 0 },
		{ SB_DIST_GAMMA, 0.5, 2.0 },      /* mean 1, scv 2 */
		{ SB_DIST_LOGNORMAL, -0.125, 0.5 }, /* mean exp(mu+s^2/2) = 1 */
	};
	const char *names[] = { "M/D/1", "M/Gamma/1", "M/LogN/1" };
	for (size_t i = 0; i < 3; i++)
		for (size_t j = 0; j < 2; j++) {
			double rho = j == 0 ? 0.5 : 0.8;
			double mean = sb_dist_mean(&svcs[i]);
			double es2 = mean * mean * (1 + sb_dist_scv(&svcs[i]));
			double lambda = rho / mean;
			double exact = lambda * es2 / (2 * (1 - rho));
			snprintf(what, sizeof what, "%s rho=%.2f", names[i], rho);
			check_wait(what, 1, lambda, &svcs[i], 200000, exact);
		}
	check_closed(6, 2, 2.0);
	check_closed(16, 4, 1.0);
	printf("%d checks, %d failures\n", checks, fails);
	return fails ? 1 : 0;
}
