/* speed.c — one-client probes of the server's speed during a validation
 * and the speed-adjusted prediction (see speed.h).
 *
 * Why: a server's speed can move while it is measured (a shared machine,
 * clocks, heat); on a 2-core VM one client's TPOT moved by 5-48% within a
 * four-minute validation. Medians, not means, of a probe's requests: one
 * request caught by a brief stall moves a mean of three by 15%. Prefill and
 * decode get factors of their own because on such targets prefill is
 * compute-bound and decode memory-bound, and the two move apart.
 */
#include "speed.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonfile.h"
#include "core/model_scale.h"
#include "core/results.h"

void sb_speed_init(sb_speed *sp)
{
	memset(sp, 0, sizeof(*sp));
	sp->probes = json_array();
}

void sb_speed_fini(sb_speed *sp)
{
	if (!sp)
		return;
	json_decref(sp->probes);
	json_decref(sp->doc0);
	free(sp->ttft_ms);
	sb_comparison_fini(&sp->adj);
	memset(sp, 0, sizeof(*sp));
}

int sb_speed_probe(sb_speed *sp, sb_bench *b, const sb_bench_opts *o, const sb_workload *w,
		   long n, unsigned long seed, double t_s, size_t before, sb_error *e)
{
	sb_bench_opts po = *o;
	po.cache_prompt = 0; /* every prompt prefilled: a probe measures speed */
	json_t *d = NULL, *lv = NULL;
	int r = sb_bench_measure_one_client(b, w, &po, n, 0, seed, "probe", &d, &lv, e);
	json_t *p = r == 0 ? json_pack("{s:f,s:I,s:O}", "t_s", t_s, "before_level",
				       (json_int_t)before, "level", lv)
			   : NULL;
	if (r == 0 && (!p || json_array_append_new(sp->probes, p) < 0))
		r = sb_error_set(e, "out of memory");
	if (r == 0 && !sp->doc0) {
		sp->doc0 = d;
		d = NULL;
	}
	json_decref(d);
	if (r == 0) {
		sp->n_probes++;
		sp->probe_requests = n;
	}
	return r < 0 ? r : 0;
}

int sb_speed_from_results(sb_speed *sp, json_t *root, sb_error *e)
{
	json_t *a = json_object_get(root, "speed_probes"), *p;
	size_t i;
	if (!a)
		return 0;
	if (!json_is_array(a))
		return sb_error_set(e, "speed_probes: not an array");
	json_array_foreach(a, i, p) {
		json_t *lv = json_object_get(p, "level");
		if (!json_is_number(json_object_get(p, "t_s")) ||
		    !json_is_integer(json_object_get(p, "before_level")) ||
		    json_integer_value(json_object_get(p, "before_level")) < 0 || !json_is_object(lv))
			return sb_error_set(e, "speed_probes[%zu]: want {\"t_s\": seconds, "
					       "\"before_level\": index, \"level\": {...}}", i);
	}
	if (json_array_size(a) == 0)
		return 0;
	json_decref(sp->probes);
	sp->probes = json_incref(a);
	sp->doc0 = json_incref(root);
	sp->n_probes = json_array_size(a);
	sp->probe_requests = (long)json_array_size(
		json_object_get(json_object_get(json_array_get(a, 0), "level"), "requests"));
	return 1;
}

void sb_speed_scale_model(sb_model *m, double fp, double fd)
{
	sb_model_scale s;
	sb_model_scale_init(&s);
	s.f[SB_SCALE_PROMPT] = fp;
	s.f[SB_SCALE_DECODE] = fd;
	sb_model_scale_apply(&s, m);
}

int sb_speed_factors(const sb_speed *sp, size_t li, double *fp, double *fd)
{
	double sp_ = 0, sd = 0;
	int n = 0;
	size_t i;
	json_t *p;
	json_array_foreach(sp->probes, i, p) {
		json_int_t b = json_integer_value(json_object_get(p, "before_level"));
		double rp = sp->ttft_ms[i] / sp->ttft_model[i], rd = sp->tpot_ms[i] / sp->tpot_model[i];
		if ((b != (json_int_t)li && b != (json_int_t)li + 1) || !isfinite(rp) ||
		    !isfinite(rd) || !(rp > 0) || !(rd > 0))
			continue;
		sp_ += rp;
		sd += rd;
		n++;
	}
	if (n == 0)
		return 0;
	*fp = sp_ / n;
	*fd = sd / n;
	return 1;
}

int sb_speed_replay_level(const sb_model *m, const sb_results *meas, const sb_comparison *cmp,
			  const sb_compare_opts *o, size_t li, double fp, double fd,
			  sb_cmp_level *out, sb_error *e)
{
	sb_model ms;
	sb_model_copy(&ms, m);
	sb_speed_scale_model(&ms, fp, fd);
	sb_results one = *meas; /* a view of level li alone */
	one.levels = &meas->levels[li];
	one.n_levels = 1;
	sb_comparison c1;
	int r = sb_compare_run(&ms, &one, o, &c1, e);
	sb_model_fini(&ms);
	if (r < 0)
		return r;
	*out = cmp->levels[li]; /* its owned parts stay with cmp */
	out->reqs = NULL;
	out->n_reqs = 0;
	out->replicas = NULL;
	out->n_replicas = 0;
	memcpy(out->pred, c1.levels[0].pred, sizeof(out->pred));
	memcpy(out->pred_sd, c1.levels[0].pred_sd, sizeof(out->pred_sd));
	memcpy(out->err_pct, c1.levels[0].err_pct, sizeof(out->err_pct));
	sb_comparison_fini(&c1);
	return 0;
}

/* Predicts level li of meas with m scaled by the probes beside it into
 * *out. Returns 1 done, 0 no probe beside it, or a negative errno. */
static int adjust_level(sb_speed *sp, const sb_model *m, const sb_results *meas,
			const sb_comparison *cmp, const sb_compare_opts *o, size_t li,
			sb_cmp_level *out, sb_error *e)
{
	if (!sb_speed_factors(sp, li, &sp->f_prefill[li], &sp->f_decode[li]))
		return 0;
	int r = sb_speed_replay_level(m, meas, cmp, o, li, sp->f_prefill[li], sp->f_decode[li],
				      out, e);
	return r < 0 ? r : 1;
}

double sb_speed_change_pct(const double *ms, const double *model, size_t n)
{
	double *d = malloc((n ? n : 1) * sizeof(*d));
	if (!d)
		return NAN;
	for (size_t i = 0; i + 1 < n; i++)
		d[i] = ((ms[i + 1] / model[i + 1]) / (ms[i] / model[i]) - 1) * 100;
	double m = n < 2 ? NAN : sb_compare_median_abs(d, n - 1);
	free(d);
	return m;
}

int sb_speed_analyse(sb_speed *sp, const sb_model *m, const sb_results *meas,
		     const sb_comparison *cmp, const sb_compare_opts *o, sb_error *e)
{
	size_t np = sp->n_probes, nl = cmp->n_levels;
	if (np == 0 || !sp->doc0)
		return 0;
	if (meas->n_levels != nl)
		return sb_error_set(e, "%zu measured levels but %zu compared", meas->n_levels, nl);
	/* the probes as one results document, predicted like any other */
	json_t *pd = json_copy(sp->doc0), *lvs = json_array();
	size_t i;
	json_t *p;
	if (!pd || !lvs) {
		json_decref(pd);
		json_decref(lvs);
		return sb_error_set(e, "out of memory");
	}
	json_array_foreach(sp->probes, i, p)
		json_array_append(lvs, json_object_get(p, "level"));
	json_object_set_new(pd, "levels", lvs);
	sb_results pr;
	memset(&pr, 0, sizeof(pr));
	sb_comparison pc;
	memset(&pc, 0, sizeof(pc));
	sb_compare_opts po = *o;
	po.forecast = 0;
	int r = sb_results_from_json(pd, &pr, "speed probes", e);
	if (r == 0)
		r = sb_compare_run(m, &pr, &po, &pc, e);
	json_decref(pd);
	sb_results_fini(&pr);
	if (r < 0)
		return r;

	sp->ttft_ms = malloc((4 * np + 2 * (nl ? nl : 1)) * sizeof(double));
	sp->adj.levels = calloc(nl ? nl : 1, sizeof(*sp->adj.levels));
	if (!sp->ttft_ms || !sp->adj.levels) {
		sb_comparison_fini(&pc);
		return sb_error_set(e, "out of memory");
	}
	sp->tpot_ms = sp->ttft_ms + np;
	sp->ttft_model = sp->ttft_ms + 2 * np;
	sp->tpot_model = sp->ttft_ms + 3 * np;
	sp->f_prefill = sp->ttft_ms + 4 * np;
	sp->f_decode = sp->f_prefill + nl;
	for (i = 0; i < np; i++) {
		const sb_cmp_level *l = &pc.levels[i];
		sp->ttft_ms[i] = l->meas[SB_MET_TTFT_P50];
		sp->tpot_ms[i] = l->meas[SB_MET_TPOT_P50];
		sp->ttft_model[i] = l->pred[SB_MET_TTFT_P50];
		sp->tpot_model[i] = l->pred[SB_MET_TPOT_P50];
	}
	sb_comparison_fini(&pc);
	sp->change_pct[0] = sb_speed_change_pct(sp->ttft_ms, sp->ttft_model, np);
	sp->change_pct[1] = sb_speed_change_pct(sp->tpot_ms, sp->tpot_model, np);

	/* each level again, with the server's speed of its time */
	sp->n_levels = nl;
	for (size_t L = 0; L < nl; L++) {
		sp->f_prefill[L] = sp->f_decode[L] = NAN;
		if (cmp->levels[L].mode == SB_MODE_CONCURRENCY && cmp->levels[L].level == 1)
			continue; /* what the probes measure */
		r = adjust_level(sp, m, meas, cmp, &po, L, &sp->adj.levels[sp->adj.n_levels], e);
		if (r < 0)
			return r;
		sp->adj.n_levels += (size_t)r;
	}
	sb_compare_summarize(&sp->adj, o->knee_min_ratio);
	sp->analysed = 1;
	return 0;
}

static double pct(double meas, double model)
{
	return (meas / model - 1) * 100;
}

static void level_name(char *buf, size_t len, const sb_comparison *cmp, size_t L)
{
	if (L >= cmp->n_levels)
		snprintf(buf, len, "after the last level");
	else if (cmp->levels[L].mode == SB_MODE_RATE)
		snprintf(buf, len, "before rate %g", cmp->levels[L].level);
	else
		snprintf(buf, len, "before c=%g", cmp->levels[L].level);
}

void sb_speed_report(FILE *f, const sb_speed *sp, const sb_comparison *cmp)
{
	long n = sp->probe_requests;
	if (!sp->analysed)
		return;
	fprintf(f, "\nserver speed: one client, %ld request%s with fresh prompts before each level "
		   "and after the last, median TTFT and TPOT against the model's\n",
		n, n == 1 ? "" : "s");
	size_t i;
	json_t *p;
	json_array_foreach(sp->probes, i, p) {
		char name[64];
		level_name(name, sizeof(name), cmp,
			   (size_t)json_integer_value(json_object_get(p, "before_level")));
		fprintf(f, "  %-22s %5.0f s: TTFT %7.1f ms (%+5.1f%%), TPOT %6.2f ms (%+5.1f%%)\n",
			name, json_number_value(json_object_get(p, "t_s")), sp->ttft_ms[i],
			pct(sp->ttft_ms[i], sp->ttft_model[i]), sp->tpot_ms[i],
			pct(sp->tpot_ms[i], sp->tpot_model[i]));
	}
	if (sp->n_probes >= 2)
		fprintf(f, "  probe to probe: median |change| TTFT %.1f%%, TPOT %.1f%% (the server's "
			   "own speed and the probes' noise; prediction errors within about twice "
			   "that cannot be told from it)\n",
			sp->change_pct[0], sp->change_pct[1]);
	const sb_comparison *s = &sp->adj;
	if (s->n_levels == 0)
		return;
	fprintf(f, "speed-adjusted prediction (prefill times scaled by the TTFT ratio, decode "
		   "times by the TPOT ratio of the probes beside each level), %zu level%s (c=1 "
		   "left out: the probes measure it): ",
		s->n_levels, s->n_levels == 1 ? "" : "s");
	sb_speed_adjusted_errors(f, s);
}

void sb_speed_adjusted_errors(FILE *f, const sb_comparison *s)
{
	fprintf(f, "median |error| mean-p50 / p90-p99: TTFT %.1f%% / %.1f%%, TPOT %.1f%% / %.1f%%, "
		   "E2E %.1f%% / %.1f%%\n",
		s->mdape_quant[SB_QTY_TTFT][0], s->mdape_quant[SB_QTY_TTFT][1],
		s->mdape_quant[SB_QTY_TPOT][0], s->mdape_quant[SB_QTY_TPOT][1],
		s->mdape_quant[SB_QTY_E2E][0], s->mdape_quant[SB_QTY_E2E][1]);
}

json_t *sb_speed_to_json(const sb_speed *sp, const sb_comparison *cmp)
{
	if (!sp->analysed)
		return NULL;
	json_t *pa = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(sp->probes, i, p)
		json_array_append_new(
			pa, json_pack("{s:O,s:O,s:o,s:o,s:o,s:o,s:o,s:o}", "t_s",
				      json_object_get(p, "t_s"), "before_level",
				      json_object_get(p, "before_level"), "ttft_ms",
				      sb_json_number(sp->ttft_ms[i]), "ttft_ms_model", sb_json_number(sp->ttft_model[i]),
				      "ttft_pct", sb_json_number(pct(sp->ttft_ms[i], sp->ttft_model[i])),
				      "tpot_ms", sb_json_number(sp->tpot_ms[i]), "tpot_ms_model",
				      sb_json_number(sp->tpot_model[i]), "tpot_pct",
				      sb_json_number(pct(sp->tpot_ms[i], sp->tpot_model[i]))));
	json_t *adj = sb_speed_adjusted_to_json(&sp->adj, cmp, sp->f_prefill, sp->f_decode,
						sp->n_levels);
	return json_pack("{s:I,s:o,s:{s:o,s:o},s:o}", "probe_requests",
			 (json_int_t)sp->probe_requests, "probes", pa, "probe_change_pct", "ttft",
			 sb_json_number(sp->change_pct[0]), "tpot", sb_json_number(sp->change_pct[1]),
			 "adjusted", adj);
}

json_t *sb_speed_adjusted_to_json(const sb_comparison *s, const sb_comparison *cmp,
				  const double *f_prefill, const double *f_decode, size_t n_levels)
{
	json_t *la = json_array();
	for (size_t k = 0, L = 0; L < n_levels; L++) {
		if (!isfinite(f_prefill[L]) || k >= s->n_levels)
			continue;
		const sb_cmp_level *l = &s->levels[k++];
		json_t *err = json_object();
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			sb_metric q = sb_compare_metrics[j];
			json_object_set_new(err, sb_metric_key(q), sb_json_number(l->err_pct[q]));
		}
		json_array_append_new(la, json_pack("{s:I,s:s,s:f,s:f,s:f,s:o}", "index",
						    (json_int_t)L, "mode",
						    cmp->levels[L].mode == SB_MODE_RATE ? "rate"
											: "concurrency",
						    "level", cmp->levels[L].level, "prefill_factor",
						    f_prefill[L], "decode_factor", f_decode[L],
						    "error_pct", err));
	}
	static const char *qn[SB_CMP_N_QUANT] = { "ttft", "tpot", "e2e" };
	json_t *sum = json_pack("{s:I,s:o,s:o}", "levels", (json_int_t)s->n_levels, "central_pct",
				sb_json_number(s->mdape_central), "tail_pct", sb_json_number(s->mdape_tail));
	for (int q = 0; sum && q < SB_CMP_N_QUANT; q++)
		json_object_set_new(sum, qn[q],
				    json_pack("{s:o,s:o}", "central_pct", sb_json_number(s->mdape_quant[q][0]),
					      "tail_pct", sb_json_number(s->mdape_quant[q][1])));
	return json_pack("{s:o,s:o}", "levels", la, "summary", sum);
}

json_t *sb_speed_drift(const sb_speed *sp)
{
	if (!sp->analysed || sp->n_probes < 2)
		return NULL;
	size_t a = 0, z = sp->n_probes - 1;
	double t0 = sp->ttft_ms[a], t1 = sp->ttft_ms[z], p0 = sp->tpot_ms[a], p1 = sp->tpot_ms[z];
	if (!(t0 > 0 && t1 > 0 && p0 > 0 && p1 > 0))
		return NULL;
	double secs = json_number_value(json_object_get(json_array_get(sp->probes, z), "t_s")) -
		      json_number_value(json_object_get(json_array_get(sp->probes, a), "t_s"));
	return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "seconds", secs, "ttft_ms_first", t0,
			 "ttft_ms_last", t1, "ttft_pct", (t1 / t0 - 1) * 100, "tpot_ms_first", p0,
			 "tpot_ms_last", p1, "tpot_pct", (p1 / p0 - 1) * 100);
}
