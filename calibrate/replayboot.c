/* replayboot.c — the replay fit's uncertainty by parametric bootstrap
 * (replayfit.h): what the coefficients would come out as had the same
 * requests met the fitted server again. The fitted model, with the step
 * noise the fit leaves unexplained, replays the file RF_BOOT times (seeds
 * 1..RF_BOOT); each replay's TTFT and TPOT stand in for the measurements
 * and are fitted again from the fitted coefficients; the refits' spread is
 * the covariance. It holds what one run's queue does to a fit (a step a
 * little slower early moves every later wait) and the ridges the file does
 * not separate, which the residuals at one optimum do not. Refits run on
 * o.jobs threads; the result does not depend on them. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/replayfit_internal.h"
#include "core/stats.h"

int rf_problem_clone(rf_problem *dst, const rf_problem *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->o = src->o;
	dst->np = src->np;
	dst->noise_cv = src->noise_cv;
	memcpy(dst->held, src->held, sizeof(dst->held));
	dst->fleet = src->fleet;
	sb_model_copy(&dst->m, &src->m);
	dst->lv = calloc(src->n_lv, sizeof(*dst->lv));
	dst->res = malloc(rf_n_residuals(src) * sizeof(double));
	if (!dst->lv || !dst->res)
		return -ENOMEM;
	for (size_t i = 0; i < src->n_lv; i++, dst->n_lv++) {
		const rf_level *S = &src->lv[i];
		rf_level *L = &dst->lv[i];
		*L = *S;
		if (S->ro.fleet)
			L->ro.fleet = &dst->fleet;
		L->pd = malloc(S->n * sizeof(*L->pd));
		L->ttft = malloc(S->n * sizeof(double));
		L->tpot = malloc(S->n * sizeof(double));
		L->e2e = malloc(S->n * sizeof(double));
		if (!L->pd || !L->ttft || !L->tpot || !L->e2e)
			return -ENOMEM;
		memcpy(L->ttft, S->ttft, S->n * sizeof(double));
		memcpy(L->tpot, S->tpot, S->n * sizeof(double));
		memcpy(L->e2e, S->e2e, S->n * sizeof(double));
	}
	return 0;
}

void rf_problem_clone_free(rf_problem *p)
{
	for (size_t i = 0; i < p->n_lv; i++) {
		free(p->lv[i].pd);
		free(p->lv[i].ttft);
		free(p->lv[i].tpot);
		free(p->lv[i].e2e);
	}
	free(p->lv);
	free(p->res);
	sb_model_fini(&p->m);
}

/* Mean square of the clone's residuals (its measurements against its
 * latest replay). */
static double mean_square(rf_problem *cl)
{
	size_t m = rf_n_residuals(cl);
	double s = 0;
	rf_residuals(cl->lv, cl->n_lv, cl->res);
	for (size_t i = 0; i < m; i++)
		s += cl->res[i] * cl->res[i];
	return m ? s / (double)m : 0;
}

#define RF_CV_PROBE 0.05
#define RF_CV_SEEDS 2

/* The clone's measurements: the file's (p's), or its latest replay's. */
static void set_measured(rf_problem *cl, const rf_problem *p)
{
	for (size_t i = 0; i < cl->n_lv; i++) {
		rf_level *L = &cl->lv[i];
		for (size_t j = 0; j < L->n; j++) {
			L->ttft[j] = p ? p->lv[i].ttft[j] : L->pd[j].ttft_ms;
			L->tpot[j] = p ? p->lv[i].tpot[j] : L->pd[j].tpot_ms;
		}
	}
}

int rf_noise_cv(rf_problem *p, const double *c, sb_error *e)
{
	double obs = 0, probe = 0;
	rf_problem cl;
	sb_model m;
	sb_model_copy(&m, &p->m);
	rf_set_model(&m, c);
	int rc = rf_problem_clone(&cl, p) < 0 ? sb_error_code(e, -ENOMEM, "out of memory") : 0;
	if (rc == 0)
		rc = rf_replay(cl.lv, cl.n_lv, &m, 0, e);
	if (rc == 0) {
		/* the file's residuals at c; then the deterministic replay is
		 * what the probes' noisy replays are held against */
		set_measured(&cl, p);
		obs = mean_square(&cl);
		set_measured(&cl, NULL);
	}
	m.noise_kind = SB_NOISE_LOGNORMAL;
	m.noise_cv = m.noise_prefill_cv = RF_CV_PROBE;
	for (int k = 0; rc == 0 && k < RF_CV_SEEDS; k++) {
		rc = rf_replay(cl.lv, cl.n_lv, &m, 1000003UL + (unsigned long)k, e);
		if (rc == 0)
			probe += mean_square(&cl) / RF_CV_SEEDS;
	}
	sb_model_fini(&m);
	rf_problem_clone_free(&cl);
	/* the residuals grow as the noise's cv (for small cv) */
	double cv = probe > 0 ? RF_CV_PROBE * sqrt(obs / probe) : 0;
	p->noise_cv = cv < 0.002 ? 0.002 : cv > 0.5 ? 0.5 : cv;
	return rc;
}

typedef struct boot_job {
	const rf_problem *src;
	const double *c;
	double (*x)[RF_NP]; /* RF_BOOT rows: the refits' log coefficients */
} boot_job;

/* Bootstrap file b (seed b + 1) on the clone: the noisy replay's figures
 * as its measurements, refitted from c into x. */
static int one_refit(rf_problem *cl, const rf_problem *src, const double *c, int b, double *x,
		     sb_error *e)
{
	sb_model noisy;
	sb_model_copy(&noisy, &src->m);
	rf_set_model(&noisy, c);
	noisy.noise_kind = SB_NOISE_LOGNORMAL;
	noisy.noise_cv = noisy.noise_prefill_cv = src->noise_cv;
	int rc = rf_replay(cl->lv, cl->n_lv, &noisy, (unsigned long)b + 1, e);
	sb_model_fini(&noisy);
	for (size_t i = 0; rc == 0 && i < cl->n_lv; i++) {
		rf_level *L = &cl->lv[i];
		for (size_t j = 0; j < L->n; j++) {
			const sb_replay_pred *q = &L->pd[j];
			int ok = !q->rejected && isfinite(q->ttft_ms);
			L->ttft[j] = ok ? q->ttft_ms : src->lv[i].ttft[j];
			L->e2e[j] = ok ? q->e2e_ms : src->lv[i].e2e[j];
			L->tpot[j] = ok ? q->tpot_ms : src->lv[i].tpot[j];
		}
	}
	double cb[RF_NP];
	memcpy(cb, c, sizeof(cb));
	if (rc == 0)
		rc = rf_refit(cl, cb, e);
	for (int i = 0, k = 0; rc == 0 && i < RF_NP; i++)
		if (rf_active(cl, i))
			x[k++] = log(cb[i]);
	return rc;
}

/* Refit b on a clone of its own (sb_workers_run). */
static int boot_unit(void *ctx, int b, sb_error *e)
{
	boot_job *j = ctx;
	rf_problem cl;
	int rc = rf_problem_clone(&cl, j->src) < 0
			 ? sb_error_code(e, -ENOMEM, "out of memory")
			 : one_refit(&cl, j->src, j->c, b, j->x[b], e);
	rf_problem_clone_free(&cl);
	return rc;
}

int rf_bootstrap(rf_problem *p, const double *c, gsl_matrix *cov, sb_error *e)
{
	double x[RF_BOOT][RF_NP];
	boot_job job = { .src = p, .c = c, .x = x };
	int rc = sb_workers_run(RF_BOOT, p->o.jobs, boot_unit, &job, e);
	int np = p->np;
	for (int a = 0; rc == 0 && a < np; a++)
		for (int d = 0; d < np; d++) {
			double ma = 0, md = 0, s = 0;
			for (int b = 0; b < RF_BOOT; b++) {
				ma += x[b][a] / RF_BOOT;
				md += x[b][d] / RF_BOOT;
			}
			for (int b = 0; b < RF_BOOT; b++)
				s += (x[b][a] - ma) * (x[b][d] - md);
			gsl_matrix_set(cov, (size_t)a, (size_t)d, s / (RF_BOOT - 1));
		}
	return rc;
}
