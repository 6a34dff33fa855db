/* test_uncertainty.c — coefficient names (core/model_param.h), the
 * covariance read from a model's fit, draws from it (sim/uncertainty.h)
 * and the 90% interval of a level's replications (sb_sweep_pi90); a
 * sweep's central figures the same with and without draws.
 *
 * Tolerances: the draws' sample mean within 4 standard errors (sd/sqrt(n))
 * of the model's values, each sample (co)variance within 4 of its standard
 * errors, sqrt((s_ii s_jj + s_ij^2) / n) for n normal draws; the share of
 * draws clipped at 0 within 4 binomial standard errors of Phi(-mean/sd);
 * truncated draws: test_truncated says.
 * Fleet groups: the sd over seeds of a noiseless level's mean TTFT within
 * 4 standard errors (sd / sqrt(2 (n - 1)) for n normal values) of what the
 * groups' draws make it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "../check.h"
#include "core/dist.h"
#include "core/model_param.h"
#include "sim/sweep.h"
#include "sim/uncertainty.h"

#define NDRAW 20000

static void test_names(void)
{
	sb_model m;
	sb_model_init(&m);
	m.decode[0] = (sb_decode_point){ 1, 5.0 };
	m.decode[1] = (sb_decode_point){ 4, 9.0 };
	m.n_decode = 2;
	m.decode_kv[0] = (sb_decode_point){ 4, 0.01 };
	m.n_decode_kv = 1;
	static const char *const scalars[] = { "per_kv_token", "per_prefill_token",
					       "per_prefill_attn", "prefill_base", "overhead_ms",
					       "overhead_per_prompt_token", "admit_delay_ms",
					       "noise_cv", "noise_prefill_cv" };
	for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
		double v = -1;
		CHECK(sb_model_param_set(&m, scalars[i], 1.5 + (double)i, NULL) == 0);
		CHECK(sb_model_param_get(&m, scalars[i], &v, NULL) == 0 && v == 1.5 + (double)i);
	}
	CHECK(m.per_kv_token_ms == 1.5 && m.overhead_ms == 5.5 && m.admit_delay_ms == 7.5);
	CHECK(m.overhead_per_token_ms == 6.5 && m.prefill_base_ms == 4.5);
	CHECK(m.noise_cv == 8.5 && m.noise_prefill_cv == 9.5);
	double v = 0;
	CHECK(sb_model_param_get(&m, "decode_ms[4]", &v, NULL) == 0 && v == 9.0);
	CHECK(sb_model_param_set(&m, "decode_kv[4]", 0.02, NULL) == 0 && m.decode_kv[0].ms == 0.02);
	static const char *const bad[] = { "decode_ms[2]", "decode_ms[0]", "decode_ms[x]",
					   "decode_ms[4", "decode_kv[1]", "noise_kind", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sb_error e = { "" };
		CHECK(sb_model_param_get(&m, bad[i], &v, &e) == -EINVAL);
		CHECK(strstr(e.msg, bad[i]) != NULL);
	}
	CHECK(sb_model_param_floor("decode_ms[4]") == SB_MODEL_PARAM_DECODE_FLOOR_MS);
	CHECK(sb_model_param_floor("overhead_ms") == 0);
}

/* A model with three uncertain coefficients far from 0 (no clipping). */
static const char *const names3[] = { "decode_ms[1]", "overhead_ms", "per_prefill_token" };
static const double cov3[9] = { 0.04, 0.03, 0.0,
				0.03, 0.09, -0.02,
				0.0, -0.02, 0.01 };

static void model3(sb_model *m)
{
	sb_model_init(m);
	m->decode[0] = (sb_decode_point){ 1, 5.0 };
	m->overhead_ms = 20;
	m->per_prefill_token_ms = 2.0;
}

static void test_draws(void)
{
	sb_model m;
	model3(&m);
	sb_uncert u;
	sb_error e;
	CHECK(sb_uncert_init(&u, &m, names3, cov3, 3, &e) == 0);
	gsl_rng *r = sb_rng_new(42);
	double mean[3] = { 5, 20, 2 }, s1[3] = { 0 }, s2[3][3] = { { 0 } };
	for (int k = 0; k < NDRAW; k++) {
		sb_model d;
		CHECK(sb_uncert_draw(&u, &m, r, &d, &e) == 0);
		double x[3] = { d.decode[0].ms - mean[0], d.overhead_ms - mean[1],
				d.per_prefill_token_ms - mean[2] };
		for (int i = 0; i < 3; i++) {
			s1[i] += x[i];
			for (int j = 0; j < 3; j++)
				s2[i][j] += x[i] * x[j];
		}
		sb_model_fini(&d);
	}
	for (int i = 0; i < 3; i++) {
		CHECK_NEAR(s1[i] / NDRAW, 0, 4 * sqrt(cov3[i * 3 + i] / NDRAW));
		for (int j = 0; j < 3; j++) {
			double sij = cov3[i * 3 + j];
			double se = sqrt((cov3[i * 3 + i] * cov3[j * 3 + j] + sij * sij) / NDRAW);
			CHECK_NEAR(s2[i][j] / NDRAW, sij, 4 * se);
		}
	}
	gsl_rng_free(r);
	sb_uncert_fini(&u);
	sb_model_fini(&m);
}

static void test_clipping(void)
{
	sb_model m;
	model3(&m);
	m.overhead_ms = 0.1;
	m.decode[0].ms = 1.0;
	const char *names[2] = { "overhead_ms", "decode_ms[1]" };
	const double cov[4] = { 1.0, 0, 0, 100.0 };
	sb_uncert u;
	sb_error e;
	CHECK(sb_uncert_init(&u, &m, names, cov, 2, &e) == 0);
	gsl_rng *r = sb_rng_new(7);
	int zero = 0, ok = 1;
	for (int k = 0; k < NDRAW; k++) {
		sb_model d;
		ok &= sb_uncert_draw(&u, &m, r, &d, &e) == 0;
		ok &= d.overhead_ms >= 0 && d.decode[0].ms >= SB_MODEL_PARAM_DECODE_FLOOR_MS;
		zero += d.overhead_ms == 0;
		sb_model_fini(&d);
	}
	CHECK(ok);
	double p = gsl_cdf_ugaussian_P(-0.1);
	CHECK_NEAR((double)zero / NDRAW, p, 4 * sqrt(p * (1 - p) / NDRAW));
	gsl_rng_free(r);
	sb_uncert_fini(&u);
	sb_model_fini(&m);
}

/* Mean over NDRAW draws of overhead_ms + per_prefill_token, two
 * coefficients whose sum is pinned (sd 1) while each alone is not (sd 8,
 * mean 8 and 4); the share of draws below 0 or at 0 in *at_floor. */
static double pinned_sum_mean(int truncated, double *at_floor)
{
	sb_model m;
	model3(&m);
	m.overhead_ms = 8;
	m.per_prefill_token_ms = 4;
	const char *names[2] = { "overhead_ms", "per_prefill_token" };
	const double cov[4] = { 64.0, -63.5, -63.5, 64.0 };
	sb_uncert u;
	sb_error e;
	CHECK(sb_uncert_init(&u, &m, names, cov, 2, &e) == 0);
	u.truncated = truncated;
	gsl_rng *r = sb_rng_new(11);
	double sum = 0;
	int floor = 0, ok = 1;
	for (int k = 0; k < NDRAW; k++) {
		sb_model d;
		ok &= sb_uncert_draw(&u, &m, r, &d, &e) == 0;
		sum += d.overhead_ms + d.per_prefill_token_ms;
		floor += d.overhead_ms <= 0 || d.per_prefill_token_ms <= 0;
		sb_model_fini(&d);
	}
	CHECK(ok);
	*at_floor = (double)floor / NDRAW;
	gsl_rng_free(r);
	sb_uncert_fini(&u);
	sb_model_fini(&m);
	return sum / NDRAW;
}

/* E[S | 0 <= a <= S] for S = a + b ~ N(12, 1) and a | S ~ N(8 + (S - 12)/2,
 * 63.75) (pinned_sum_mean's covariance): the truncated normal's mean of the
 * sum, by quadrature over S. */
static double truncated_sum_mean(void)
{
	double num = 0, den = 0, sd_a = sqrt(63.75);
	for (int i = -4000; i <= 4000; i++) {
		double x = 12 + i * 0.002, ma = 8 + (x - 12) / 2;
		double w = exp(-(x - 12) * (x - 12) / 2) *
			   (gsl_cdf_ugaussian_P((x - ma) / sd_a) - gsl_cdf_ugaussian_P(-ma / sd_a));
		num += x * w;
		den += w;
	}
	return num / den;
}

/* A truncated covariance redraws instead of clipping: no draw at the
 * floor, and the pinned sum's mean that of the normal truncated to both
 * coefficients >= 0 (12.07: the region is wider for larger sums), within 4
 * standard errors of 1/sqrt(NDRAW). Not truncated, a coefficient drawn
 * below 0 is set to 0 and the other moves by its regression on it
 * (-63.5/64): the sum moves by 1/128 of what was cut, E[max(-a, 0)] +
 * E[max(-b, 0)] = 0.67 + 1.58 (normal a, b), so its mean stays within
 * 0.018 + 4 standard errors of 12. Plain clipping moved it to 14.25. */
static void test_truncated(void)
{
	double at_floor, se = 1 / sqrt(NDRAW), want = truncated_sum_mean();
	double mean = pinned_sum_mean(1, &at_floor);
	CHECK_MSG(fabs(mean - want) < 4 * se, "truncated: pinned sum's mean %g (%g)", mean, want);
	CHECK_MSG(at_floor == 0, "truncated: %g of the draws at the floor", at_floor);
	mean = pinned_sum_mean(0, &at_floor);
	CHECK_MSG(fabs(mean - 12) < 0.018 + 4 * se, "clipped: pinned sum's mean %g", mean);
	CHECK_MSG(at_floor > 0.3, "clipped: %g of the draws at the floor", at_floor);
}

static void test_bad_matrices(void)
{
	sb_model m;
	model3(&m);
	sb_uncert u;
	sb_error e = { "" };
	const double not_pd[9] = { 1, 2, 0, 2, 1, 0, 0, 0, 1 };
	CHECK(sb_uncert_init(&u, &m, names3, not_pd, 3, &e) == -EINVAL);
	CHECK(strstr(e.msg, "positive definite") != NULL);
	sb_uncert_fini(&u);
	const double asym[9] = { 1, 0.5, 0, 0, 1, 0, 0, 0, 1 };
	CHECK(sb_uncert_init(&u, &m, names3, asym, 3, &e) == -EINVAL);
	CHECK(strstr(e.msg, "symmetric") != NULL);
	sb_uncert_fini(&u);
	const char *unknown[3] = { "decode_ms[1]", "overhead_ms", "decode_ms[8]" };
	CHECK(sb_uncert_init(&u, &m, unknown, cov3, 3, &e) == -EINVAL);
	CHECK(strstr(e.msg, "decode_ms[8]") != NULL);
	sb_uncert_fini(&u);
	sb_model_fini(&m);
}

/* fit.covariance read from a model file's JSON; none in the default. */
static void test_from_model(void)
{
	sb_model m;
	sb_error e;
	sb_uncert u;
	CHECK(sb_model_default(&m, &e) == 0);
	CHECK(sb_uncert_from_model(&u, &m, &e) == 0 && u.n == 0);
	sb_model_fini(&m);
	model3(&m);
	m.fit = json_pack("{s:{s:[s,s],s:[[f,f],[f,f]]}}", "covariance", "params",
			  "decode_ms[1]", "overhead_ms", "matrix", 0.04, 0.03, 0.03, 0.09);
	CHECK(sb_uncert_from_model(&u, &m, &e) == 0 && u.n == 2);
	CHECK(!strcmp(u.names[1], "overhead_ms"));
	CHECK_NEAR(gsl_matrix_get(u.chol, 0, 0), 0.2, 1e-12);
	sb_uncert_fini(&u);
	CHECK(!u.truncated);
	sb_uncert_fini(&u);
	json_t *cj = json_object_get(m.fit, "covariance");
	json_object_set_new(cj, "truncated", json_true());
	CHECK(sb_uncert_from_model(&u, &m, &e) == 0 && u.truncated);
	sb_uncert_fini(&u);
	json_object_set_new(cj, "truncated", json_string("yes"));
	CHECK(sb_uncert_from_model(&u, &m, &e) == -EINVAL && strstr(e.msg, "truncated"));
	sb_uncert_fini(&u);
	json_object_del(cj, "truncated");
	json_object_set_new(cj, "matrix", json_pack("[[f]]", 1.0));
	CHECK(sb_uncert_from_model(&u, &m, &e) == -EINVAL && strstr(e.msg, "matrix"));
	sb_uncert_fini(&u);
	sb_model_fini(&m);
}

/* Mean TTFT of one noiseless replication of a two-replica fleet (one
 * replica of a, one of b, round robin, no queueing), drawn. */
static double fleet_ttft(const sb_model *a, const sb_sim_opts *o, unsigned long seed)
{
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_RATE;
	w.input_len = (sb_dist){ SB_DIST_DET, 16, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, 4, 0 };
	w.requests = 20;
	w.warmup = 0;
	sb_sim_level l;
	sb_error e = { "" };
	CHECK(sb_uncert_run_level(a, o, &w, 0.2, seed, &l, &e) == 0);
	double t = l.sum.ttft_ms.mean;
	sb_sim_level_fini(&l);
	return t;
}

/* The sd over 400 seeds of fleet_ttft with b's group drawn as a
 * calibration of its own (own 1) or as a copy of a (own 0). */
static double fleet_sd(const sb_model *a, const sb_model *b, const sb_uncert *ua,
		       const sb_uncert *ub, int own)
{
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	o.no_noise = 1;
	o.uncert = ua;
	o.fleet.groups[0] = (sb_fleet_group){ .model = NULL, .count = 1 };
	o.fleet.groups[1] = (sb_fleet_group){ .model = b, .count = 1, .uncert = ub,
					      .own_calibration = own };
	o.fleet.n_groups = 2;
	double s1 = 0, s2 = 0;
	const int n = 400;
	for (int k = 0; k < n; k++) {
		double t = fleet_ttft(a, &o, 1000 + (unsigned long)k);
		s1 += t;
		s2 += t * t;
	}
	return sqrt((s2 - s1 * s1 / n) / (n - 1));
}

/* A fleet group's own model is drawn: from its own covariance when it is a
 * calibration of its own, with the level's model's deviates when it is a
 * copy. The replicas take every other request, so the mean TTFT moves by
 * half of each replica's overhead draw. */
static void test_fleet_groups(void)
{
	sb_model a, b;
	model3(&a);
	model3(&b);
	b.overhead_ms = 50;
	const char *names[1] = { "overhead_ms" };
	const double tiny[1] = { 1e-6 }, wide[1] = { 100.0 };
	sb_uncert ua, ub;
	sb_error e;
	const double se = 1.0 / sqrt(2.0 * 399);
	/* a pinned (sd 0.001), b sd 10: the mean moves by 10 / 2 */
	CHECK(sb_uncert_init(&ua, &a, names, tiny, 1, &e) == 0);
	CHECK(sb_uncert_init(&ub, &b, names, wide, 1, &e) == 0);
	double own = fleet_sd(&a, &b, &ua, &ub, 1);
	double none = fleet_sd(&a, &b, &ua, NULL, 1);
	fprintf(stderr, "fleet groups: b drawn sd %.3f (expected 5), not drawn %.5f\n", own, none);
	CHECK_NEAR(own, 5.0, 4 * 5.0 * se);
	CHECK(none < 0.01);
	sb_uncert_fini(&ua);
	/* both sd 10: independent calibrations move the mean by
	 * 10 / sqrt(2), one calibration's copy moves both replicas together */
	CHECK(sb_uncert_init(&ua, &a, names, wide, 1, &e) == 0);
	double indep = fleet_sd(&a, &b, &ua, &ub, 1);
	double same = fleet_sd(&a, &b, &ua, &ub, 0);
	fprintf(stderr, "fleet groups: independent sd %.3f (expected 7.07), a copy %.3f (10)\n",
		indep, same);
	CHECK_NEAR(indep, 10.0 / sqrt(2.0), 4 * 7.07 * se);
	CHECK_NEAR(same, 10.0, 4 * 10.0 * se);
	sb_uncert_fini(&ua);
	sb_uncert_fini(&ub);
	sb_model_fini(&a);
	sb_model_fini(&b);
}

static void test_pi90(void)
{
	double x[22];
	for (int i = 0; i < 21; i++)
		x[i] = 21 - i; /* 1..21 reversed */
	x[21] = NAN;
	double lo, hi;
	sb_sweep_pi90(x, 22, &lo, &hi);
	/* prediction positions 0.05 x 22 = 1.1 and 0.95 x 22 = 20.9 */
	CHECK_NEAR(lo, 1.1, 1e-12);
	CHECK_NEAR(hi, 20.9, 1e-12);
	double y[19];
	for (int i = 0; i < 19; i++)
		y[i] = i * i;
	sb_sweep_pi90(y, 19, &lo, &hi); /* 19 values: a 20th is outside 2 in 20 */
	CHECK_NEAR(lo, 0.0, 1e-12);
	CHECK_NEAR(hi, 324.0, 1e-12);
	double one[1] = { 3 };
	sb_sweep_pi90(one, 1, &lo, &hi);
	CHECK(isnan(lo) && isnan(hi));
}

/* With draws a sweep's central figures are those without (the model as it
 * is, the same seeds), bit for bit, and only the draws give 90% intervals,
 * which hold the central figure of a coefficient spread this wide. */
static void test_central(void)
{
	sb_model m;
	model3(&m);
	sb_uncert u;
	sb_error e = { "" };
	CHECK(sb_uncert_init(&u, &m, names3, cov3, 3, &e) == 0);
	sb_workload w;
	sb_workload_init(&w);
	w.mode = SB_MODE_CONCURRENCY;
	w.n_levels = 1;
	w.levels[0] = 1;
	w.input_len = (sb_dist){ SB_DIST_DET, 16, 0 };
	w.output_len = (sb_dist){ SB_DIST_DET, 8, 0 };
	w.requests = 20;
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	sb_sweep plain, drawn;
	CHECK(sb_sweep_run(&m, &o, &w, 8, &plain, &e) == 0);
	o.uncert = &u;
	CHECK(sb_sweep_run(&m, &o, &w, 8, &drawn, &e) == 0);
	const sb_sweep_level *a = &plain.levels[0], *b = &drawn.levels[0];
	CHECK(a->drawn == NULL && b->drawn != NULL && drawn.uncertain);
	for (int k = 0; k < SB_MET_N; k++) {
		CHECK(a->mean[k] == b->mean[k] || (isnan(a->mean[k]) && isnan(b->mean[k])));
		CHECK(isnan(a->lo90[k]) && isnan(a->hi90[k]));
	}
	CHECK(b->lo90[SB_MET_E2E_P50] < b->mean[SB_MET_E2E_P50]);
	CHECK(b->hi90[SB_MET_E2E_P50] > b->mean[SB_MET_E2E_P50]);
	sb_sweep_fini(&plain);
	sb_sweep_fini(&drawn);
	sb_uncert_fini(&u);
	sb_model_fini(&m);
}

int main(void)
{
	test_names();
	test_draws();
	test_clipping();
	test_truncated();
	test_bad_matrices();
	test_from_model();
	test_fleet_groups();
	test_pi90();
	test_central();
	CHECK_DONE();
}
