/* fixtures.h — test helper: the hand-built model and workload that several
 * simulator tests share (one definition each, so that a test's expected
 * values and the fixture cannot drift apart file by file).
 *
 * The model (simfix_model): noiseless, decode_ms(1) = 5, (4) = 9, (8) = 15;
 * per_prefill_token 0.1 ms, prefill_base 5 ms, overhead 15 ms; no KV or
 * attention cost, no admit delay; unbounded queue, 2048 batch tokens (the
 * sb_model_init defaults). Tests add what they need on top (the engine test
 * a per_kv_token cost; the fleet plan keeps the first two decode points).
 *
 * The plan workload (simfix_plan_workload): open loop, 256 prompt and 64
 * output tokens, 300 requests, seed 3, a TTFT SLO of 400 ms at p99.
 *
 * And what the closed-form tests (test_sim_analytic, test_fleet_analytic)
 * share: the independent-service setup (M/G/c), Erlang C, the
 * replications' mean and standard error, and the check of that mean
 * against a closed form.
 */
#ifndef SB_TEST_SIM_FIXTURES_H
#define SB_TEST_SIM_FIXTURES_H

#include "core/model.h"
#include "core/workload.h"
#include "sim/sim.h"

/* The model above with `slots` slots, called `name`. */
void simfix_model(sb_model *m, int slots, const char *name);

/* The capacity planner's test workload above. */
void simfix_plan_workload(sb_workload *w);

/* c slots in independent-service mode (no batching), each request served
 * in a time drawn from svc: the closed-form tests' M/G/c. */
void simfix_service(sb_model *m, sb_sim_opts *o, int c, sb_dist svc);

/* Erlang C: the probability that an arrival waits in M/M/c with offered
 * load a (< c). */
double simfix_erlang_c(int c, double a);

/* The mean of x[0..k) (k >= 2 replications) and its standard error
 * (sample standard deviation / sqrt(k)). */
void simfix_mean_se(const double *x, int k, double *mean, double *se);

/* The half-width of the two-sided 99.9% t interval of a mean of k
 * replications with standard error se. */
double simfix_t999(int k, double se);

/* The mean of x[0..k) against the closed form `exact`: within
 * simfix_t999, and a standard error under 4% of exact (the runs long
 * enough to tell). Prints "WHAT exact E  sim M  SE S  tol T  ok|FAIL" (WHAT
 * padded to `width`) and returns 1 when it holds, else 0. */
int simfix_check_exact(const double *x, int k, double exact, const char *what, int width);

#endif
