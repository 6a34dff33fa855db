/* sweep_print.c — a sweep as text (see sweep_print.h). */
#include "sweep_print.h"

#include <math.h>
#include <string.h>

#include "core/knee.h"
#include "extrap.h"
#include "core/slotctx.h"

/* Formats v (and its CI half-width) into buf. */
static void cell(char *buf, size_t len, double v, double h, int prec, int ci)
{
	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (ci && isfinite(h))
		snprintf(buf, len, "%.*f±%.*f", prec, v, prec, h);
	else
		snprintf(buf, len, "%.*f", prec, v);
}

static const struct {
	const char *head;
	sb_metric m;
	int prec;
} cols[] = {
	{ "TTFT p50", SB_MET_TTFT_P50, 1 }, { "TTFT p90", SB_MET_TTFT_P90, 1 },
	{ "TTFT p99", SB_MET_TTFT_P99, 1 }, { "TPOT p50", SB_MET_TPOT_P50, 2 },
	{ "TPOT p99", SB_MET_TPOT_P99, 2 }, { "E2E p50", SB_MET_E2E_P50, 1 },
	{ "E2E p99", SB_MET_E2E_P99, 1 },   { "wait", SB_MET_WAIT_MEAN, 1 },
	{ "out tok/s", SB_MET_OUT_TOK_S, 1 }, { "req/s", SB_MET_REQ_S, 3 },
	{ "util", SB_MET_UTIL, 3 },         { "L=λW", SB_MET_L_LAW, 3 },
	{ "L obs", SB_MET_L_OBS, 3 },       { "goodput", SB_MET_GOODPUT, 3 },
};

/* Formats v and its 90% interval [lo,hi] into buf (without a finite
 * interval, as cell does). */
static void cell90(char *buf, size_t len, double v, double lo, double hi, int prec)
{
	if (!isfinite(v) || !isfinite(lo) || !isfinite(hi))
		cell(buf, len, v, NAN, prec, 0);
	else
		snprintf(buf, len, "%.*f [%.*f,%.*f]", prec, v, prec, lo, prec, hi);
}

/* One row of the table: the level, its cells, its marks. */
static void print_row(FILE *out, const sb_sweep *sw, int i, int ncols, int wd, int bounded)
{
	const sb_sweep_level *l = &sw->levels[i];
	int ci = sw->replications > 1;
	fprintf(out, "%8g", l->level);
	for (int c = 0; c < ncols; c++) {
		char buf[64];
		sb_metric k = cols[c].m;
		if (sw->uncertain)
			cell90(buf, sizeof buf, l->mean[k], l->lo90[k], l->hi90[k], cols[c].prec);
		else
			cell(buf, sizeof buf, l->mean[k], l->half[k], cols[c].prec, ci);
		int extra = strstr(buf, "±") ? 1 : 0;
		fprintf(out, " %*s", wd + extra, buf);
	}
	if (sw->knee == i)
		fprintf(out, "  <- knee");
	int xlo, xhi;
	if (sb_extrap_level(l, &xlo, &xhi))
		fprintf(out, "  (extrapolated)");
	if (l->diverged || (l->overloaded && !bounded))
		fprintf(out, "  (unstable)");
	else if (l->overloaded)
		fprintf(out, "  (overloaded)");
	fprintf(out, "\n");
}

static void print_table(FILE *out, const sb_sweep *sw, const sb_workload *w, int has_slo,
			int bounded)
{
	int ncols = (int)(sizeof cols / sizeof cols[0]) - (has_slo ? 0 : 1);
	int wd = sw->uncertain ? 23 : sw->replications > 1 ? 17 : 10;
	fprintf(out, "%8s", w->mode == SB_MODE_RATE ? "rate" : "clients");
	for (int c = 0; c < ncols; c++) {
		/* "λ" takes two bytes but one column */
		int extra = strstr(cols[c].head, "λ") ? 1 : 0;
		fprintf(out, " %*s", wd + extra, cols[c].head);
	}
	fprintf(out, "\n");
	for (int i = 0; i < sw->n_levels; i++)
		print_row(out, sw, i, ncols, wd, bounded);
}

/* "level L: ..." for a level whose requests were rejected (queue full, or
 * prompt past the slot's context), truncated, or cut at the context. */
static void print_reject_note(FILE *out, const sb_sweep_level *l, const sb_model *m)
{
	long rej = 0, tot = 0, tl = 0, tr = 0, cut = 0, pre = 0;
	for (int r = 0; r < l->n_reps; r++) {
		pre += l->reps[r].preempted;
		rej += l->reps[r].rejected;
		tl += l->reps[r].too_long;
		tr += l->reps[r].truncated;
		cut += l->reps[r].output_cut;
		tot += l->reps[r].sum.requests_ok + l->reps[r].sum.requests_failed;
	}
	if (rej > tl)
		fprintf(out, "level %g: %ld of %ld requests rejected (max_queue %ld)\n", l->level,
			rej - tl, tot, m->max_queue);
	if (tl > 0)
		fprintf(out, "level %g: %ld of %ld requests rejected as too long (prompt of %ld "
			     "tokens or more, the slot's context)\n", l->level, tl, tot,
			m->ctx_per_slot);
	if (tr > 0)
		fprintf(out, "level %g: %ld of %ld prompts truncated to %ld tokens (longer than the "
			     "slot's context of %ld)\n", l->level, tr, tot,
			sb_slotctx_truncated_len(m->ctx_per_slot), m->ctx_per_slot);
	if (cut > 0)
		fprintf(out, "level %g: %ld of %ld outputs stopped at the slot's context of %ld "
			     "tokens (finish_reason \"length\")\n", l->level, cut, tot, m->ctx_per_slot);
	if (pre > 0)
		fprintf(out, "level %g: %ld preemptions in %ld requests (KV blocks ran out: %ld "
			     "of %ld tokens each; recomputed)\n", l->level, pre, tot, m->gpu_blocks,
			m->block_size);
}

/* "level L: 41% of prompt tokens reused from the prompt cache (slot)". */
static void print_cache_note(FILE *out, const sb_sweep_level *l, const sb_model *m)
{
	long c = 0, p = 0;
	for (int r = 0; r < l->n_reps; r++) {
		c += l->reps[r].cached_tokens;
		p += l->reps[r].prompt_tokens;
	}
	if (p > 0)
		fprintf(out, "level %g: %.0f%% of prompt tokens reused from the prompt cache (%s)\n",
			l->level, 100.0 * (double)c / (double)p, sb_prompt_cache_name(m->prompt_cache));
}

/* The lines under the table for overloaded, diverged and rejecting levels. */
static void print_level_notes(FILE *out, const sb_sweep *sw, const sb_model *m)
{
	for (int i = 0; i < sw->n_levels; i++) {
		const sb_sweep_level *l = &sw->levels[i];
		if (l->overloaded && m->max_queue >= 0)
			fprintf(out, "rate %g: offered load λ=%.3f ≥ capacity μ≈%.3f req/s; the bounded "
				     "queue (max_queue %ld) turns the excess away\n",
				l->level, l->level, sw->capacity, m->max_queue);
		else if (l->overloaded)
			fprintf(out, "rate %g: queue grows without bound: λ=%.3f ≥ capacity μ≈%.3f req/s "
				     "(run bounded: up to %ld waiting; its figures describe a transient, "
				     "not a steady state)\n",
				l->level, l->level, sw->capacity, l->max_waiting);
		else if (l->diverged)
			fprintf(out, "rate %g: queue grows without bound: the queue reached %ld waiting "
				     "(λ=%.3f vs capacity μ≈%.3f req/s); run stopped early\n",
				l->level, l->max_waiting, l->level, sw->capacity);
		print_reject_note(out, l, m);
		if (m->prompt_cache != SB_PCACHE_NONE)
			print_cache_note(out, l, m);
		char x[128];
		sb_extrap_label(x, sizeof x, l, m);
		if (x[0])
			fprintf(out, "level %g: %s (decode_ms there from the fitted line)\n",
				l->level, x);
	}
}

/* Fleets: per level, how uneven the replicas were, Little's law for the
 * worst replica, and (up to 32 replicas) a line per replica. */
static void print_replicas(FILE *out, const sb_sweep *sw)
{
	for (int i = 0; i < sw->n_levels; i++) {
		const sb_sweep_level *l = &sw->levels[i];
		if (l->n_replicas < 1)
			continue;
		double worst = 0;
		for (int k = 0; k < l->n_replicas; k++) {
			const sb_sim_replica *p = &l->replicas[k];
			double d = p->mean_inflight > 0
				? fabs(p->l_law - p->mean_inflight) / p->mean_inflight : 0;
			worst = d > worst ? d : worst;
		}
		fprintf(out, "level %g, %d replicas: share max/min %.3f, utilization cv %.3f, "
			     "Little's law per replica within %.2g%%\n", l->level, l->n_replicas,
			l->share_ratio, l->util_cv, 100 * worst);
		if (l->n_replicas > 32)
			continue;
		fprintf(out, "  %7s %5s %6s %8s %7s %9s %8s %8s\n", "replica", "group", "slots",
			"share", "util", "req/s", "L=λW", "L obs");
		for (int k = 0; k < l->n_replicas; k++) {
			const sb_sim_replica *p = &l->replicas[k];
			fprintf(out, "  %7d %5d %6d %8.4f %7.3f %9.3f %8.3f %8.3f\n", k, p->group,
				p->slots, p->share, p->utilization, p->req_s, p->l_law,
				p->mean_inflight);
		}
	}
}

void sb_sweep_print(FILE *out, const sb_sweep *sw, const sb_model *m, const sb_sim_opts *o,
		    const sb_workload *w)
{
	int has_slo = w->slo.ttft_ms > 0 || w->slo.tpot_ms > 0;
	if (isfinite(sw->capacity))
		fprintf(out, "capacity μ ≈ %.3f req/s (%s)\n", sw->capacity,
			o->service_mode ? "slots / mean service time"
					: "saturated closed-loop simulation");
	fprintf(out, "times in ms%s\n\n",
		has_slo ? "; goodput = requests meeting the SLO per second" : "");
	print_table(out, sw, w, has_slo, m->max_queue >= 0);
	fprintf(out, "\n");
	print_level_notes(out, sw, m);
	char x[320];
	sb_extrap_data_label(x, sizeof x, m, w);
	if (x[0])
		fprintf(out, "%s\n", x);
	print_replicas(out, sw);
	if (sw->knee >= 0)
		fprintf(out, "knee: level %g — %s\n", sw->levels[sw->knee].level, sw->knee_reason);
	else
		fprintf(out, "knee: none within the sweep (p99 TTFT never reaches %gx the lowest "
			     "p99 below it%s)\n", SB_KNEE_MIN_RATIO,
			has_slo ? ", SLO met at every level" : "");
}
