/* capacity_check.c — a capacity plan checked live (capacity_check.h). */
#include "capacity_check.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonfile.h"
#include "sim/capacity.h"
#include "sim/sweep.h"
#include "validate/speed.h"

static const char *const qname[2] = { "ttft", "tpot" };
static const char *const QNAME[2] = { "TTFT", "TPOT" };

static double slo_of(const sb_slo *s, int q)
{
	return q == SB_CAPACITY_TTFT ? s->ttft_ms : s->tpot_ms;
}

static double pct_of(const sb_slo *s)
{
	return s->percentile > 0 && s->percentile < 100 ? s->percentile : 99;
}

/* The lowest and highest value of metric k over a level's replications. */
static void run_range(const sb_sweep_level *l, sb_metric k, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int i = 0; i < l->n_reps; i++) {
		double x = sb_sim_level_metric(&l->reps[i], k);
		*lo = fmin(*lo, x);
		*hi = fmax(*hi, x);
	}
}

/* The predicted SLO percentiles of m at point pt's rate (a sweep of that
 * one level, so the plan's and the at-speed prediction draw alike), into
 * its pred (at == 0) or pred_speed (at == 1). */
static int predict(const sb_capacity_check *p, sb_capacity_point *pt, int at, const sb_model *m,
		   const sb_workload *w, sb_error *e)
{
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	sb_workload w2 = *w;
	w2.mode = SB_MODE_RATE;
	w2.n_levels = 1;
	w2.levels[0] = pt->rate;
	sb_sweep sw;
	int r = sb_sweep_run(m, &o, &w2, p->replications, &sw, e);
	if (r < 0)
		return r;
	static const sb_metric met[2] = { SB_MET_TTFT_PCT, SB_MET_TPOT_PCT };
	double *pred = at ? pt->pred_speed : pt->pred;
	double *half = at ? pt->pred_speed_half : pt->pred_half;
	double *lo = at ? pt->speed_lo : pt->run_lo, *hi = at ? pt->speed_hi : pt->run_hi;
	for (int q = 0; q < 2; q++) {
		int on = slo_of(&p->slo, q) > 0;
		pred[q] = on ? sw.levels[0].mean[met[q]] : NAN;
		half[q] = on ? sw.levels[0].half[met[q]] : NAN;
		lo[q] = hi[q] = NAN;
		if (on)
			run_range(&sw.levels[0], met[q], &lo[q], &hi[q]);
	}
	sb_sweep_fini(&sw);
	return 0;
}

int sb_capacity_check_predict(sb_capacity_check *p, const sb_model *m, const sb_workload *w, int reps,
		       sb_error *e)
{
	memset(p, 0, sizeof(*p));
	p->slo = w->slo;
	p->slots = m->slots;
	p->replications = reps;
	sb_sim_opts o;
	sb_sim_opts_init(&o);
	int r = sb_capacity_max_rate(m, &o, w, reps, &p->max_rate, e);
	if (r < 0)
		return r;
	if (!(p->max_rate > 0))
		return sb_error_set(e, "the model meets the SLO at no rate with %d slots "
				       "(%g requests per level); nothing to check", m->slots,
				    (double)w->requests);
	p->at[0].rate = p->max_rate;
	p->at[1].rate = p->max_rate * SB_CAPACITY_CHECK_ABOVE;
	for (int i = 0; i < 2; i++)
		for (int q = 0; q < 2; q++)
			p->at[i].pred_speed[q] = p->at[i].pred_speed_half[q] =
				p->at[i].speed_lo[q] = p->at[i].speed_hi[q] = NAN;
	for (int i = 0; i < 2 && r == 0; i++)
		r = predict(p, &p->at[i], 0, m, w, e);
	return r;
}

/* The measured values of quantity q in level lv: failed requests +inf,
 * warm-up ones left out, TPOT of single-token requests left out. *out is
 * new (NULL when none). */
static int values(const sb_rlevel *lv, int q, double **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (lv->n_reqs == 0)
		return 0;
	double *v = malloc(lv->n_reqs * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < lv->n_reqs; i++) {
		const sb_reqrec *r = &lv->reqs[i];
		if (r->warmup)
			continue;
		double x = q == SB_CAPACITY_TTFT ? r->ttft_ms : sb_reqrec_tpot_ms(r);
		if (r->err_class || (q == SB_CAPACITY_TTFT && isnan(x)))
			x = INFINITY;
		if (!isnan(x))
			v[(*n)++] = x;
	}
	*out = v;
	return 0;
}

static sb_slo_verdict verdict_of(const sb_quantile_ci *c, double slo)
{
	if (c->hi <= slo)
		return SB_SLO_HELD;
	if (c->lo > slo)
		return SB_SLO_BROKE;
	return SB_SLO_UNDECIDED;
}

/* Judges one rate from its measured level. */
static int judge_point(sb_capacity_check *p, sb_capacity_point *pt, const sb_rlevel *lv, sb_error *e)
{
	pt->measured = 1;
	int held = 1, broke = 0;
	for (int q = 0; q < 2; q++) {
		double slo = slo_of(&p->slo, q);
		if (!(slo > 0))
			continue;
		double *v;
		size_t n;
		if (values(lv, q, &v, &n) < 0)
			return sb_error_code(e, -ENOMEM, "out of memory");
		int r = n ? sb_quantile_ci_compute(v, n, pct_of(&p->slo) / 100, SB_CAPACITY_CHECK_CONF,
						   &pt->meas[q], e)
			  : 0;
		free(v);
		if (r < 0)
			return r;
		pt->verdict_q[q] = n ? verdict_of(&pt->meas[q], slo) : SB_SLO_UNDECIDED;
		held &= pt->verdict_q[q] == SB_SLO_HELD;
		broke |= pt->verdict_q[q] == SB_SLO_BROKE;
	}
	pt->verdict = broke ? SB_SLO_BROKE : held ? SB_SLO_HELD : SB_SLO_UNDECIDED;
	return 0;
}

/* Whether pt's measured interval lies beyond every replication's value,
 * above them (side 1) or below them (side -1), for an SLO'd quantity. */
static int beyond_runs(const sb_capacity_check *p, const sb_capacity_point *pt, int side)
{
	for (int q = 0; q < 2; q++) {
		if (!(slo_of(&p->slo, q) > 0) || pt->meas[q].n == 0)
			continue;
		if (side > 0 && pt->meas[q].lo > pt->run_hi[q])
			return 1;
		if (side < 0 && pt->meas[q].hi < pt->run_lo[q])
			return 1;
	}
	return 0;
}

int sb_capacity_check_judge(sb_capacity_check *p, const sb_results *meas, sb_error *e)
{
	for (int i = 0; i < 2 && (size_t)i < meas->n_levels; i++) {
		const sb_rlevel *lv = &meas->levels[i];
		double want = p->at[i].rate;
		if (lv->sum.mode != SB_MODE_RATE || !(fabs(lv->sum.level - want) <= 1e-3 * want))
			return sb_error_set(e, "measured level %d is %s %g, not the planned rate %g req/s",
					    i + 1, sb_mode_name(lv->sum.mode), lv->sum.level, want);
		int r = judge_point(p, &p->at[i], lv, e);
		if (r < 0)
			return r;
	}
	sb_slo_verdict v0 = p->at[0].verdict, v1 = p->at[1].verdict;
	if ((p->at[0].measured && v0 == SB_SLO_BROKE && beyond_runs(p, &p->at[0], 1)) ||
	    (p->at[1].measured && v1 == SB_SLO_HELD && beyond_runs(p, &p->at[1], -1)))
		p->outcome = SB_CAPACITY_WRONG;
	else if (p->at[0].measured && p->at[1].measured && v0 != SB_SLO_BROKE &&
		 v1 == SB_SLO_BROKE)
		p->outcome = SB_CAPACITY_CONFIRMED;
	else
		p->outcome = SB_CAPACITY_INCONCLUSIVE;
	return 0;
}

int sb_capacity_check_at_speed(sb_capacity_check *p, const sb_model *m, const sb_workload *w,
			   const sb_step_speed *steps, size_t n, sb_error *e)
{
	for (int i = 0; i < 2 && (size_t)i < n; i++) {
		sb_capacity_point *pt = &p->at[i];
		if (!pt->measured)
			continue;
		pt->speed = steps[i];
		double fp, fd;
		if (!sb_step_speed_factors(&pt->speed, &fp, &fd))
			continue;
		sb_model ms;
		sb_model_copy(&ms, m);
		sb_speed_scale_model(&ms, fp, fd);
		int r = predict(p, pt, 1, &ms, w, e);
		sb_model_fini(&ms);
		if (r < 0)
			return r;
	}
	return 0;
}

const char *sb_slo_verdict_name(sb_slo_verdict v)
{
	return v == SB_SLO_HELD ? "held" : v == SB_SLO_BROKE ? "broke" : "undecided";
}

const char *sb_capacity_outcome_name(sb_capacity_outcome o)
{
	return o == SB_CAPACITY_CONFIRMED ? "confirmed" : o == SB_CAPACITY_WRONG ? "wrong" : "inconclusive";
}

/* "[lo, hi]" with open ends as "-inf"/"inf". */
static void fmt_ci(char *buf, size_t len, const sb_quantile_ci *c)
{
	char lo[32] = "-inf", hi[32] = "inf";
	if (isfinite(c->lo))
		snprintf(lo, sizeof(lo), "%.1f", c->lo);
	if (isfinite(c->hi))
		snprintf(hi, sizeof(hi), "%.1f", c->hi);
	snprintf(buf, len, "[%s, %s]", lo, hi);
}

/* Why the outcome is what it is, in words. */
static const char *outcome_why(const sb_capacity_check *p)
{
	sb_slo_verdict v0 = p->at[0].verdict, v1 = p->at[1].verdict;
	if (p->outcome == SB_CAPACITY_CONFIRMED)
		return v0 == SB_SLO_HELD ? "the SLO held at the planned rate and broke above it"
					 : "the SLO did not break at the planned rate (where the "
					   "model puts it at the SLO) and broke above it";
	if (p->outcome == SB_CAPACITY_WRONG)
		return v0 == SB_SLO_BROKE && p->at[0].measured
			       ? "the SLO broke at the planned rate, beyond every simulated run of "
				 "this size"
			       : "the SLO held 15% above the planned rate, beyond every simulated "
				 "run of this size";
	if (p->at[0].measured && v0 == SB_SLO_BROKE)
		return "the SLO broke at the planned rate, within the spread of the model's "
		       "simulated runs of this size (at the planned rate about half of them "
		       "break it): more requests would decide";
	if (p->at[1].measured && v1 == SB_SLO_HELD)
		return "the SLO held 15% above the planned rate, within the spread of the "
		       "model's simulated runs of this size: more requests would decide";
	return "the rate above the plan did not clearly break (more requests would decide)";
}

static void report_point(FILE *f, const sb_capacity_check *p, int i)
{
	const sb_capacity_point *pt = &p->at[i];
	fprintf(f, "  %.3f req/s (%s): %s\n", pt->rate,
		i == 0 ? "the plan, expected to hold" : "15% above, expected to break",
		pt->measured ? sb_slo_verdict_name(pt->verdict) : "not measured");
	for (int q = 0; q < 2 && pt->measured; q++) {
		if (!(slo_of(&p->slo, q) > 0))
			continue;
		const sb_quantile_ci *c = &pt->meas[q];
		char ci[80];
		fmt_ci(ci, sizeof(ci), c);
		fprintf(f, "    %s p%g: predicted %.1f +- %.1f ms (%d runs: %.1f..%.1f), measured %.1f ms, "
			   "%.0f%% interval %s (ranks %ld, %ld of %zu) vs SLO %g ms: %s\n",
			QNAME[q], pct_of(&p->slo), pt->pred[q], pt->pred_half[q], p->replications,
			pt->run_lo[q], pt->run_hi[q], c->point, 100 * c->coverage, ci, c->rank_lo,
			c->rank_hi, c->n, slo_of(&p->slo, q), sb_slo_verdict_name(pt->verdict_q[q]));
		if (isfinite(pt->pred_speed[q]))
			fprintf(f, "      at the server's speed: predicted %.1f +- %.1f ms (runs: %.1f..%.1f)\n",
				pt->pred_speed[q], pt->pred_speed_half[q], pt->speed_lo[q],
				pt->speed_hi[q]);
	}
	const sb_step_speed *sp = &pt->speed;
	char fd[16], fp[16];
	if (pt->measured && (isfinite(sp->f_decode) || isfinite(sp->f_prefill)))
		fprintf(f, "    the server's steps ran %s (decode, %ld token gaps) and %s "
			   "(with a prompt, %ld) of the model's times\n",
			sb_step_factor_str(fd, sp->f_decode), sp->n_decode,
			sb_step_factor_str(fp, sp->f_prefill), sp->n_prefill);
}

void sb_capacity_check_report(FILE *f, const sb_capacity_check *p)
{
	fprintf(f, "plan check (SLO at p%g:", pct_of(&p->slo));
	for (int q = 0; q < 2; q++)
		if (slo_of(&p->slo, q) > 0)
			fprintf(f, " %s <= %g ms", QNAME[q], slo_of(&p->slo, q));
	fprintf(f, "): the model's highest rate with %d slots is %.3f req/s\n", p->slots,
		p->max_rate);
	for (int i = 0; i < 2; i++)
		report_point(f, p, i);
	fprintf(f, "  rule: held when the order-statistic interval's upper bound is at most the "
		   "SLO, broke when its lower bound is above it, else undecided; a rate refutes "
		   "the plan only with its interval beyond every simulated run's value\n");
	fprintf(f, "plan %s: %s\n", sb_capacity_outcome_name(p->outcome), outcome_why(p));
}

static json_t *quantity_json(const sb_capacity_point *pt, int q)
{
	const sb_quantile_ci *c = &pt->meas[q];
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:s,s:o,s:o,s:o,s:o}",
			 "predicted_ms", sb_json_number(pt->pred[q]), "runs_lo_ms",
			 sb_json_number(pt->run_lo[q]), "runs_hi_ms", sb_json_number(pt->run_hi[q]),
			 "predicted_half_ms", sb_json_number(pt->pred_half[q]), "measured_ms",
			 c->n ? sb_json_number(c->point) : json_null(), "ci_lo_ms", sb_json_number(c->lo),
			 "ci_hi_ms", sb_json_number(c->hi), "ci_coverage",
			 c->n ? sb_json_number(c->coverage) : json_null(), "n", (json_int_t)c->n,
			 "verdict", sb_slo_verdict_name(pt->verdict_q[q]), "predicted_at_speed_ms",
			 sb_json_number(pt->pred_speed[q]), "predicted_at_speed_half_ms",
			 sb_json_number(pt->pred_speed_half[q]), "at_speed_runs_lo_ms",
			 sb_json_number(pt->speed_lo[q]), "at_speed_runs_hi_ms", sb_json_number(pt->speed_hi[q]));
}

static json_t *point_json(const sb_capacity_check *p, int i)
{
	const sb_capacity_point *pt = &p->at[i];
	json_t *j = json_pack("{s:f,s:s,s:b,s:s}", "rate_req_s", pt->rate, "expected",
			      i == 0 ? "held" : "broke", "measured", pt->measured, "verdict",
			      sb_slo_verdict_name(pt->verdict));
	for (int q = 0; j && q < 2; q++)
		if (slo_of(&p->slo, q) > 0)
			json_object_set_new(j, qname[q], quantity_json(pt, q));
	if (j && pt->measured)
		json_object_set_new(j, "speed",
				    json_pack("{s:o,s:o,s:I,s:I}", "decode",
					      sb_json_number(pt->speed.f_decode), "prefill",
					      sb_json_number(pt->speed.f_prefill), "decode_gaps",
					      (json_int_t)pt->speed.n_decode, "prefill_gaps",
					      (json_int_t)pt->speed.n_prefill));
	return j;
}

json_t *sb_capacity_check_to_json(const sb_capacity_check *p)
{
	json_t *slo = json_pack("{s:f}", "percentile", pct_of(&p->slo));
	for (int q = 0; slo && q < 2; q++)
		if (slo_of(&p->slo, q) > 0)
			json_object_set_new(slo, q ? "tpot_ms" : "ttft_ms", sb_json_number(slo_of(&p->slo, q)));
	json_t *rates = json_pack("[o,o]", point_json(p, 0), point_json(p, 1));
	return json_pack("{s:o,s:i,s:i,s:f,s:f,s:s,s:o,s:s}", "slo", slo, "slots", p->slots,
			 "replications", p->replications, "max_rate_req_s", p->max_rate,
			 "above_factor", SB_CAPACITY_CHECK_ABOVE, "rule",
			 "order-statistic interval (95%) of the percentile: held when its upper "
			 "bound <= SLO, broke when its lower bound > SLO, else undecided; wrong "
			 "only when the planned rate broke with its interval above every "
			 "replication's value, or 15% above held with its interval below every "
			 "replication's value",
			 "rates", rates, "outcome", sb_capacity_outcome_name(p->outcome));
}
