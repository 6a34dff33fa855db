/* fixtures.c — see fixtures.h. */
#include "fixtures.h"

#include <math.h>
#include <stdio.h>

#include <gsl/gsl_cdf.h>

void simfix_model(sb_model *m, int slots, const char *name)
{
	sb_model_init(m);
	snprintf(m->name, sizeof m->name, "%s", name);
	m->slots = slots;
	m->overhead_ms = 15;
	m->decode[0] = (sb_decode_point){ 1, 5.0 };
	m->decode[1] = (sb_decode_point){ 4, 9.0 };
	m->decode[2] = (sb_decode_point){ 8, 15.0 };
	m->n_decode = 3;
	m->per_prefill_token_ms = 0.1;
	m->prefill_base_ms = 5;
}

void simfix_plan_workload(sb_workload *w)
{
	sb_workload_init(w);
	w->mode = SB_MODE_RATE;
	w->input_len = (sb_dist){ SB_DIST_DET, 256, 0 };
	w->output_len = (sb_dist){ SB_DIST_DET, 64, 0 };
	w->requests = 300;
	w->seed = 3;
	w->slo.ttft_ms = 400;
	w->slo.percentile = 99;
}

void simfix_service(sb_model *m, sb_sim_opts *o, int c, sb_dist svc)
{
	sb_model_init(m);
	m->slots = c;
	sb_sim_opts_init(o);
	o->service_mode = 1;
	o->service = svc;
}

double simfix_erlang_c(int c, double a)
{
	double b = 1.0; /* Erlang B by recurrence */
	for (int k = 1; k <= c; k++)
		b = a * b / (k + a * b);
	double rho = a / c;
	return b / (1 - rho + rho * b);
}

void simfix_mean_se(const double *x, int k, double *mean, double *se)
{
	double s = 0, ss = 0;
	for (int i = 0; i < k; i++)
		s += x[i];
	*mean = s / k;
	for (int i = 0; i < k; i++)
		ss += (x[i] - *mean) * (x[i] - *mean);
	*se = sqrt(ss / (k - 1)) / sqrt((double)k);
}

double simfix_t999(int k, double se)
{
	return gsl_cdf_tdist_Pinv(0.9995, k - 1) * se;
}

int simfix_check_exact(const double *x, int k, double exact, const char *what, int width)
{
	double mean, se;
	simfix_mean_se(x, k, &mean, &se);
	double tol = simfix_t999(k, se);
	int ok = fabs(mean - exact) < tol && se < 0.04 * exact;
	printf("%-*s exact %9.5f  sim %9.5f  SE %.5f  tol %.5f  %s\n", width, what, exact, mean,
	       se, tol, ok ? "ok" : "FAIL");
	return ok;
}
