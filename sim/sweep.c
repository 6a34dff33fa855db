/* sweep.c — levels x replications, confidence intervals, knee. */
#include "sweep.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>

#include "core/knee.h"
#include "uncertainty.h"
#include "workers.h"

double sb_sim_level_metric(const sb_sim_level *l, sb_metric k)
{
	switch (k) {
	case SB_MET_UTIL: return l->utilization;
	case SB_MET_TTFT_PCT: return l->ttft_pct_ms;
	case SB_MET_TPOT_PCT: return l->tpot_pct_ms;
	case SB_MET_REJECTED: return (double)l->rejected;
	default: return sb_metric_get(&l->sum, k);
	}
}

/* Mean of the finite values of x[0..n) across replications, and the 95%
 * Student-t half-width (NaN with fewer than 2 finite values). */
static void mean_ci(const double *x, int n, double *mean, double *half)
{
	double s = 0;
	int k = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(x[i])) {
			s += x[i];
			k++;
		}
	*mean = k ? s / k : NAN;
	*half = NAN;
	if (k < 2)
		return;
	double ss = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(x[i]))
			ss += (x[i] - *mean) * (x[i] - *mean);
	double sd = sqrt(ss / (k - 1));
	*half = gsl_cdf_tdist_Pinv(0.975, k - 1) * sd / sqrt((double)k);
}

static void avg_summary(sb_summary *dst, sb_sim_level *reps, int n, size_t off)
{
	double f[6] = { 0 };
	int cnt[6] = { 0 };
	uint64_t nn = 0;
	for (int i = 0; i < n; i++) {
		const sb_summary *s = (const sb_summary *)((const char *)&reps[i].sum + off);
		const double v[6] = { s->mean, s->p50, s->p90, s->p99, s->min, s->max };
		for (int j = 0; j < 6; j++)
			if (isfinite(v[j])) {
				f[j] += v[j];
				cnt[j]++;
			}
		nn += s->n;
	}
	double r[6];
	for (int j = 0; j < 6; j++)
		r[j] = cnt[j] ? f[j] / cnt[j] : NAN;
	dst->mean = r[0];
	dst->p50 = r[1];
	dst->p90 = r[2];
	dst->p99 = r[3];
	dst->min = r[4];
	dst->max = r[5];
	dst->n = nn;
}

static double avg_field(sb_sim_level *reps, int n, size_t off)
{
	double s = 0;
	int k = 0;
	for (int i = 0; i < n; i++) {
		double v = *(const double *)((const char *)&reps[i].sum + off);
		if (isfinite(v)) {
			s += v;
			k++;
		}
	}
	return k ? s / k : NAN;
}

/* The replicas' figures of a fleet level: each field's mean across the
 * replications (NaN-free ones), and the unevenness measures'. */
static int avg_replicas(sb_sweep_level *l)
{
	int n = l->reps[0].n_replicas;
	l->share_ratio = l->util_cv = NAN;
	if (n < 1)
		return 0;
	l->replicas = calloc((size_t)n, sizeof *l->replicas);
	if (!l->replicas)
		return -ENOMEM;
	l->n_replicas = n;
	double x[2] = { 0, 0 };
	int k = 0;
	for (int r = 0; r < l->n_reps; r++) {
		const sb_sim_level *v = &l->reps[r];
		if (v->n_replicas != n)
			continue;
		k++;
		x[0] += v->share_ratio;
		x[1] += v->util_cv;
		for (int i = 0; i < n; i++) {
			sb_sim_replica *p = &l->replicas[i];
			const sb_sim_replica *q = &v->replicas[i];
			p->group = q->group;
			p->slots = q->slots;
			p->requests += q->requests;
			p->share += q->share;
			p->utilization += q->utilization;
			p->req_s += q->req_s;
			p->mean_inflight += q->mean_inflight;
			p->l_law += q->l_law;
		}
	}
	for (int i = 0; i < n && k > 0; i++) {
		sb_sim_replica *p = &l->replicas[i];
		p->share /= k;
		p->utilization /= k;
		p->req_s /= k;
		p->mean_inflight /= k;
		p->l_law /= k;
	}
	l->share_ratio = k ? x[0] / k : NAN;
	l->util_cv = k ? x[1] / k : NAN;
	return 0;
}

/* Sums the error classes of every replication into s (the first's kept). */
static void sum_errors(sb_level *s, const sb_sweep_level *l)
{
	for (int i = 1; i < l->n_reps; i++)
		for (int j = 0; j < l->reps[i].sum.n_errors; j++) {
			const sb_errcount *ec = &l->reps[i].sum.errors[j];
			int found = 0;
			for (int k = 0; k < s->n_errors; k++)
				if (!strcmp(s->errors[k].cls, ec->cls)) {
					s->errors[k].count += ec->count;
					found = 1;
				}
			if (!found && s->n_errors < SB_LEVEL_MAX_ERR_CLASSES)
				s->errors[s->n_errors++] = *ec;
		}
}

/* Level l's figures across its replications (all simulated): divergence,
 * means and CIs, the averaged summary, the fleet's replicas. */
static int level_aggregate(sb_sweep_level *l, sb_error *e)
{
	int reps = l->n_reps;
	for (int r = 0; r < reps; r++) {
		if (l->reps[r].diverged)
			l->diverged = 1;
		if (l->reps[r].max_waiting > l->max_waiting)
			l->max_waiting = l->reps[r].max_waiting;
	}
	double *x = malloc((size_t)reps * sizeof *x);
	if (!x)
		return sb_error_code(e, -ENOMEM, "out of memory");
	for (int k = 0; k < SB_MET_N; k++) {
		for (int r = 0; r < reps; r++)
			x[r] = sb_sim_level_metric(&l->reps[r], (sb_metric)k);
		mean_ci(x, reps, &l->mean[k], &l->half[k]);
		l->lo90[k] = l->hi90[k] = NAN;
		if (!l->drawn)
			continue;
		for (int r = 0; r < reps; r++)
			x[r] = sb_sim_level_metric(&l->drawn[r], (sb_metric)k);
		sb_sweep_pi90(x, reps, &l->lo90[k], &l->hi90[k]);
	}
	free(x);
	sb_level *s = &l->summary;
	*s = l->reps[0].sum;
	s->requests_ok = s->requests_failed = 0;
	for (int r = 0; r < reps; r++) {
		s->requests_ok += l->reps[r].sum.requests_ok;
		s->requests_failed += l->reps[r].sum.requests_failed;
	}
	sum_errors(s, l);
	avg_summary(&s->ttft_ms, l->reps, reps, offsetof(sb_level, ttft_ms));
	avg_summary(&s->tpot_ms, l->reps, reps, offsetof(sb_level, tpot_ms));
	avg_summary(&s->itl_ms, l->reps, reps, offsetof(sb_level, itl_ms));
	avg_summary(&s->e2e_ms, l->reps, reps, offsetof(sb_level, e2e_ms));
	avg_summary(&s->wait_ms, l->reps, reps, offsetof(sb_level, wait_ms));
#define AVG(f) s->f = avg_field(l->reps, reps, offsetof(sb_level, f))
	AVG(duration_s);
	AVG(output_tok_s);
	AVG(req_s);
	AVG(goodput_req_s);
	AVG(lambda_req_s);
	AVG(w_s);
	AVG(l_law);
	AVG(l_observed);
#undef AVG
	s->schedule_lag_p99_ms = NAN; /* simulated sends are never late */
	if (avg_replicas(l) < 0)
		return sb_error_code(e, -ENOMEM, "out of memory");
	return 0;
}

/* The p-quantile of sorted x[0..k) at position p (k + 1) (1-based; clamped
 * to 1..k), linearly interpolated: a new value exchangeable with the k lies
 * below order statistic j with chance j / (k + 1), so [q(0.05), q(0.95)]
 * holds a new run 90% of the time. (The (k - 1) p + 1 position of
 * gsl_stats_quantile_from_sorted_data describes the sample itself: its
 * 5th-95th percentile of 40 replications holds a new run only 86% of the
 * time, (38.05 - 2.95) / 41.) */
static double pred_quantile(const double *x, int k, double p)
{
	double h = p * (k + 1.0);
	if (h <= 1)
		return x[0];
	if (h >= k)
		return x[k - 1];
	int j = (int)h; /* 1 <= j < k */
	return x[j - 1] + (h - j) * (x[j] - x[j - 1]);
}

void sb_sweep_pi90(double *x, int n, double *lo, double *hi)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (isfinite(x[i]))
			x[k++] = x[i];
	*lo = *hi = NAN;
	if (k < 2)
		return;
	gsl_sort(x, 1, (size_t)k);
	*lo = pred_quantile(x, k, 0.05);
	*hi = pred_quantile(x, k, 0.95);
}

/* Whether replication r of l meets slo on its own. */
static int rep_meets(const sb_sim_level *r, const sb_slo *slo)
{
	double pct = slo->percentile > 0 && slo->percentile < 100 ? slo->percentile : 99;
	double total = (double)(r->sum.requests_ok + r->sum.requests_failed);
	if (r->diverged || (total > 0 && (double)r->rejected / total > (100 - pct) / 100))
		return 0;
	if (slo->ttft_ms > 0 && !(r->ttft_pct_ms <= slo->ttft_ms))
		return 0;
	if (slo->tpot_ms > 0 && isfinite(r->tpot_pct_ms) && !(r->tpot_pct_ms <= slo->tpot_ms))
		return 0;
	return 1;
}

double sb_sweep_share_meeting(const sb_sweep_level *l, const sb_slo *slo)
{
	if (l->n_reps < 1)
		return NAN;
	if (l->overloaded)
		return 0;
	const sb_sim_level *x = l->drawn ? l->drawn : l->reps;
	int k = 0;
	for (int r = 0; r < l->n_reps; r++)
		k += rep_meets(&x[r], slo);
	return (double)k / l->n_reps;
}

/* Levels' replications as units of work (workers.h): unit i < n * reps is
 * replication i % reps of levels[i / reps] on the model as it is, unit
 * n * reps + i the same replication with drawn coefficients (with
 * o->uncert), each seeded by (seed, index0 + its level, replication)
 * whatever thread runs it. */
typedef struct sweep_units {
	const sb_model *m;
	const sb_sim_opts *o;
	const sb_workload *w;
	sb_sweep_level *levels;
	int index0, reps;
	int prefix;            /* errors say "level L: " */
	int n;                 /* levels */
} sweep_units;

static int run_unit(void *ctx, int i, sb_error *e)
{
	const sweep_units *u = ctx;
	int drawn = i >= u->n * u->reps;
	i %= u->n * u->reps;
	int li = i / u->reps, r = i % u->reps;
	sb_sweep_level *l = &u->levels[li];
	unsigned long seed = sb_seed_derive(u->w->seed, (unsigned long)(u->index0 + li),
					    (unsigned long)r);
	int rc = drawn ? sb_uncert_run_level(u->m, u->o, u->w, l->level, seed, &l->drawn[r], e)
		       : sb_sim_run_level(u->m, u->o, u->w, l->level, seed, &l->reps[r], e);
	if (rc < 0 && u->prefix)
		sb_error_prefix(e, "level %g", l->level);
	return rc;
}

/* Runs n levels (each's level set, reps zeroed) with reps replications each
 * on o->jobs threads, then aggregates each. */
static int run_levels(sweep_units *u, int n, sb_error *e)
{
	int draws = u->o->uncert && u->o->uncert->n > 0;
	u->n = n;
	for (int li = 0; li < n; li++) {
		sb_sweep_level *l = &u->levels[li];
		l->reps = calloc((size_t)u->reps, sizeof *l->reps);
		l->drawn = draws ? calloc((size_t)u->reps, sizeof *l->drawn) : NULL;
		if (!l->reps || (draws && !l->drawn))
			return sb_error_code(e, -ENOMEM, "out of memory");
		l->n_reps = u->reps;
	}
	int rc = sb_workers_run((draws ? 2 : 1) * n * u->reps, u->o->jobs, run_unit, u, e);
	for (int li = 0; rc == 0 && li < n; li++)
		rc = level_aggregate(&u->levels[li], e);
	return rc;
}

int sb_sweep_level_run(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
		   int lvl_index, int reps, sb_sweep_level *l, sb_error *e)
{
	sweep_units u = { m, o, w, l, lvl_index, reps, 0, 1 };
	return run_levels(&u, 1, e);
}

int sb_sweep_level_meets(const sb_sweep_level *l, const sb_slo *slo)
{
	if (l->diverged || l->overloaded)
		return 0;
	double pct = slo->percentile > 0 && slo->percentile < 100 ? slo->percentile : 99;
	double total = 0, rej = 0;
	for (int r = 0; r < l->n_reps; r++) {
		total += (double)(l->reps[r].sum.requests_ok + l->reps[r].sum.requests_failed);
		rej += (double)l->reps[r].rejected;
	}
	if (total > 0 && rej / total > (100 - pct) / 100)
		return 0;
	if (slo->ttft_ms > 0 && !(l->mean[SB_MET_TTFT_PCT] <= slo->ttft_ms))
		return 0;
	if (slo->tpot_ms > 0 && isfinite(l->mean[SB_MET_TPOT_PCT]) &&
	    !(l->mean[SB_MET_TPOT_PCT] <= slo->tpot_ms))
		return 0;
	return 1;
}

/* Writes why level i of s breaks slo into buf. */
static void slo_reason(const sb_sweep *s, int i, const sb_slo *slo, char *buf, size_t len)
{
	const sb_sweep_level *l = &s->levels[i];
	double pct = slo->percentile > 0 ? slo->percentile : 99;
	if (l->diverged || l->overloaded)
		snprintf(buf, len, "SLO broken: the queue grows without bound");
	else if (slo->ttft_ms > 0 && !(l->mean[SB_MET_TTFT_PCT] <= slo->ttft_ms))
		snprintf(buf, len, "SLO broken: p%g TTFT %.1f ms > %g ms", pct,
			 l->mean[SB_MET_TTFT_PCT], slo->ttft_ms);
	else if (slo->tpot_ms > 0 && !(l->mean[SB_MET_TPOT_PCT] <= slo->tpot_ms))
		snprintf(buf, len, "SLO broken: p%g TPOT %.2f ms > %g ms", pct,
			 l->mean[SB_MET_TPOT_PCT], slo->tpot_ms);
	else
		snprintf(buf, len, "SLO broken: too many requests rejected");
}

/* The knee of s (core/knee.h) on the mean p99 TTFT across replications,
 * or the first level that breaks w's SLO when that comes earlier. */
static void set_knee(sb_sweep *s, const sb_workload *w)
{
	size_t n = (size_t)s->n_levels;
	double lv[SB_WORKLOAD_MAX_LEVELS], p99[SB_WORKLOAD_MAX_LEVELS];
	for (size_t i = 0; i < n && i < SB_WORKLOAD_MAX_LEVELS; i++) {
		lv[i] = s->levels[i].level;
		p99[i] = s->levels[i].mean[SB_MET_TTFT_P99];
	}
	int k = n <= SB_WORKLOAD_MAX_LEVELS ? sb_knee_find(lv, p99, n, SB_KNEE_MIN_RATIO) : -1;
	int has_slo = w->slo.ttft_ms > 0 || w->slo.tpot_ms > 0;
	for (int i = 0; has_slo && i < s->n_levels && (k < 0 || i < k); i++) {
		if (!sb_sweep_level_meets(&s->levels[i], &w->slo)) {
			s->knee = i;
			slo_reason(s, i, &w->slo, s->knee_reason, sizeof s->knee_reason);
			return;
		}
	}
	s->knee = k;
	if (k < 0)
		return;
	double base = sb_knee_base(p99, k);
	snprintf(s->knee_reason, sizeof s->knee_reason,
		 "p99 TTFT rises most steeply from level %g (%.1f -> %.1f ms), %.1fx the "
		 "lowest p99 below it", lv[k - 1], p99[k - 1], p99[k], p99[k] / base);
}

int sb_sweep_run(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
		 int reps, sb_sweep *out, sb_error *e)
{
	memset(out, 0, sizeof *out);
	out->knee = -1;
	out->capacity = NAN;
	if (reps < 1)
		return sb_error_set(e, "replications %d must be at least 1", reps);
	if (w->n_levels < 1)
		return sb_error_set(e, "no load levels to simulate");
	out->replications = reps;
	out->uncertain = o->uncert && o->uncert->n > 0;
	if (w->mode == SB_MODE_RATE) {
		int rc = sb_sim_capacity(m, o, w, &out->capacity, e);
		if (rc < 0)
			return rc;
	}
	out->levels = calloc((size_t)w->n_levels, sizeof *out->levels);
	if (!out->levels)
		return sb_error_code(e, -ENOMEM, "out of memory");
	out->n_levels = w->n_levels;
	for (int i = 0; i < w->n_levels; i++) {
		sb_sweep_level *l = &out->levels[i];
		l->level = w->levels[i];
		if (w->mode == SB_MODE_RATE && l->level >= out->capacity)
			l->overloaded = 1;
	}
	sweep_units u = { m, o, w, out->levels, 0, reps, 1, w->n_levels };
	int rc = run_levels(&u, w->n_levels, e);
	if (rc < 0) {
		sb_sweep_fini(out);
		return rc;
	}
	set_knee(out, w);
	return 0;
}

void sb_sweep_fini(sb_sweep *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n_levels; i++)
		sb_sweep_level_fini(&s->levels[i]);
	free(s->levels);
	s->levels = NULL;
	s->n_levels = 0;
}

void sb_sweep_level_fini(sb_sweep_level *l)
{
	for (int r = 0; r < l->n_reps; r++) {
		if (l->reps)
			sb_sim_level_fini(&l->reps[r]);
		if (l->drawn)
			sb_sim_level_fini(&l->drawn[r]);
	}
	free(l->reps);
	free(l->drawn);
	free(l->replicas);
	memset(l, 0, sizeof *l);
}
