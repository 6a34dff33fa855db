/* compare_report.c — the human-readable comparison table (compare.h). The
 * caller supplies the stream; this file only formats. */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

/* "   143.2/  140.1  -2.2%" into buf; dashes for missing values. */
static void cell(char *buf, size_t len, double meas, double pred, double err)
{
	char m[16] = "-", p[16] = "-", e[16] = "";
	if (isfinite(meas))
		snprintf(m, sizeof(m), meas >= 1000 ? "%.0f" : "%.1f", meas);
	if (isfinite(pred))
		snprintf(p, sizeof(p), pred >= 1000 ? "%.0f" : "%.1f", pred);
	if (isfinite(err))
		snprintf(e, sizeof(e), "%+.1f%%", err);
	snprintf(buf, len, "%7s/%-7s%8s", m, p, e);
}

static const char *level_label(const sb_cmp_level *cl, char *buf, size_t len)
{
	if (cl->mode == SB_MODE_RATE)
		snprintf(buf, len, "open loop %g req/s", cl->level);
	else
		snprintf(buf, len, "closed loop c=%g", cl->level);
	return buf;
}

static void pct(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%8.1f%%", v);
	else
		fprintf(f, "%9s", "-");
}

/* Level cl's table: TTFT/TPOT/E2E by statistic, then the throughputs. */
static void report_table(FILE *f, const sb_cmp_level *cl)
{
	static const char *qn[SB_CMP_N_QUANT] = { "TTFT ms", "TPOT ms", "E2E ms" };
	static const char *st[4] = { "mean", "p50", "p90", "p99" };
	char buf[64];
	fprintf(f, "%-8s", "");
	for (int s = 0; s < 4; s++)
		fprintf(f, " %7s %-15s", st[s], "");
	fputc('\n', f);
	for (int q = 0; q < SB_CMP_N_QUANT; q++) {
		fprintf(f, "%-8s", qn[q]);
		for (int s = 0; s < 4; s++) {
			sb_metric k = sb_compare_metrics[q * 4 + s]; /* q's stat s */
			cell(buf, sizeof(buf), cl->meas[k], cl->pred[k], cl->err_pct[k]);
			fprintf(f, " %-23s", buf);
		}
		fputc('\n', f);
	}
	cell(buf, sizeof(buf), cl->meas[SB_MET_OUT_TOK_S], cl->pred[SB_MET_OUT_TOK_S],
	     cl->err_pct[SB_MET_OUT_TOK_S]);
	fprintf(f, "%-8s %-23s", "tok/s", buf);
	cell(buf, sizeof(buf), cl->meas[SB_MET_REQ_S], cl->pred[SB_MET_REQ_S],
	     cl->err_pct[SB_MET_REQ_S]);
	fprintf(f, " req/s %s\n", buf);
}

/* verbose: the replay's spread and every request, measured/predicted. */
static void report_requests(FILE *f, const sb_cmp_level *cl)
{
	fprintf(f, "replay sd over replications:");
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
		sb_metric k = sb_compare_metrics[j];
		if (isfinite(cl->pred_sd[k]))
			fprintf(f, " %s %.3g", sb_metric_key(k), cl->pred_sd[k]);
	}
	fputc('\n', f);
	for (size_t j = 0; j < cl->n_reqs; j++) {
		const sb_cmp_req *r = &cl->reqs[j];
		fprintf(f, "  req %-5ld in %-5ld out %-5ld TTFT %8.1f/%-8.1f E2E %8.1f/%-8.1f\n",
			r->id, r->prompt_tokens, r->output_tokens, r->meas_ttft_ms, r->pred_ttft_ms,
			r->meas_e2e_ms, r->pred_e2e_ms);
	}
}

/* A fleet's replicas: one line each, TTFT and E2E mean and p99 and
 * req/s, measured/predicted (error). */
static void report_replicas(FILE *f, const sb_cmp_level *cl)
{
	static const sb_metric cols[] = { SB_MET_TTFT_MEAN, SB_MET_TTFT_P99, SB_MET_E2E_MEAN,
					  SB_MET_E2E_P99, SB_MET_REQ_S };
	static const char *names[] = { "TTFT mean", "TTFT p99", "E2E mean", "E2E p99", "req/s" };
	if (cl->open_loop_replay)
		fprintf(f, "fleet of %zu: each replica replayed OPEN LOOP at the measured send "
			   "times (the closed loop's clients are not simulated)\n",
			cl->n_replicas);
	else
		fprintf(f, "fleet of %zu: each replica replayed on its own\n", cl->n_replicas);
	for (size_t g = 0; g < cl->n_replicas; g++) {
		const sb_cmp_level *rl = &cl->replicas[g];
		fprintf(f, "  replica %zu (%ld req):", g, rl->n_counted);
		for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
			char buf[64];
			sb_metric k = cols[i];
			cell(buf, sizeof(buf), rl->meas[k], rl->pred[k], rl->err_pct[k]);
			fprintf(f, " %s %s", names[i], buf);
		}
		fputc('\n', f);
	}
}

static void report_level(FILE *f, const sb_cmp_level *cl, int verbose)
{
	char lab[64];
	fprintf(f, "\n== %s: %ld requests, %s\n", level_label(cl, lab, sizeof(lab)), cl->n_counted,
		cl->replayed ? "replay of the measured requests"
			     : "forecast (no per-request records)");
	report_table(f, cl);
	if (cl->replayed)
		fprintf(f, "per request: median |error| TTFT %.1f%%, E2E %.1f%%\n",
			cl->req_ttft_mdape, cl->req_e2e_mdape);
	if (cl->n_replicas)
		report_replicas(f, cl);
	if (cl->has_forecast) {
		int in = 0, tot = 0;
		for (int k = 0; k < SB_MET_N; k++) {
			if (cl->fc_inside[k] >= 0) {
				tot++;
				in += cl->fc_inside[k];
			}
		}
		fprintf(f, "forecast for fresh traffic (95%% of runs of this size): "
			   "TTFT p50 %.1f..%.1f, p99 %.1f..%.1f; %d/%d measured values inside\n",
			cl->fc_lo[SB_MET_TTFT_P50], cl->fc_hi[SB_MET_TTFT_P50],
			cl->fc_lo[SB_MET_TTFT_P99], cl->fc_hi[SB_MET_TTFT_P99], in, tot);
	}
	if (verbose)
		report_requests(f, cl);
}

/* The median errors over levels, the knees and the forecast coverage. */
static void report_summary(FILE *f, const sb_comparison *c)
{
	fprintf(f, "\nsummary: median |error| over levels\n");
	fprintf(f, "%-8s %9s %9s\n", "", "mean/p50", "p90/p99");
	for (int q = 0; q < SB_CMP_N_QUANT; q++) {
		fprintf(f, "%-8s ", q == 0 ? "TTFT" : q == 1 ? "TPOT" : "E2E");
		pct(f, c->mdape_quant[q][0]);
		fputc(' ', f);
		pct(f, c->mdape_quant[q][1]);
		fputc('\n', f);
	}
	fprintf(f, "%-8s ", "all");
	pct(f, c->mdape_central);
	fputc(' ', f);
	pct(f, c->mdape_tail);
	fprintf(f, "   throughput");
	pct(f, c->mdape_throughput);
	fputc('\n', f);
	if (c->cap_mode >= 0)
		fprintf(f, "capacity (saturated at %s %g): measured %.4g %s, predicted %.4g (%+.1f%%)\n",
			sb_mode_name((sb_mode)c->cap_mode), c->cap_level, c->cap_meas,
			c->cap_metric == SB_MET_REQ_S ? "req/s" : "output tok/s", c->cap_pred,
			c->cap_err_pct);
	else
		fprintf(f, "capacity: no level saturated the server (closed loop at or above its "
			   "slots, or open loop completing under %.0f%% of its rate)\n",
			100 * SB_CMP_SATURATED);
	for (int md = 0; md < 2; md++) {
		if (c->knee_match[md] < 0)
			continue;
		char a[32] = "none", b[32] = "none";
		if (isfinite(c->knee_meas[md]))
			snprintf(a, sizeof(a), "%g", c->knee_meas[md]);
		if (isfinite(c->knee_pred[md]))
			snprintf(b, sizeof(b), "%g", c->knee_pred[md]);
		fprintf(f, "knee of TTFT p99 (%s): measured at %s, predicted at %s%s\n",
			sb_mode_name((sb_mode)md), a, b, c->knee_match[md] ? " (match)" : " (MISMATCH)");
	}
	if (c->fc_total)
		fprintf(f, "forecast: %ld of %ld measured values inside the 95%% interval of fresh runs\n",
			c->fc_inside, c->fc_total);
}

/* One client's TPOT is the server's bare decode speed: a miss there is the
 * server running at another speed than during calibration, and every other
 * level carries it too. One client's TTFT is its bare prefill: a miss there
 * is the same, or the model's prefill line off at a prompt length it was
 * not calibrated at. */
static void report_notes(FILE *f, const sb_comparison *c)
{
	static const struct {
		sb_metric cell;
		const char *name, *why;
	} notes[] = {
		{ SB_MET_TPOT_MEAN, "TPOT",
		  "if the model was calibrated on this server, its speed has changed since "
		  "(other load on the machine?), and the errors above include that" },
		{ SB_MET_TTFT_MEAN, "TTFT",
		  "the server's prefill speed has changed since calibration, or the model's "
		  "prefill line is off at this prompt length; every level's TTFT carries it" },
	};
	for (size_t i = 0; i < c->n_levels; i++) {
		const sb_cmp_level *l = &c->levels[i];
		if (l->mode != SB_MODE_CONCURRENCY || l->level != 1)
			continue;
		for (size_t k = 0; k < sizeof(notes) / sizeof(notes[0]); k++) {
			double err = l->err_pct[notes[k].cell];
			if (isfinite(err) && fabs(err) > 5)
				fprintf(f, "note: with one client the model's %s is %.0f%% %s the "
					   "measured one (%.4g ms predicted, %.4g measured): %s\n",
					notes[k].name, fabs(err), err < 0 ? "below" : "above",
					l->pred[notes[k].cell], l->meas[notes[k].cell], notes[k].why);
		}
	}
}

/* A fleet's routed comparison (compare.h): each replayed level's table,
 * then its summary; a fleet file without a route says why there is none. */
static void report_routed(FILE *f, const sb_comparison *c)
{
	const sb_comparison *r = c->routed;
	if (!r) {
		if (c->n_levels && c->levels[0].n_replicas)
			fprintf(f, "\nno routed comparison: the file's target names no route\n");
		return;
	}
	fprintf(f, "\n==== routed: the measured arrivals through the SIMULATED router (%s, %d "
		   "replicas), fleet-wide\n",
		sb_route_name((sb_route)c->routed_route), c->routed_replicas);
	for (size_t i = 0; i < r->n_levels; i++) {
		const sb_cmp_level *l = &r->levels[i];
		char lab[64];
		if (!l->replayed)
			continue;
		fprintf(f, "\n== routed, %s: %ld requests\n", level_label(l, lab, sizeof(lab)),
			l->n_counted);
		report_table(f, l);
	}
	report_summary(f, r);
}

int sb_compare_report(FILE *f, const sb_comparison *c, int verbose)
{
	fprintf(f, "measured/predicted and error = (predicted - measured) / measured\n");
	if (c->measured_slots > 0 && c->measured_slots != c->model_slots)
		fprintf(f, "NOTE: the measured server reports %d slots but the model has %d: "
			   "the prediction is for the model's\n", c->measured_slots, c->model_slots);
	if (c->cache_dropped)
		fprintf(f, "NOTE: the run asked the server not to reuse prompts (--no-cache-prompt): "
			   "replayed without the model's prompt cache\n");
	for (size_t i = 0; i < c->n_levels; i++)
		report_level(f, &c->levels[i], verbose);
	report_summary(f, c);
	report_notes(f, c);
	report_routed(f, c);
	return ferror(f) ? -EIO : 0;
}

int sb_compare_report_goals(FILE *f, const sb_comparison *c, const sb_compare_goals *g)
{
	char why[1024];
	int met = sb_compare_check(c, g, why, sizeof(why));
	if (met)
		fprintf(f, "goals met: median |error| <= %g%% (mean/p50) and <= %g%% (p90/p99)%s\n",
			g->central_pct, g->tail_pct,
			g->require_knee ? ", knee at the measured level" : "");
	else
		fprintf(f, "goals missed:\n%s", why);
	return met;
}
