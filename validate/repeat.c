/* repeat.c — the calibration-to-calibration difference of two models'
 * predictions of the same measured requests (repeat.h). */
#include "repeat.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonfile.h"

static const char *const quant_key[SB_CMP_N_QUANT] = { "ttft", "tpot", "e2e" };

/* Median |diff_pct| over every level of the compared metrics of quantity
 * q (-1: any) and class cls; buf holds n_levels * SB_COMPARE_N_METRICS. */
static double median_diff(const sb_repeatability *r, double *buf, int q, int cls)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_levels; i++) {
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			sb_metric k = sb_compare_metrics[j];
			if ((q < 0 || (int)sb_metric_quantity(k) == q) &&
			    sb_compare_metric_class(k) == cls)
				buf[n++] = r->levels[i].diff_pct[k];
		}
	}
	return sb_compare_median_abs(buf, n);
}

/* Level i of a against level i of b. */
static void level_diff(sb_repeat_level *rl, const sb_cmp_level *la, const sb_cmp_level *lb)
{
	rl->level = la->level;
	rl->mode = la->mode;
	for (int k = 0; k < SB_MET_N; k++)
		rl->pred_b[k] = rl->err_b[k] = rl->diff_pct[k] = NAN;
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
		sb_metric k = sb_compare_metrics[j];
		rl->pred_b[k] = lb->pred[k];
		rl->err_b[k] = lb->err_pct[k];
		rl->diff_pct[k] = sb_compare_err_pct(la->pred[k], lb->pred[k]);
	}
}

int sb_repeatability_compute(const sb_comparison *a, const sb_comparison *b,
			     sb_repeatability *out, sb_error *e)
{
	memset(out, 0, sizeof(*out));
	if (a->n_levels != b->n_levels)
		return sb_error_set(e, "the two comparisons have %zu and %zu levels; they must "
				       "replay the same measurement", a->n_levels, b->n_levels);
	for (size_t i = 0; i < a->n_levels; i++) {
		const sb_cmp_level *la = &a->levels[i], *lb = &b->levels[i];
		if (la->mode != lb->mode || la->level != lb->level)
			return sb_error_set(e, "level %zu: %s %g against %s %g; the two comparisons "
					       "must replay the same measurement", i + 1,
					    sb_mode_name(la->mode), la->level,
					    sb_mode_name(lb->mode), lb->level);
	}
	size_t nl = a->n_levels ? a->n_levels : 1;
	out->levels = calloc(nl, sizeof(*out->levels));
	double *buf = malloc(nl * SB_COMPARE_N_METRICS * sizeof(*buf));
	if (!out->levels || !buf) {
		free(buf);
		sb_repeatability_fini(out);
		return sb_error_code(e, -ENOMEM, "out of memory");
	}
	out->n_levels = a->n_levels;
	for (size_t i = 0; i < a->n_levels; i++)
		level_diff(&out->levels[i], &a->levels[i], &b->levels[i]);
	for (int q = 0; q < SB_CMP_N_QUANT; q++) {
		for (int cls = SB_CMP_CENTRAL; cls <= SB_CMP_TAIL; cls++) {
			out->diff_quant[q][cls] = median_diff(out, buf, q, cls);
			out->mdape_b_quant[q][cls] = b->mdape_quant[q][cls];
		}
	}
	out->diff_central = median_diff(out, buf, -1, SB_CMP_CENTRAL);
	out->diff_tail = median_diff(out, buf, -1, SB_CMP_TAIL);
	out->diff_throughput = median_diff(out, buf, -1, SB_CMP_THROUGHPUT);
	out->mdape_b_central = b->mdape_central;
	out->mdape_b_tail = b->mdape_tail;
	free(buf);
	return 0;
}

void sb_repeatability_fini(sb_repeatability *r)
{
	if (!r)
		return;
	free(r->levels);
	memset(r, 0, sizeof(*r));
}

/* ---- JSON ---------------------------------------------------------------- */

/* {"ttft": {"central_pct", "tail_pct"}, ..., "central_pct", "tail_pct"} */
static json_t *by_quantity(const double v[SB_CMP_N_QUANT][2], double central, double tail)
{
	json_t *s = json_object();
	for (int q = 0; q < SB_CMP_N_QUANT; q++)
		json_object_set_new(s, quant_key[q],
				    json_pack("{s:o,s:o}", "central_pct", sb_json_number(v[q][0]),
					      "tail_pct", sb_json_number(v[q][1])));
	json_object_set_new(s, "central_pct", sb_json_number(central));
	json_object_set_new(s, "tail_pct", sb_json_number(tail));
	return s;
}

static json_t *level_to_json(const sb_repeat_level *rl)
{
	json_t *mt = json_object();
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
		sb_metric k = sb_compare_metrics[j];
		json_object_set_new(mt, sb_metric_key(k),
				    json_pack("{s:o,s:o,s:o}", "predicted", sb_json_number(rl->pred_b[k]),
					      "error_pct", sb_json_number(rl->err_b[k]),
					      "difference_pct", sb_json_number(rl->diff_pct[k])));
	}
	return json_pack("{s:f,s:s,s:o}", "level", rl->level, "mode", sb_mode_name(rl->mode),
			 "metrics", mt);
}

json_t *sb_repeatability_to_json(const sb_repeatability *r)
{
	json_t *levels = json_array();
	for (size_t i = 0; levels && i < r->n_levels; i++)
		json_array_append_new(levels, level_to_json(&r->levels[i]));
	json_t *sum = by_quantity(r->diff_quant, r->diff_central, r->diff_tail);
	if (sum) {
		json_object_set_new(sum, "throughput_pct", sb_json_number(r->diff_throughput));
		json_object_set_new(sum, "second_model_mdape",
				    by_quantity(r->mdape_b_quant, r->mdape_b_central,
						r->mdape_b_tail));
	}
	return json_pack("{s:s,s:o,s:o}", "definition",
			 "100 * (predicted_second - predicted) / predicted", "levels", levels,
			 "summary", sum);
}

/* ---- report -------------------------------------------------------------- */

static void pct(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, " %8.1f%%", v);
	else
		fprintf(f, " %9s", "-");
}

/* One row: the label and three groups (difference, error A, error B) of
 * mean/p50 and p90/p99. */
static void row(FILE *f, const char *label, const double v[6])
{
	fprintf(f, "%-8s", label);
	for (int g = 0; g < 3; g++) {
		fputs(g ? "  " : "", f);
		pct(f, v[2 * g]);
		pct(f, v[2 * g + 1]);
	}
	fputc('\n', f);
}

int sb_repeatability_report(FILE *f, const sb_repeatability *r, const sb_comparison *a,
			    const char *name)
{
	static const char *qn[SB_CMP_N_QUANT] = { "TTFT", "TPOT", "E2E" };
	fprintf(f, "\nrepeatability: second model%s%s against the first, median over %zu levels\n",
		name ? " " : "", name ? name : "", r->n_levels);
	fprintf(f, "%-8s %20s  %20s  %20s\n", "", "|B - A| / A", "|error| A", "|error| B");
	fprintf(f, "%-8s", "");
	for (int g = 0; g < 3; g++)
		fprintf(f, "%s %9s %9s", g ? "  " : "", "mean/p50", "p90/p99");
	fputc('\n', f);
	for (int q = 0; q < SB_CMP_N_QUANT; q++) {
		double v[6] = { r->diff_quant[q][0], r->diff_quant[q][1], a->mdape_quant[q][0],
				a->mdape_quant[q][1], r->mdape_b_quant[q][0], r->mdape_b_quant[q][1] };
		row(f, qn[q], v);
	}
	double all[6] = { r->diff_central, r->diff_tail, a->mdape_central, a->mdape_tail,
			  r->mdape_b_central, r->mdape_b_tail };
	row(f, "all", all);
	fprintf(f, "throughput |B - A| / A:");
	pct(f, r->diff_throughput);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}
