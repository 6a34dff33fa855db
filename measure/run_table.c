/* run_table.c — a measured results document as a table (see run_table.h). */
#include "run_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void ms(char *buf, size_t n, double v)
{
	if (!isfinite(v))
		snprintf(buf, n, "-");
	else if (v >= 10000)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.1f", v);
}

/* "c=4" or "rate=2.5". */
static void level_name(char *buf, size_t n, const sb_level *lv)
{
	snprintf(buf, n, "%s%g", lv->mode == SB_MODE_RATE ? "rate=" : "c=", lv->level);
}

static void print_target(FILE *out, const sb_target_info *t)
{
	fprintf(out, "target %s (%s", t->endpoint, t->server);
	if (t->slots > 0)
		fprintf(out, ", %ld slots", t->slots);
	fprintf(out, "), api %s, model %s\n", t->api, t->model);
	fprintf(out, "prompt sizing: %s (%.2f tokens/word, overhead %.0f tokens)\n",
		t->sizing_method, t->tokens_per_word, t->overhead_tokens);
	if (t->n_replicas > 1)
		fprintf(out, "fleet: %zu servers (target.replicas), the first shown above\n",
			t->n_replicas);
}

/* A fleet level's requests per replica: "c=4: replicas 10 (50%) 10 (50%)". */
static void print_shares(FILE *out, const sb_rlevel *rl, size_t n_rep, const char *name)
{
	long *cnt = calloc(n_rep, sizeof(long)), total = 0;
	if (!cnt)
		return;
	for (size_t j = 0; j < rl->n_reqs; j++)
		if (rl->reqs[j].replica >= 0 && (size_t)rl->reqs[j].replica < n_rep) {
			cnt[rl->reqs[j].replica]++;
			total++;
		}
	fprintf(out, "%s: requests per replica", name);
	for (size_t g = 0; g < n_rep; g++)
		fprintf(out, " %ld (%.0f%%)", cnt[g], total ? 100.0 * (double)cnt[g] / (double)total : 0.0);
	fprintf(out, "\n");
	free(cnt);
}

static void print_row(FILE *out, const sb_level *lv)
{
	char name[24], c[8][16];
	level_name(name, sizeof(name), lv);
	ms(c[0], 16, lv->ttft_ms.p50);
	ms(c[1], 16, lv->ttft_ms.p99);
	ms(c[2], 16, lv->tpot_ms.p50);
	ms(c[3], 16, lv->tpot_ms.p99);
	ms(c[4], 16, lv->itl_ms.p50);
	ms(c[5], 16, lv->itl_ms.p99);
	ms(c[6], 16, lv->e2e_ms.p50);
	ms(c[7], 16, lv->e2e_ms.p99);
	fprintf(out, "%-9s %5.0f %5.0f %9s %9s %9s %9s %9s %9s %9s %9s %9.1f %8.2f %6.2f %6.2f\n",
		name, (double)lv->requests_ok, (double)lv->requests_failed, c[0], c[1], c[2], c[3],
		c[4], c[5], c[6], c[7], lv->output_tok_s, lv->req_s, lv->l_law, lv->l_observed);
}

/* "c=8: the server's own count ...": its L beside the client's. */
static void print_view(FILE *out, const sb_rlevel *rl, const char *name)
{
	const sb_server_view *v = &rl->view;
	double l = v->running + v->waiting, lo = rl->sum.l_observed;
	if (v->samples < 1)
		return;
	fprintf(out, "%s: the server's own count (/metrics, %ld samples): L %.2f = %.2f running + "
		     "%.2f waiting, beside L obs %.2f",
		name, v->samples, l, v->running, v->waiting, lo);
	if (isfinite(lo) && lo > 0)
		fprintf(out, ": %.0f%% of the time in flight outside the server", 100 * (1 - l / lo));
	fprintf(out, "\n");
}

/* Goodput, schedule lag, the server's own count and error classes under the
 * table, per level. */
static void print_level_notes(FILE *out, const sb_results *res)
{
	const sb_slo *slo = &res->workload.slo;
	for (size_t i = 0; i < res->n_levels; i++) {
		const sb_level *lv = &res->levels[i].sum;
		char name[24];
		level_name(name, sizeof(name), lv);
		double good = lv->goodput_req_s, lag = lv->schedule_lag_p99_ms;
		if ((slo->ttft_ms > 0 || slo->tpot_ms > 0) && isfinite(good))
			fprintf(out, "%s: goodput %.2f req/s under the SLOs\n", name, good);
		if (isfinite(lag))
			fprintf(out, "%s: schedule lag p99 %.2f ms (client send delay)\n", name, lag);
		if (res->target.n_replicas > 1)
			print_shares(out, &res->levels[i], res->target.n_replicas, name);
		print_view(out, &res->levels[i], name);
		if (lv->n_errors) {
			fprintf(out, "%s: %.0f failed:", name, (double)lv->requests_failed);
			for (int k = 0; k < lv->n_errors; k++)
				fprintf(out, " %ld %s", lv->errors[k].count, lv->errors[k].cls);
			fprintf(out, "\n");
		}
	}
}

void sb_run_print_table(FILE *out, const sb_results *res)
{
	print_target(out, &res->target);
	fprintf(out, "%-9s %5s %5s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s %6s %6s\n", "level", "ok",
		"fail", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "ITL p50", "ITL p99",
		"E2E p50", "E2E p99", "out tok/s", "req/s", "L=lW", "L obs");
	for (size_t i = 0; i < res->n_levels; i++)
		print_row(out, &res->levels[i].sum);
	int rate = res->n_levels && res->levels[0].sum.mode == SB_MODE_RATE;
	fprintf(out, "(times in ms; TTFT and E2E count from the %s send time)\n",
		rate ? "scheduled" : "actual");
	print_level_notes(out, res);
}
