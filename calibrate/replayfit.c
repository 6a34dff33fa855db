/* replayfit.c — a vLLM-class engine's step coefficients fitted by replaying
 * a per-request file (replayfit.h): the data, the residuals, the search and
 * the covariance. The report and the held-out check: replayfit_out.c. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_multimin.h>

#include "calibrate/replayfit_internal.h"
#include "core/stats.h"

void sb_rf_opts_init(sb_rf_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->form = SB_RF_FORM_KV;
	o->fit_first = 1.0;
	o->jobs = 1;
	o->max_evals = 1500;
	o->search_requests = 3000;
	o->replicas = 1;
}

static const char *const form_names[] = { "linear", "kv", "attn" };

const char *sb_rf_form_name(sb_rf_form f)
{
	return form_names[f];
}

int sb_rf_form_parse(const char *s, sb_rf_form *f, sb_error *e)
{
	for (int i = 0; i < 3; i++) {
		if (!strcmp(s, form_names[i])) {
			*f = (sb_rf_form)i;
			return 0;
		}
	}
	return sb_error_set(e, "--form: \"%s\" is none of linear, kv, attn", s);
}

const char *const rf_param_names[RF_NP] = { "base", "per_seq", "per_prefill_token",
					    "per_kv_token", "per_prefill_attn", "overhead_ms" };

/* ---- the data ---------------------------------------------------------- */

typedef struct by_time {
	const sb_reqrec *q;
	double t;
} by_time;

static int cmp_by_time(const void *a, const void *b)
{
	double x = ((const by_time *)a)->t, y = ((const by_time *)b)->t;
	return x < y ? -1 : x > y;
}

static int usable(const sb_reqrec *q)
{
	return !q->err_class && isfinite(q->ttft_ms) && isfinite(q->e2e_ms) &&
	       q->prompt_tokens >= 1 && q->output_tokens >= 1 && isfinite(q->t_sent_s);
}

/* The measured TPOT of q: its mean ITL when it has token times, else from
 * E2E and TTFT; NaN with one output token. */
static double measured_tpot(const sb_reqrec *q)
{
	if (q->output_tokens < 2)
		return NAN;
	if (q->n_itl > 0 && q->itl_ms) {
		double s = 0;
		for (size_t i = 0; i < q->n_itl; i++)
			s += q->itl_ms[i];
		return s / (double)q->n_itl;
	}
	return (q->e2e_ms - q->ttft_ms) / (double)(q->output_tokens - 1);
}

/* L's first k requests (at least 6, at most all) fitted, in windows of
 * about 15 (3 to 30, at least 2 requests each). */
static void set_fitted(rf_level *L, size_t k)
{
	L->n_fit = k < 6 ? (L->n < 6 ? L->n : 6) : k > L->n ? L->n : k;
	size_t w = L->n_fit / 15;
	L->n_win = w < 3 ? 3 : w > 30 ? 30 : w;
	if (L->n_win > L->n_fit / 2)
		L->n_win = L->n_fit / 2;
}

/* Level rl's usable requests, in send order, into L; fit_first of them
 * fitted, cut into windows. Returns 0, 1 when it has too few, or -ENOMEM. */
static int level_load(rf_level *L, const sb_rlevel *rl, double fit_first, const sb_fleet *fleet)
{
	by_time *o = malloc((rl->n_reqs + 1) * sizeof(*o));
	if (!o)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < rl->n_reqs; i++)
		if (usable(&rl->reqs[i]))
			o[n++] = (by_time){ &rl->reqs[i], rl->reqs[i].t_sent_s };
	if (n < 6) {
		free(o);
		return 1;
	}
	qsort(o, n, sizeof(*o), cmp_by_time);
	L->rq = calloc(n, sizeof(*L->rq));
	L->pd = calloc(n, sizeof(*L->pd));
	L->ttft = calloc(n, sizeof(double));
	L->tpot = calloc(n, sizeof(double));
	L->e2e = calloc(n, sizeof(double));
	if (!L->rq || !L->pd || !L->ttft || !L->tpot || !L->e2e) {
		free(o);
		return -ENOMEM;
	}
	L->n = n;
	for (size_t j = 0; j < n; j++) {
		const sb_reqrec *q = o[j].q;
		double t = rl->sum.mode == SB_MODE_RATE ? o[j].t - o[0].t : 0.0;
		L->rq[j] = (sb_replay_req){ .t_sched_s = t, .prompt_tokens = q->prompt_tokens,
					    .output_tokens = q->output_tokens, .slot = -1 };
		L->ttft[j] = q->ttft_ms;
		L->e2e[j] = q->e2e_ms;
		L->tpot[j] = measured_tpot(q);
	}
	free(o);
	L->ro = (sb_replay_opts){ .mode = rl->sum.mode, .no_noise = 1, .seed = 1 };
	if (fleet)
		L->ro.fleet = fleet;
	if (rl->sum.mode != SB_MODE_RATE)
		L->ro.concurrency = (int)lround(rl->sum.level) > 0 ? (int)lround(rl->sum.level) : 1;
	set_fitted(L, (size_t)ceil(fit_first * (double)n));
	return 0;
}

void rf_problem_free(rf_problem *p)
{
	for (size_t i = 0; i < p->n_lv; i++) {
		rf_level *L = &p->lv[i];
		free(L->rq);
		free(L->pd);
		free(L->ttft);
		free(L->tpot);
		free(L->e2e);
	}
	free(p->lv);
	sb_model_fini(&p->m);
	memset(p, 0, sizeof(*p));
}

int rf_problem_load(rf_problem *p, const sb_model *server, const sb_calib_input *in, size_t n,
		    const sb_rf_opts *o, sb_error *e)
{
	memset(p, 0, sizeof(*p));
	sb_model_copy(&p->m, server);
	p->o = *o;
	sb_fleet_init(&p->fleet);
	p->fleet.replicas = o->replicas;
	p->fleet.route = SB_ROUTE_LEAST_OUTSTANDING;
	for (size_t f = 0; f < n; f++) {
		const sb_results *r = in[f].res;
		rf_level *nl = realloc(p->lv, (p->n_lv + r->n_levels) * sizeof(*nl));
		if (!nl)
			return sb_error_code(e, -ENOMEM, "out of memory");
		p->lv = nl;
		for (size_t li = 0; li < r->n_levels; li++) {
			rf_level *L = &p->lv[p->n_lv];
			memset(L, 0, sizeof(*L));
			L->file = f;
			L->level = r->levels[li].sum.level;
			int rc = level_load(L, &r->levels[li], o->fit_first,
					    o->replicas > 1 ? &p->fleet : NULL);
			if (rc < 0)
				return sb_error_code(e, -ENOMEM, "out of memory");
			p->n_lv++;
			if (rc == 1) {
				p->n_lv--;
				free(L->rq);
			}
		}
	}
	if (p->n_lv == 0)
		return sb_error_set(e, "no level with 6 or more successful requests that have a "
				       "send time, prompt and output tokens, TTFT and E2E: a replay "
				       "fit needs them");
	return 0;
}

/* ---- the coefficients -------------------------------------------------- */

/* Whether coefficient k is in the form's step time. */
static int in_form(sb_rf_form form, int k)
{
	if (k == RF_KV)
		return form >= SB_RF_FORM_KV;
	if (k == RF_ATTN)
		return form >= SB_RF_FORM_ATTN;
	return 1;
}

int rf_active(const rf_problem *p, int k)
{
	return in_form(p->o.form, k) && !p->held[k] && !(p->fixed[k] > 0);
}

void rf_set_model(sb_model *m, const double *c)
{
	m->decode[0] = (sb_decode_point){ 1, c[RF_BASE] + c[RF_SEQ] };
	m->decode[1] = (sb_decode_point){ 2, c[RF_BASE] + 2 * c[RF_SEQ] };
	m->n_decode = 2;
	m->n_decode_kv = 0;
	m->prefill_base_ms = c[RF_BASE];
	m->per_prefill_token_ms = c[RF_PREFILL];
	m->per_kv_token_ms = c[RF_KV];
	m->per_prefill_attn_ms = c[RF_ATTN];
	m->overhead_ms = c[RF_OVH];
	m->overhead_sd_ms = 0;
	m->overhead_per_token_ms = 0;
	m->prefill_per_prompt_ms = 0;
	m->admit_delay_ms = 0;
	m->noise_kind = SB_NOISE_NONE;
	m->noise_cv = m->noise_prefill_cv = 0;
}

/* The full coefficient vector from the search's x (logs of the active
 * ones; a fixed one its value; the others 0). */
static void coef_of_x(const rf_problem *p, const double *x, double *c)
{
	int k = 0;
	for (int i = 0; i < RF_NP; i++)
		c[i] = rf_active(p, i) ? exp(x[k++]) : p->fixed[i] > 0 ? p->fixed[i] : 0.0;
}

/* ---- the residuals ----------------------------------------------------- */

int rf_replay(rf_level *lv, size_t n_lv, const sb_model *m, unsigned long seed, sb_error *e)
{
	for (size_t i = 0; i < n_lv; i++) {
		sb_replay_opts ro = lv[i].ro;
		ro.no_noise = seed == 0;
		ro.seed = seed;
		int r = sb_sim_replay(m, &ro, lv[i].rq, lv[i].n, lv[i].pd, NULL, e);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Means of measured and predicted TTFT and TPOT over the fitted requests
 * [a, b) of L into res[0..2). A prediction the replay rejected counts as
 * ten times its measurement (the search is steered away from it). */
static void window_residuals(const rf_level *L, size_t a, size_t b, double *res)
{
	double mt = 0, pt = 0, mp = 0, pp = 0;
	for (size_t j = a; j < b; j++) {
		const sb_replay_pred *q = &L->pd[j];
		mt += L->ttft[j];
		pt += q->rejected ? 10 * L->ttft[j] : q->ttft_ms;
		if (isfinite(L->tpot[j]) && isfinite(q->tpot_ms)) {
			mp += L->tpot[j];
			pp += q->tpot_ms;
		}
	}
	res[0] = mt > 0 && pt > 0 ? log(pt / mt) : 0;
	res[1] = mp > 0 && pp > 0 ? log(pp / mp) : 0;
}

size_t rf_n_residuals(const rf_problem *p)
{
	size_t m = 0;
	for (size_t i = 0; i < p->n_lv; i++)
		m += 2 * p->lv[i].n_win;
	return m;
}

/* The residuals of the levels' current predictions, in order: each level's
 * windows, each window TTFT then TPOT. */
void rf_residuals(const rf_level *lv, size_t n_lv, double *res)
{
	size_t k = 0;
	for (size_t i = 0; i < n_lv; i++) {
		const rf_level *L = &lv[i];
		for (size_t w = 0; w < L->n_win; w++, k += 2)
			window_residuals(L, w * L->n_fit / L->n_win, (w + 1) * L->n_fit / L->n_win,
					 &res[k]);
	}
}

/* The secant in each log coefficient of the local covariance. */
#define RF_COV_H 0.2

/* Unit k of an averaged replay (sb_workers_run): seed k on clone k, its
 * residuals into row k of p->avg_res. */
static int avg_unit(void *ctx, int k, sb_error *e)
{
	rf_problem *p = ctx, *cl = &p->avg_cl[k];
	int rc = rf_replay(cl->lv, cl->n_lv, &p->m, RF_AVG_SEED + (unsigned long)k, e);
	if (rc == 0)
		rf_residuals(cl->lv, cl->n_lv, &p->avg_res[(size_t)k * rf_n_residuals(p)]);
	return rc;
}

/* p->res: the residuals of the replay without noise, or with p->avg_seeds
 * the mean of the residuals of that many replays with step noise of cv
 * p->avg_cv, drawn from the same seeds whatever c is, on o.jobs threads
 * (the mean taken in seed order: the same whatever the threads). Returns
 * 0 or as rf_replay. */
static int replay_residuals(rf_problem *p, sb_error *e)
{
	size_t m = rf_n_residuals(p);
	if (p->avg_seeds <= 0) {
		int rc = rf_replay(p->lv, p->n_lv, &p->m, 0, e);
		if (rc == 0)
			rf_residuals(p->lv, p->n_lv, p->res);
		return rc;
	}
	p->m.noise_kind = SB_NOISE_LOGNORMAL;
	p->m.noise_cv = p->m.noise_prefill_cv = p->avg_cv;
	int rc = sb_workers_run(p->avg_seeds, p->o.jobs, avg_unit, p, e);
	for (size_t i = 0; rc == 0 && i < m; i++) {
		double s = 0;
		for (int k = 0; k < p->avg_seeds; k++)
			s += p->avg_res[(size_t)k * m + i];
		p->res[i] = s / p->avg_seeds;
	}
	return rc;
}

/* Back to replays without noise; the clones released. */
static void avg_end(rf_problem *p)
{
	for (int k = 0; k < p->avg_ncl; k++)
		rf_problem_clone_free(&p->avg_cl[k]);
	free(p->avg_cl);
	free(p->avg_res);
	p->avg_cl = NULL;
	p->avg_res = NULL;
	p->avg_ncl = p->avg_seeds = 0;
}

/* Averaged replays from here (replay_residuals) until avg_end: step noise
 * of cv, each seed on a clone of p of its own. Returns 0 or -ENOMEM. */
static int avg_begin(rf_problem *p, double cv, sb_error *e)
{
	p->avg_cl = calloc(RF_AVG_SEEDS, sizeof(*p->avg_cl));
	p->avg_res = malloc(RF_AVG_SEEDS * rf_n_residuals(p) * sizeof(double));
	int rc = p->avg_cl && p->avg_res ? 0 : -ENOMEM;
	for (int k = 0; rc == 0 && k < RF_AVG_SEEDS; k++) {
		rc = rf_problem_clone(&p->avg_cl[k], p);
		p->avg_ncl = k + 1; /* a clone that failed holds what it copied */
	}
	if (rc < 0) {
		avg_end(p);
		return sb_error_code(e, -ENOMEM, "out of memory");
	}
	p->avg_seeds = RF_AVG_SEEDS;
	p->avg_cv = cv;
	return 0;
}

/* Sum of squared residuals of coefficients c on the problem's own levels
 * and model (NaN when a replay fails). */
static double rf_rss(rf_problem *p, const double *c)
{
	rf_set_model(&p->m, c);
	sb_error e;
	p->evals += p->avg_seeds > 0 ? p->avg_seeds : 1;
	if (replay_residuals(p, &e) < 0)
		return NAN;
	size_t m = rf_n_residuals(p);
	double s = 0;
	for (size_t i = 0; i < m; i++)
		s += p->res[i] * p->res[i];
	return s;
}

/* ---- Levenberg-Marquardt from where the simplex stopped ----------------- */

/* The residuals at log coefficients x. */
static int lm_f(const gsl_vector *x, void *arg, gsl_vector *f)
{
	rf_problem *p = arg;
	double c[RF_NP];
	coef_of_x(p, x->data, c);
	if (!isfinite(rf_rss(p, c)))
		return GSL_EDOM;
	size_t m = rf_n_residuals(p);
	for (size_t i = 0; i < m; i++)
		gsl_vector_set(f, i, p->res[i]);
	return GSL_SUCCESS;
}

/* J (m x np): derivatives of the residuals in the log coefficients at c,
 * central differences of h. */
static int jacobian(rf_problem *p, const double *c, double h, gsl_matrix *J, sb_error *e)
{
	size_t m = rf_n_residuals(p);
	double *lo = malloc(m * sizeof(double)), *hi = malloc(m * sizeof(double));
	int rc = lo && hi ? 0 : sb_error_code(e, -ENOMEM, "out of memory");
	for (int i = 0, k = 0; rc == 0 && i < RF_NP; i++) {
		if (!rf_active(p, i))
			continue;
		double cc[RF_NP];
		memcpy(cc, c, sizeof(cc));
		cc[i] = c[i] * exp(-h);
		if (!isfinite(rf_rss(p, cc)))
			rc = sb_error_set(e, "a replay failed while taking derivatives");
		memcpy(lo, p->res, m * sizeof(double));
		cc[i] = c[i] * exp(h);
		if (rc == 0 && !isfinite(rf_rss(p, cc)))
			rc = sb_error_set(e, "a replay failed while taking derivatives");
		memcpy(hi, p->res, m * sizeof(double));
		for (size_t r = 0; r < m; r++)
			gsl_matrix_set(J, r, (size_t)k, (hi[r] - lo[r]) / (2 * h));
		k++;
	}
	free(lo);
	free(hi);
	return rc;
}

/* The residuals' derivatives for Levenberg-Marquardt, central differences
 * of RF_H in each log coefficient (the replay is piecewise smooth: steps
 * smaller than this see its jumps). */
#define RF_H 0.02
static int lm_df(const gsl_vector *x, void *arg, gsl_matrix *J)
{
	rf_problem *p = arg;
	double c[RF_NP];
	sb_error e;
	coef_of_x(p, x->data, c);
	return jacobian(p, c, RF_H, J, &e) < 0 ? GSL_EDOM : GSL_SUCCESS;
}

#define RF_POLISH_ITERS 40

/* Levenberg-Marquardt in the log coefficients from c (updated when it
 * lowers the sum of squares), at most iters iterations. */
static void polish(rf_problem *p, double *c, int iters)
{
	size_t m = rf_n_residuals(p), np = (size_t)p->np;
	gsl_multifit_nlinear_parameters par = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w =
		gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &par, m, np);
	gsl_vector *x = gsl_vector_alloc(np);
	if (!w || !x) {
		gsl_multifit_nlinear_free(w);
		gsl_vector_free(x);
		return;
	}
	for (int i = 0, k = 0; i < RF_NP; i++)
		if (rf_active(p, i))
			gsl_vector_set(x, (size_t)k++, log(c[i]));
	gsl_multifit_nlinear_fdf fdf = { lm_f, lm_df, NULL, m, np, p, 0, 0, 0 };
	double before = rf_rss(p, c);
	int info;
	if (gsl_multifit_nlinear_init(x, &fdf, w) == GSL_SUCCESS)
		gsl_multifit_nlinear_driver((size_t)iters, 1e-6, 1e-6, 1e-8, NULL, NULL, &info, w);
	double cc[RF_NP];
	coef_of_x(p, gsl_multifit_nlinear_position(w)->data, cc);
	double after = rf_rss(p, cc);
	if (after < before)
		memcpy(c, cc, sizeof(cc));
	p->rss = after < before ? after : before;
	gsl_multifit_nlinear_free(w);
	gsl_vector_free(x);
}

/* ---- the search -------------------------------------------------------- */

static double nm_f(const gsl_vector *x, void *arg)
{
	rf_problem *p = arg;
	double c[RF_NP];
	coef_of_x(p, x->data, c);
	double s = rf_rss(p, c);
	return isfinite(s) ? s : GSL_POSINF;
}

/* Where the search starts: the caller's coefficients where positive, else
 * guesses from the quickest requests (the 10th percentiles of TPOT and
 * TTFT: a decode step alone, a prompt with little queue). */
static void start_values(const rf_problem *p, double *c)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_lv; i++)
		n += p->lv[i].n_fit;
	double *t = malloc((n + 1) * sizeof(double)), *u = malloc((n + 1) * sizeof(double));
	double plen = 0;
	size_t nt = 0, nu = 0;
	for (size_t i = 0; t && u && i < p->n_lv; i++) {
		for (size_t j = 0; j < p->lv[i].n_fit; j++) {
			if (isfinite(p->lv[i].tpot[j]))
				t[nt++] = p->lv[i].tpot[j];
			u[nu++] = p->lv[i].ttft[j];
			plen += (double)p->lv[i].rq[j].prompt_tokens;
		}
	}
	qsort(t, nt, sizeof(double), sb_cmp_double);
	qsort(u, nu, sizeof(double), sb_cmp_double);
	double tp = nt ? sb_sorted_quantile(t, nt, 0.1) : 20.0;
	double tt = nu ? sb_sorted_quantile(u, nu, 0.1) : 100.0;
	free(t);
	free(u);
	plen = nu ? plen / (double)nu : 256;
	double guess[RF_NP] = { 0.7 * tp, 0.3 * tp / 16, 0.5 * tt / plen, 0.02 * tp / 4096,
				1e-3 * tt / plen / plen, 0.2 * tt };
	const sb_model *m = &p->m;
	double given[RF_NP] = { sb_model_step_base_ms(m),
				m->n_decode >= 2 ? m->decode[1].ms - m->decode[0].ms : 0,
				m->per_prefill_token_ms, m->per_kv_token_ms, m->per_prefill_attn_ms,
				m->overhead_ms };
	for (int i = 0; i < RF_NP; i++)
		c[i] = given[i] > 0 && isfinite(given[i]) ? given[i] : guess[i];
}

/* Nelder-Mead over the logs of the active coefficients from c (updated),
 * within max_evals replays; restarted once from where it stopped. */
static int search(rf_problem *p, double *c, int rounds, sb_error *e)
{
	int np = p->np;
	gsl_multimin_function fn = { nm_f, (size_t)np, p };
	gsl_vector *x = gsl_vector_alloc((size_t)np), *step = gsl_vector_alloc((size_t)np);
	gsl_multimin_fminimizer *s =
		gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, (size_t)np);
	if (!x || !step || !s) {
		gsl_vector_free(x);
		gsl_vector_free(step);
		gsl_multimin_fminimizer_free(s);
		return sb_error_code(e, -ENOMEM, "out of memory");
	}
	for (int round = 2 - rounds; round < 2; round++) {
		int k = 0;
		for (int i = 0; i < RF_NP; i++)
			if (rf_active(p, i))
				gsl_vector_set(x, (size_t)k++, log(c[i]));
		gsl_vector_set_all(step, round ? 0.2 : 0.7);
		gsl_multimin_fminimizer_set(s, &fn, x, step);
		long budget = p->evals + p->o.max_evals / 2;
		while (p->evals < budget) {
			if (gsl_multimin_fminimizer_iterate(s))
				break;
			if (gsl_multimin_test_size(gsl_multimin_fminimizer_size(s), 1e-3) ==
			    GSL_SUCCESS)
				break;
		}
		coef_of_x(p, s->x->data, c);
		p->rss = s->fval;
	}
	polish(p, c, RF_POLISH_ITERS);
	gsl_vector_free(x);
	gsl_vector_free(step);
	gsl_multimin_fminimizer_free(s);
	return 0;
}

int rf_refit(rf_problem *p, double *c, sb_error *e)
{
	return search(p, c, 1, e);
}

#define RF_STARTS 5
static const double tilt[RF_STARTS][RF_NP] = {
	{ 0, 0, 0, 0, 0, 0 },	   { 0, 1.4, 0, -1.4, 0, 0 }, { 0, -1.4, 0, 1.4, 0, 0 },
	{ 0, 0, 0.7, 0, 0, -1.4 }, { 0, 0, -0.7, 0, 0, 1.4 },
};

/* One start: its search on a copy of the problem (its own predictions). */
typedef struct start_job {
	double c[RF_NP];
	double rss;
	long evals;
} start_job;

typedef struct starts {
	const rf_problem *src;
	start_job jobs[RF_STARTS];
} starts;

/* Unit s of the multistart (sb_workers_run). */
static int start_unit(void *ctx, int s, sb_error *e)
{
	starts *st = ctx;
	start_job *j = &st->jobs[s];
	rf_problem cl;
	int rc = rf_problem_clone(&cl, st->src) < 0 ? sb_error_code(e, -ENOMEM, "out of memory")
						    : search(&cl, j->c, 2, e);
	j->rss = cl.rss;
	j->evals = cl.evals;
	rf_problem_clone_free(&cl);
	return rc;
}

/* The search from RF_STARTS points around c (the guesses, then per_seq
 * against per_kv_token and prefill against overhead traded by a factor of
 * 4 either way: the directions the file separates least), keeping the best
 * (the replay's jumps leave local minima a single search stops in). The
 * starts run on o.jobs threads; each is the same search whichever runs it. */
static int multistart(rf_problem *p, double *c, sb_error *e)
{
	starts st = { .src = p };
	start_job *jobs = st.jobs;
	for (int s = 0; s < RF_STARTS; s++) {
		jobs[s] = (start_job){ .rss = INFINITY };
		for (int i = 0; i < RF_NP; i++)
			jobs[s].c[i] = c[i] * exp(tilt[s][i]);
	}
	int rc = sb_workers_run(RF_STARTS, p->o.jobs, start_unit, &st, e);
	int best = -1;
	for (int s = 0; s < RF_STARTS; s++) {
		p->evals += jobs[s].evals;
		if (best < 0 || jobs[s].rss < jobs[best].rss)
			best = s;
	}
	if (rc < 0)
		return rc;
	memcpy(c, jobs[best].c, sizeof(jobs[best].c));
	p->rss = jobs[best].rss;
	return 0;
}

static size_t fitted_requests(const rf_problem *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_lv; i++)
		n += p->lv[i].n_fit;
	return n;
}

/* h: a clone of p whose levels end after the same share of their fitted
 * requests, o.search_requests in all (the file's head: what a replay of
 * its first minutes costs). Returns 0 or -ENOMEM (release h either way). */
static int make_head(rf_problem *h, const rf_problem *p, sb_error *e)
{
	if (rf_problem_clone(h, p) < 0)
		return sb_error_code(e, -ENOMEM, "out of memory");
	double share = (double)p->o.search_requests / (double)fitted_requests(p);
	for (size_t i = 0; i < h->n_lv; i++) {
		rf_level *L = &h->lv[i];
		set_fitted(L, (size_t)ceil(share * (double)L->n_fit));
		L->n = L->n_fit;
	}
	h->noise_cv = p->noise_cv;
	return 0;
}

/* The search from c (updated): the multistart on the whole file, or, with
 * more than o.search_requests fitted requests, on its head (make_head) and
 * then polished on the whole; the polish, the covariance and the
 * predictions use all of it. A replay of 16,800 requests with about 70 in flight takes
 * 0.07 s, and the multistart 1,500 of them; the head finds the basin. */
static int search_file(rf_problem *p, double *c, sb_error *e)
{
	if (!p->o.search_requests || fitted_requests(p) <= p->o.search_requests)
		return multistart(p, c, e);
	rf_problem h;
	int rc = make_head(&h, p, e);
	if (rc == 0)
		rc = multistart(&h, c, e);
	p->evals += h.evals;
	p->head_reqs = fitted_requests(&h);
	rf_problem_clone_free(&h);
	if (rc == 0)
		polish(p, c, RF_POLISH_ITERS);
	return rc;
}

/* ---- the covariance ---------------------------------------------------- */

/* Lag-1 autocorrelation of r[0..m) taken by series (TTFT, TPOT: every
 * other entry), clamped to [0, 0.9]. */
static double lag1(const double *r, size_t m)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < m; i++) {
		den += r[i] * r[i];
		if (i + 2 < m)
			num += r[i] * r[i + 2];
	}
	double rho = den > 0 ? num / den : 0;
	return rho < 0 ? 0 : rho > 0.9 ? 0.9 : rho;
}


/* The residuals' variance from their sum of squares rss (p->res being
 * theirs) over the degrees of freedom, inflated for their lag-1
 * autocorrelation (p->rho, set). */
static double residual_var(rf_problem *p, double rss)
{
	size_t m = rf_n_residuals(p);
	p->rho = lag1(p->res, m);
	return rss / (double)(m - (size_t)p->np) * (1 + p->rho) / (1 - p->rho);
}

/* cov (np x np) of the log coefficients = s²·(JᵀJ)⁺ (SVD pseudo-inverse:
 * a direction the data does not move gets an infinite variance). */
static void log_covariance(const gsl_matrix *J, double s2, gsl_matrix *cov)
{
	size_t np = J->size2;
	gsl_matrix *A = gsl_matrix_alloc(np, np), *V = gsl_matrix_alloc(np, np);
	gsl_vector *S = gsl_vector_alloc(np), *w = gsl_vector_alloc(np);
	gsl_matrix_set_zero(A);
	for (size_t a = 0; a < np; a++)
		for (size_t b = 0; b < np; b++) {
			double s = 0;
			for (size_t r = 0; r < J->size1; r++)
				s += gsl_matrix_get(J, r, a) * gsl_matrix_get(J, r, b);
			gsl_matrix_set(A, a, b, s);
		}
	gsl_linalg_SV_decomp(A, V, S, w);
	double smax = gsl_vector_get(S, 0);
	for (size_t a = 0; a < np; a++)
		for (size_t b = 0; b < np; b++) {
			double s = 0;
			for (size_t k = 0; k < np; k++) {
				double sk = gsl_vector_get(S, k);
				s += sk > smax * 1e-10 ? gsl_matrix_get(V, a, k) *
								 gsl_matrix_get(V, b, k) / sk
						       : (a == b && fabs(gsl_matrix_get(V, a, k)) > 0.1
								  ? INFINITY
								  : 0);
			}
			gsl_matrix_set(cov, a, b, s2 * s);
		}
	gsl_matrix_free(A);
	gsl_matrix_free(V);
	gsl_vector_free(S);
	gsl_vector_free(w);
}

/* Levenberg-Marquardt again from c (updated), on replays with the file's
 * step noise averaged. Steps that scatter make longer queues than steps
 * that do not (a wait grows with the variance of the service), so a
 * noise-free replay matches the measured waits only with coefficients off
 * the truth: on data simulated from a known model (replay_recovery.sh)
 * base came out 11.3 for 12 and overhead 18.7 for 15, the held-out TTFT
 * 2.6% high; after this step 11.9, 15.1 and 0.1%. The search itself stays
 * on the noise-free replay, RF_AVG_SEEDS times cheaper: only its optimum
 * needs the correction. */
static int polish_with_noise(rf_problem *p, double *c, sb_error *e)
{
	int rc = rf_noise_cv(p, c, e);
	if (rc == 0)
		rc = avg_begin(p, p->noise_cv, e);
	if (rc < 0)
		return rc;
	polish(p, c, RF_POLISH_ITERS);
	avg_end(p);
	return 0;
}

/* The residuals' local covariance s²·(JᵀJ)⁺ into p->cov (log coefficients,
 * p->s2 and p->rho set), taken on the replays with the file's step noise
 * averaged (RF_AVG_SEEDS) and a secant of RF_COV_H: the replay without
 * noise is a rough function of the coefficients (a step 5% longer reorders
 * admissions and moves a window's TTFT by more than a smooth bowl would),
 * and its derivatives at one optimum see that roughness as curvature, so a
 * ridge the file does not pin down (per_seq against per_kv_token) came out
 * as narrow as a well-measured coefficient. */
static int local_covariance(rf_problem *p, const double *c, gsl_matrix *J, sb_error *e)
{
	int rc = avg_begin(p, p->noise_cv, e);
	if (rc < 0)
		return rc;
	double rss = rf_rss(p, c);
	if (!isfinite(rss))
		rc = sb_error_set(e, "a replay failed at the fitted coefficients");
	if (rc == 0) {
		p->rss = rss;
		p->s2 = residual_var(p, rss);
		rc = jacobian(p, c, RF_COV_H, J, e);
	}
	if (rc == 0)
		log_covariance(J, p->s2, p->cov);
	avg_end(p);
	return rc;
}

/* rf_bootstrap of p, or of its head (make_head) when the search ran on
 * one, its covariance scaled by the head's share of the fitted requests
 * (the variance of a mean over n requests as 1/n). */
static int bootstrap_file(rf_problem *p, const double *c, gsl_matrix *cov, sb_error *e)
{
	if (!p->head_reqs)
		return rf_bootstrap(p, c, cov, e);
	rf_problem h;
	int rc = make_head(&h, p, e);
	if (rc == 0)
		rc = rf_bootstrap(&h, c, cov, e);
	if (rc == 0)
		gsl_matrix_scale(cov, (double)p->head_reqs / (double)fitted_requests(p));
	rf_problem_clone_free(&h);
	return rc;
}

/* ---- the ridge ---------------------------------------------------------- */

/* The scan's points along per_kv_token, in its log: factors 1/4 to 4. */
#define RF_RIDGE_N 5
#define RF_RIDGE_END 1.3862943611198906 /* ln 4 */
static const double ridge_x[RF_RIDGE_N] = { -RF_RIDGE_END, -RF_RIDGE_END / 2, 0,
					     RF_RIDGE_END / 2, RF_RIDGE_END };
/* The variance of log per_kv_token when the scan finds no bowl within its
 * ends: a 90% interval that reaches them (ln 4 / 1.645, squared). */
#define RF_RIDGE_VMAX 0.71028
/* Levenberg-Marquardt iterations at a scan point (it starts on the ridge). */
#define RF_RIDGE_ITERS 10

/* The index of coefficient k among p's active ones. */
static int active_index(const rf_problem *p, int k)
{
	int j = 0;
	for (int i = 0; i < k; i++)
		j += rf_active(p, i);
	return j;
}

/* The mean context of a decoding sequence, weighted by its steps: each
 * fitted request's output tokens times its prompt and half of them. A step
 * costs per_seq + per_kv_token * context a sequence, so at this context a
 * change of per_kv_token is traded for one of per_seq. */
static double decode_context(const rf_problem *p)
{
	double w = 0, s = 0;
	for (size_t i = 0; i < p->n_lv; i++)
		for (size_t j = 0; j < p->lv[i].n_fit; j++) {
			double o = (double)p->lv[i].rq[j].output_tokens;
			w += o;
			s += o * ((double)p->lv[i].rq[j].prompt_tokens + o / 2);
		}
	return w > 0 ? s / w : 0;
}

/* cc = c with per_kv_token at c's times e^x, per_seq moved along the ridge
 * (decode_context) but kept above 1/16 of c's, the others polished with
 * per_kv_token held (on p's replays as they are: averaged in the scan).
 * Returns the sum of squares at cc. */
static double ridge_point(rf_problem *p, const double *c, double x, double *cc)
{
	memcpy(cc, c, RF_NP * sizeof(double));
	cc[RF_KV] = c[RF_KV] * exp(x);
	cc[RF_SEQ] = c[RF_SEQ] - decode_context(p) * (cc[RF_KV] - c[RF_KV]);
	if (!(cc[RF_SEQ] > c[RF_SEQ] / 16))
		cc[RF_SEQ] = c[RF_SEQ] / 16;
	int np = p->np;
	p->fixed[RF_KV] = cc[RF_KV];
	p->np = np - 1;
	p->rss = rf_rss(p, cc);
	polish(p, cc, RF_RIDGE_ITERS);
	double rss = p->rss;
	p->fixed[RF_KV] = 0;
	p->np = np;
	return rss;
}

/* What the scan of the ridge found. */
typedef struct rf_ridge {
	double curv;           /* a lower 95% bound on the profile's curvature
				  in log per_kv_token (1 / variance) */
	double x0;             /* the fitted quadratic's lowest point (NaN
				  without curvature) */
} rf_ridge;

/* The profile of the sum of squares along per_kv_token (ridge_point at
 * each of ridge_x, on replays with the file's step noise averaged), in
 * units of the residual variance, and a quadratic fitted to it by least
 * squares, a + b x + q x^2 (the points are symmetric: b apart from a and
 * q). The replay is rough along the ridge (a step a little longer
 * reorders admissions), so the curvature is taken at its lower 95% bound
 * from the points' own scatter about the quadratic (Student t, n - 3
 * degrees of freedom). The file may pin base + B per_seq + per_kv_token *
 * context at the batches and contexts it ran while leaving the split open:
 * on a simulated file the profile from 1/4 to 6 times the fitted
 * per_kv_token stayed within about 10 of the fit's sum of squares (in
 * units of the residual variance), lower than the fit at 2 to 4.5 times
 * (the truth: 4.5 times), while the local covariance and a quadratic
 * through two points at 2 and 1/2 had put an interval of 0 to 2 times on
 * it (docs/model-notes.md, "vLLM-class engines"). */
static int ridge_scan(rf_problem *p, const double *c, rf_ridge *r, sb_error *e)
{
	int rc = avg_begin(p, p->noise_cv, e);
	if (rc < 0)
		return rc;
	double rss0 = rf_rss(p, c), s2 = residual_var(p, rss0);
	double rise[RF_RIDGE_N];
	for (int k = 0; k < RF_RIDGE_N; k++) {
		double cc[RF_NP];
		rise[k] = (ridge_point(p, c, ridge_x[k], cc) - rss0) / s2;
	}
	avg_end(p);
	double n = RF_RIDGE_N, sx2 = 0, sx4 = 0, sr = 0, sxr = 0, sx2r = 0;
	for (int k = 0; k < RF_RIDGE_N; k++) {
		double x = ridge_x[k], x2 = x * x;
		sx2 += x2;
		sx4 += x2 * x2;
		sr += rise[k];
		sxr += x * rise[k];
		sx2r += x2 * rise[k];
	}
	double det = n * sx4 - sx2 * sx2, b = sxr / sx2;
	double q = (n * sx2r - sx2 * sr) / det, a = (sr - q * sx2) / n, ss = 0;
	for (int k = 0; k < RF_RIDGE_N; k++) {
		double x = ridge_x[k], d = rise[k] - (a + b * x + q * x * x);
		ss += d * d;
	}
	double se_q = sqrt(ss / (n - 3) * n / det);
	r->curv = q - gsl_cdf_tdist_Pinv(0.95, n - 3) * se_q;
	r->x0 = q > 0 ? -b / (2 * q) : NAN;
	return 0;
}

/* The ridge of p, or of its head (make_head) when the search ran on one,
 * scanned (ridge_scan): p->ridge_var, log per_kv_token's variance along
 * the ridge, is 1 / the curvature's lower bound (scaled by the head's
 * share of the fitted requests, as the bootstrap's) plus the squared
 * distance to the quadratic's lowest point, at most RF_RIDGE_VMAX (also
 * when the bound is not above 0). Nothing when per_seq or per_kv_token is
 * not fitted. */
static int ridge_file(rf_problem *p, const double *c, sb_error *e)
{
	p->ridge_var = 0;
	if (!rf_active(p, RF_KV) || !rf_active(p, RF_SEQ))
		return 0;
	rf_ridge r = { 0 };
	rf_problem h;
	int rc = p->head_reqs ? make_head(&h, p, e) : 0;
	if (rc == 0)
		rc = ridge_scan(p->head_reqs ? &h : p, c, &r, e);
	if (p->head_reqs)
		rf_problem_clone_free(&h);
	if (rc < 0)
		return rc;
	double share = p->head_reqs ? (double)p->head_reqs / (double)fitted_requests(p) : 1;
	double var = r.curv > 0 ? share / r.curv + r.x0 * r.x0 : RF_RIDGE_VMAX;
	p->ridge_var = var < RF_RIDGE_VMAX ? var : RF_RIDGE_VMAX;
	return 0;
}

/* p->ridge_u: the ridge's direction at c, each active coefficient's change
 * per unit of per_kv_token: the others' change that leaves the residuals
 * least changed to first order (least squares on J, the residuals'
 * derivatives in the log coefficients, a pseudo-inverse over the
 * directions J moves), so that draws along it keep the file's own
 * figures. */
static void ridge_direction(rf_problem *p, const double *c, const gsl_matrix *J)
{
	size_t m = J->size1, np = J->size2, no = np - 1;
	size_t ik = (size_t)active_index(p, RF_KV);
	gsl_matrix *A = gsl_matrix_calloc(no, no), *V = gsl_matrix_alloc(no, no);
	gsl_vector *S = gsl_vector_alloc(no), *w = gsl_vector_alloc(no);
	gsl_vector *rhs = gsl_vector_calloc(no), *v = gsl_vector_alloc(no);
	if (!A || !V || !S || !w || !rhs || !v)
		goto out;
	for (size_t a = 0, ia = 0; a < np; a++) {
		if (a == ik)
			continue;
		for (size_t r = 0; r < m; r++)
			*gsl_vector_ptr(rhs, ia) -= gsl_matrix_get(J, r, a) * gsl_matrix_get(J, r, ik);
		for (size_t b = 0, ib = 0; b < np; b++) {
			if (b == ik)
				continue;
			double x = 0;
			for (size_t r = 0; r < m; r++)
				x += gsl_matrix_get(J, r, a) * gsl_matrix_get(J, r, b);
			gsl_matrix_set(A, ia, ib++, x);
		}
		ia++;
	}
	gsl_linalg_SV_decomp(A, V, S, w);
	for (size_t k = 0; k < no; k++)
		if (!(gsl_vector_get(S, k) > gsl_vector_get(S, 0) * 1e-10))
			gsl_vector_set(S, k, 0);
	gsl_linalg_SV_solve(A, V, S, rhs, v);
	for (int i = 0, j = 0, io = 0; i < RF_NP; i++) {
		if (!rf_active(p, i))
			continue;
		double ulog = (size_t)j == ik ? 1 : gsl_vector_get(v, (size_t)io++);
		p->ridge_u[j++] = c[i] * ulog / c[RF_KV];
	}
out:
	gsl_matrix_free(A);
	gsl_matrix_free(V);
	gsl_vector_free(S);
	gsl_vector_free(w);
	gsl_vector_free(rhs);
	gsl_vector_free(v);
}

/* cov (the coefficients' own, active order) gains, along p->ridge_u, the
 * variance of per_kv_token at c along the ridge less what it has, when
 * more: a normal whose 90% interval reaches up as far as log per_kv_token's
 * (p->ridge_var) does, sd = c (e^(1.645 sd_log) - 1) / 1.645 (c sd_log
 * for a narrow one). The ridge is a line in the coefficients themselves
 * (per_seq + context * per_kv_token), so it is added there, not in their
 * logs; the draws are truncated at 0, which bounds it below. */
static void ridge_add(const rf_problem *p, const double *c, gsl_matrix *cov)
{
	if (!(p->ridge_var > 0))
		return;
	int np = p->np, ik = active_index(p, RF_KV);
	double sd = c[RF_KV] * expm1(1.6448536269514722 * sqrt(p->ridge_var)) / 1.6448536269514722;
	double add = sd * sd - gsl_matrix_get(cov, (size_t)ik, (size_t)ik);
	for (int a = 0; add > 0 && a < np; a++)
		for (int b = 0; b < np; b++)
			*gsl_matrix_ptr(cov, (size_t)a, (size_t)b) +=
				add * p->ridge_u[a] * p->ridge_u[b];
}

/* p->cov: the covariance of the active coefficients (in their order) at c. */
static int covariance(rf_problem *p, const double *c, sb_error *e)
{
	size_t m = rf_n_residuals(p), np = (size_t)p->np;
	if (m <= np)
		return sb_error_set(e, "%zu residuals for %zu coefficients: too few windows to "
				       "fit (more requests per level)", m, np);
	int rc = rf_noise_cv(p, c, e);
	if (rc < 0)
		return rc;
	gsl_matrix *J = gsl_matrix_alloc(m, np);
	p->cov = gsl_matrix_alloc(np, np);
	if (!J || !p->cov) {
		gsl_matrix_free(J);
		return sb_error_code(e, -ENOMEM, "out of memory");
	}
	gsl_matrix *bs = gsl_matrix_alloc(np, np);
	rc = bs ? local_covariance(p, c, J, e) : sb_error_code(e, -ENOMEM, "out of memory");
	if (rc == 0 && p->ridge_var > 0)
		ridge_direction(p, c, J);
	if (rc == 0)
		rc = bootstrap_file(p, c, bs, e);
	if (rc == 0)
		gsl_matrix_add(p->cov, bs);
	gsl_matrix_free(J);
	gsl_matrix_free(bs);
	/* to the coefficients themselves: cov_c = diag(c) cov_log diag(c) */
	for (size_t a = 0, ia = 0; rc == 0 && a < RF_NP; a++) {
		if (!rf_active(p, (int)a))
			continue;
		for (size_t b = 0, ib = 0; b < RF_NP; b++) {
			if (!rf_active(p, (int)b))
				continue;
			double v = gsl_matrix_get(p->cov, ia, ib);
			gsl_matrix_set(p->cov, ia, ib, v * c[a] * c[b]);
			ib++;
		}
		ia++;
	}
	if (rc == 0)
		ridge_add(p, c, p->cov);
	rf_rss(p, c); /* leaves the predictions at the optimum */
	return rc;
}

/* A coefficient the search drove towards 0 (log-space: it cannot reach it)
 * whose removal costs under 0.1% of the sum of squares is held at 0 and
 * left out of the covariance (the fit notes it). base stays. */
static void hold_at_zero(rf_problem *p, double *c)
{
	double rss = rf_rss(p, c);
	for (int i = RF_SEQ; i < RF_NP; i++) {
		if (!rf_active(p, i))
			continue;
		double keep = c[i];
		c[i] = 0;
		if (rf_rss(p, c) <= rss * 1.001 + 1e-12) {
			p->held[i] = 1;
			p->np--;
		} else {
			c[i] = keep;
		}
	}
}

int sb_rf_fit(const sb_model *server, const sb_calib_input *in, size_t n, const sb_rf_opts *o,
	      sb_model *out, sb_error *e)
{
	rf_problem p;
	sb_model_init(out);
	int rc = rf_problem_load(&p, server, in, n, o, e);
	if (rc == 0) {
		p.np = 0;
		for (int i = 0; i < RF_NP; i++)
			p.np += rf_active(&p, i);
		p.res = malloc(rf_n_residuals(&p) * sizeof(double));
		rc = p.res ? 0 : sb_error_code(e, -ENOMEM, "out of memory");
	}
	double c[RF_NP];
	if (rc == 0) {
		start_values(&p, c);
		rc = search_file(&p, c, e);
	}
	if (rc == 0)
		hold_at_zero(&p, c);
	if (rc == 0)
		rc = polish_with_noise(&p, c, e);
	if (rc == 0)
		rc = ridge_file(&p, c, e);
	if (rc == 0)
		rc = covariance(&p, c, e);
	if (rc == 0)
		rc = rf_build(&p, c, in, out, e);
	free(p.res);
	gsl_matrix_free(p.cov);
	rf_problem_free(&p);
	return rc;
}
