/* refdrift.c — the server against its own earlier measurement of the same
 * load (see refdrift.h).
 *
 * Medians, not means: a drift run has a handful of requests, and one caught
 * by a stall moves a mean of eight by more than the drift it looks for. The
 * medians are taken from the records on both sides (exact order statistics,
 * the same definition for the reference and the runs) rather than from the
 * level summaries' histograms.
 */
#include "refdrift.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/metric.h"
#include "core/results.h"
#include "validate/compare.h"

static const char *const qty_key[SB_REFDRIFT_N_QTY] = { "ttft", "tpot", "e2e", "itl" };
static const char *const qty_name[SB_REFDRIFT_N_QTY] = { "TTFT", "TPOT", "E2E", "ITL" };

void sb_refdrift_init(sb_refdrift *d)
{
	memset(d, 0, sizeof(*d));
	for (int q = 0; q < SB_REFDRIFT_N_QTY; q++)
		d->ref[q] = d->max_abs_pct[q] = NAN;
}

void sb_refdrift_fini(sb_refdrift *d)
{
	if (!d)
		return;
	json_decref(d->runs);
	free(d->run);
	memset(d, 0, sizeof(*d));
}

/* ---- p50s of a level ------------------------------------------------------ */

/* The p50 TTFT, TPOT and E2E of l's counted records (succeeded, not
 * warm-up) into p50, their count into *n; with no records at all, the
 * level summary's p50s and requests_ok. The ITL p50 is the summary's, over
 * every gap of the level: a steadier gauge of decode speed than TPOT,
 * which a few 40-50 ms stalls of this machine's scheduler move by 15%
 * between 10-request runs. Returns 0 or -ENOMEM. */
static int level_p50(const sb_rlevel *l, double p50[SB_REFDRIFT_N_QTY], long *n)
{
	p50[3] = l->sum.itl_ms.p50;
	if (l->n_reqs == 0) {
		p50[0] = l->sum.ttft_ms.p50;
		p50[1] = l->sum.tpot_ms.p50;
		p50[2] = l->sum.e2e_ms.p50;
		*n = l->sum.requests_ok;
		return 0;
	}
	double *v = malloc(3 * l->n_reqs * sizeof(*v));
	if (!v)
		return -ENOMEM;
	double *tt = v, *tp = v + l->n_reqs, *ee = v + 2 * l->n_reqs;
	size_t k = 0;
	for (size_t i = 0; i < l->n_reqs; i++) {
		const sb_reqrec *r = &l->reqs[i];
		if (r->err_class || r->warmup)
			continue;
		tt[k] = r->ttft_ms;
		tp[k] = sb_reqrec_tpot_ms(r);
		ee[k] = r->e2e_ms;
		k++;
	}
	/* every value is a positive time, so the median of |x| is the median */
	p50[0] = sb_compare_median_abs(tt, k);
	p50[1] = sb_compare_median_abs(tp, k);
	p50[2] = sb_compare_median_abs(ee, k);
	*n = (long)k;
	free(v);
	return 0;
}

/* ---- the reference -------------------------------------------------------- */

/* The first closed-loop level at concurrency 1 of r, or NULL. */
static const sb_rlevel *find_c1(const sb_results *r)
{
	for (size_t i = 0; i < r->n_levels; i++)
		if (r->levels[i].sum.mode == SB_MODE_CONCURRENCY && r->levels[i].sum.level == 1)
			return &r->levels[i];
	return NULL;
}

/* The workload's fixed lengths into d. */
static int ref_lengths(sb_refdrift *d, const sb_results *r, const char *path, sb_error *e)
{
	const sb_workload *w = &r->workload;
	if (!r->has_workload)
		return sb_error_set(e, "--drift-ref %s: no \"workload\" object; the reference's "
				       "prompt and output lengths are unknown", path);
	if (!sb_dist_is_det(&w->input_len) || !sb_dist_is_det(&w->output_len)) {
		char in[96], out[96];
		sb_dist_format(&w->input_len, in, sizeof(in));
		sb_dist_format(&w->output_len, out, sizeof(out));
		return sb_error_set(e, "--drift-ref %s: its lengths are distributions (input %s, "
				       "output %s); re-measuring the same load needs fixed lengths",
				    path, in, out);
	}
	d->input_len = (long)w->input_len.a;
	d->output_len = (long)w->output_len.a;
	return 0;
}

static long clamp_requests(long n)
{
	return n < SB_REFDRIFT_MIN_REQUESTS   ? SB_REFDRIFT_MIN_REQUESTS
	       : n > SB_REFDRIFT_MAX_REQUESTS ? SB_REFDRIFT_MAX_REQUESTS
					      : n;
}

/* The reference level of r into d. */
static int take_ref(sb_refdrift *d, const sb_results *r, const char *path, sb_error *e)
{
	if (!strcmp(r->source, "simulated"))
		return sb_error_set(e, "--drift-ref %s: a simulated run; the drift compares the "
				       "server with its own measurement", path);
	const sb_rlevel *l = find_c1(r);
	if (!l)
		return sb_error_set(e, "--drift-ref %s: no level with mode \"concurrency\" and "
				       "level 1 (the drift re-measures a one-client level)", path);
	int rc = ref_lengths(d, r, path, e);
	if (rc < 0)
		return rc;
	if (level_p50(l, d->ref, &d->ref_requests) < 0)
		return sb_error_code(e, -ENOMEM, "out of memory");
	if (d->ref_requests < 1 || !(d->ref[0] > 0) || !(d->ref[2] > 0))
		return sb_error_set(e, "--drift-ref %s: its concurrency-1 level has no successful "
				       "request", path);
	d->requests = clamp_requests(d->ref_requests);
	/* The same load with the same cache: a reference measured with the
	 * cache on reused its chat template's first tokens (llama.cpp: 10 of
	 * 129), which a drift run without it prefills: 8% slower TTFT, read
	 * as the server's speed until 2026-12-06. */
	d->cache_prompt = r->target.cache_prompt != 0;
	snprintf(d->file, sizeof(d->file), "%s", path);
	d->has_ref = 1;
	return 0;
}

int sb_refdrift_load_ref(sb_refdrift *d, const char *path, sb_error *e)
{
	sb_results r;
	int rc = sb_results_load(path, &r, e);
	if (rc < 0) {
		sb_error_prefix(e, "--drift-ref");
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	rc = take_ref(d, &r, path, e);
	sb_results_fini(&r);
	return rc;
}

/* ---- a drift run ------------------------------------------------------------ */

int sb_refdrift_measure(sb_refdrift *d, sb_bench *b, const sb_bench_opts *o,
			const sb_workload *w, unsigned long seed, double t_s, const char *when,
			long next_level, sb_error *e)
{
	sb_workload dw = *w;
	dw.input_len = (sb_dist){ SB_DIST_DET, (double)d->input_len, 0 };
	dw.output_len = (sb_dist){ SB_DIST_DET, (double)d->output_len, 0 };
	sb_bench_opts dopt = *o;
	dopt.cache_prompt = d->cache_prompt;
	if (d->cache_prompt) /* prompts of no earlier run (the server's RAM cache keeps them) */
		seed = sb_seed_derive(seed, (unsigned long)sb_seed_from_clock(), 0);
	json_t *doc = NULL, *lv = NULL;
	int r = sb_bench_measure_one_client(b, &dw, &dopt, d->requests, 1, seed, "drift run",
					    &doc, &lv, e);
	if (r == 0 && !d->runs && !(d->runs = json_array()))
		r = sb_error_code(e, -ENOMEM, "out of memory");
	json_t *run = r == 0 ? json_pack("{s:s,s:f,s:I,s:O}", "when", when, "t_s", t_s,
					 "next_level", (json_int_t)next_level, "level", lv)
			     : NULL;
	if (r == 0 && (!run || json_array_append_new(d->runs, run) < 0))
		r = sb_error_code(e, -ENOMEM, "out of memory");
	json_decref(doc);
	return r < 0 ? r : 0;
}

/* ---- saved and read back ------------------------------------------------------ */

/* {"ttft_p50_ms", "tpot_p50_ms", "e2e_p50_ms", "itl_p50_ms"} of p, plus
 * "requests" n. */
static json_t *p50_json(const double p[SB_REFDRIFT_N_QTY], long n)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:I}", "ttft_p50_ms", sb_json_number(p[0]),
			 "tpot_p50_ms", sb_json_number(p[1]), "e2e_p50_ms", sb_json_number(p[2]),
			 "itl_p50_ms", sb_json_number(p[3]), "requests", (json_int_t)n);
}

/* The fields both JSON forms share: the file, the load, the reference. */
static json_t *head_json(const sb_refdrift *d)
{
	return json_pack("{s:s,s:I,s:I,s:b,s:I,s:o}", "file", d->file, "input_len",
			 (json_int_t)d->input_len, "output_len", (json_int_t)d->output_len,
			 "cache_prompt", d->cache_prompt, "requests", (json_int_t)d->requests,
			 "reference", p50_json(d->ref, d->ref_requests));
}

json_t *sb_refdrift_to_results(const sb_refdrift *d)
{
	if (!d->has_ref)
		return NULL;
	json_t *j = head_json(d);
	if (j && json_object_set_new(j, "runs", d->runs ? json_incref(d->runs) : json_array()) < 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* A number of o, NaN when null or absent; -EINVAL when of another type. */
static int opt_number(const json_t *o, const char *key, double *v, sb_error *e)
{
	const json_t *x = json_object_get(o, key);
	*v = NAN;
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_number(x))
		return sb_error_set(e, "reference_drift.reference.%s: not a number", key);
	*v = json_number_value(x);
	return 0;
}

/* The saved "reference" object into d. */
static int read_reference(sb_refdrift *d, const json_t *ref, sb_error *e)
{
	static const char *const keys[SB_REFDRIFT_N_QTY] = { "ttft_p50_ms", "tpot_p50_ms",
							     "e2e_p50_ms", "itl_p50_ms" };
	if (!json_is_object(ref))
		return sb_error_set(e, "reference_drift.reference: not an object");
	for (int q = 0; q < SB_REFDRIFT_N_QTY; q++)
		if (opt_number(ref, keys[q], &d->ref[q], e) < 0)
			return -EINVAL;
	return sb_json_get_long(ref, "requests", 0, 1L << 40, &d->ref_requests,
				"reference_drift.reference", e) < 0 ? -EINVAL : 0;
}

/* The saved runs, checked, into d->runs (a new reference). */
static int read_runs(sb_refdrift *d, json_t *runs, sb_error *e)
{
	size_t i;
	json_t *p;
	if (!json_is_array(runs))
		return sb_error_set(e, "reference_drift.runs: not an array");
	json_array_foreach(runs, i, p) {
		const json_t *nl = json_object_get(p, "next_level");
		if (!json_is_string(json_object_get(p, "when")) ||
		    !json_is_number(json_object_get(p, "t_s")) ||
		    !json_is_object(json_object_get(p, "level")) ||
		    (nl && !(json_is_integer(nl) && json_integer_value(nl) >= 0)))
			return sb_error_set(e, "reference_drift.runs[%zu]: want {\"when\": \"before\", "
					       "\"between\" or \"after\", \"t_s\": seconds, "
					       "\"next_level\": a level index (optional), "
					       "\"level\": {...}}", i);
	}
	json_decref(d->runs);
	d->runs = json_incref(runs);
	return 0;
}

int sb_refdrift_from_results(sb_refdrift *d, const json_t *root, sb_error *e)
{
	const json_t *j = json_object_get(root, "reference_drift");
	const char *file = NULL;
	if (!j)
		return 0;
	if (!json_is_object(j))
		return sb_error_set(e, "reference_drift: not an object");
	const char *w = "reference_drift";
	if (sb_json_get_string(j, "file", &file, w, e) < 0 ||
	    sb_json_get_long(j, "input_len", 1, 10000000, &d->input_len, w, e) < 0 ||
	    sb_json_get_long(j, "output_len", 1, 10000000, &d->output_len, w, e) < 0 ||
	    sb_json_get_long(j, "requests", 1, 1000000, &d->requests, w, e) < 0 ||
	    read_reference(d, json_object_get(j, "reference"), e) < 0 ||
	    read_runs(d, json_object_get(j, "runs"), e) < 0)
		return -EINVAL;
	const json_t *cp = json_object_get(j, "cache_prompt");
	if (cp && !json_is_boolean(cp))
		return sb_error_set(e, "reference_drift.cache_prompt: not true or false");
	d->cache_prompt = !cp || json_is_true(cp);
	snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
	d->has_ref = 1;
	return 1;
}

/* ---- the figures --------------------------------------------------------------- */

/* 100 * (x / ref - 1); NaN unless both are positive finite numbers. */
static double change_pct(double x, double ref)
{
	return isfinite(x) && isfinite(ref) && x > 0 && ref > 0 ? (x / ref - 1) * 100 : NAN;
}

/* The runs' levels as one results document, read back (records typed). */
static int runs_as_results(const sb_refdrift *d, sb_results *out, sb_error *e)
{
	json_t *lvs = json_array(), *p;
	size_t i;
	json_array_foreach(d->runs, i, p)
		json_array_append(lvs, json_object_get(p, "level"));
	json_t *doc = lvs ? json_pack("{s:s,s:s,s:o}", "schema", SB_RESULTS_SCHEMA, "source",
				      "measured", "levels", lvs)
			  : NULL;
	if (!doc)
		return sb_error_code(e, -ENOMEM, "out of memory");
	int r = sb_results_from_json(doc, out, "reference_drift.runs", e);
	json_decref(doc);
	return r;
}

/* Run i's figures from its level l. */
static int analyse_run(sb_refdrift *d, size_t i, const sb_rlevel *l)
{
	sb_refdrift_run *x = &d->run[i];
	json_t *p = json_array_get(d->runs, i);
	snprintf(x->when, sizeof(x->when), "%s", json_string_value(json_object_get(p, "when")));
	x->t_s = json_number_value(json_object_get(p, "t_s"));
	const json_t *nl = json_object_get(p, "next_level");
	x->next_level = nl ? (long)json_integer_value(nl) : -1;
	if (level_p50(l, x->p50, &x->requests) < 0)
		return -ENOMEM;
	for (int q = 0; q < SB_REFDRIFT_N_QTY; q++) {
		x->pct[q] = change_pct(x->p50[q], d->ref[q]);
		if (isfinite(x->pct[q]) && !(fabs(x->pct[q]) <= d->max_abs_pct[q]))
			d->max_abs_pct[q] = fabs(x->pct[q]); /* NaN so far compares false */
	}
	return 0;
}

int sb_refdrift_analyse(sb_refdrift *d, sb_error *e)
{
	if (!d->has_ref)
		return 0;
	size_t n = d->runs ? json_array_size(d->runs) : 0;
	free(d->run);
	d->run = calloc(n ? n : 1, sizeof(*d->run));
	if (!d->run)
		return sb_error_code(e, -ENOMEM, "out of memory");
	for (int q = 0; q < SB_REFDRIFT_N_QTY; q++)
		d->max_abs_pct[q] = NAN;
	sb_results rr;
	memset(&rr, 0, sizeof(rr));
	int r = n ? runs_as_results(d, &rr, e) : 0;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (analyse_run(d, i, &rr.levels[i]) < 0)
			r = sb_error_code(e, -ENOMEM, "out of memory");
	if (n)
		sb_results_fini(&rr);
	if (r < 0)
		return r;
	d->n_run = n;
	d->analysed = 1;
	return 0;
}

/* The analysed run recorded just before level li, NULL when none. */
static const sb_refdrift_run *run_before(const sb_refdrift *d, size_t li)
{
	for (size_t i = 0; i < d->n_run; i++)
		if (d->run[i].next_level >= 0 && (size_t)d->run[i].next_level == li)
			return &d->run[i];
	return NULL;
}

int sb_refdrift_level_factors(const sb_refdrift *d, size_t li, double *fp, double *fd)
{
	enum { TTFT = SB_QTY_TTFT, ITL = SB_QTY_ITL };
	const sb_refdrift_run *a = d->analysed ? run_before(d, li) : NULL;
	const sb_refdrift_run *b = a ? run_before(d, li + 1) : NULL;
	if (!b || !isfinite(a->pct[TTFT]) || !isfinite(b->pct[TTFT]) || !isfinite(a->pct[ITL]) ||
	    !isfinite(b->pct[ITL]))
		return 0;
	*fp = 1 + (a->pct[TTFT] + b->pct[TTFT]) / 200;
	*fd = 1 + (a->pct[ITL] + b->pct[ITL]) / 200;
	return 1;
}

/* ---- output -------------------------------------------------------------------- */

void sb_refdrift_report(FILE *f, const sb_refdrift *d)
{
	if (!d->analysed)
		return;
	fprintf(f, "reference drift: the server against its own earlier measurement of the same "
		   "load (%s, c=1, %ld/%ld tokens; measured vs measured, no model): ",
		d->file, d->input_len, d->output_len);
	if (d->n_run == 0) {
		fprintf(f, "no drift run succeeded\n");
		return;
	}
	for (int q = 0; q < SB_REFDRIFT_N_QTY; q++) {
		fprintf(f, "%s%s p50", q ? "; " : "", qty_name[q]);
		for (size_t i = 0; i < d->n_run; i++) {
			const sb_refdrift_run *x = &d->run[i];
			if (isfinite(x->pct[q]))
				fprintf(f, "%s %+.1f%% %s", i ? "," : "", x->pct[q], x->when);
			else
				fprintf(f, "%s n/a %s", i ? "," : "", x->when);
		}
	}
	fprintf(f, "\n");
}

/* One run's figures. */
static json_t *run_json(const sb_refdrift_run *x)
{
	json_t *j = json_pack("{s:s,s:f,s:o,s:I}", "when", x->when, "t_s", x->t_s, "next_level",
			      x->next_level >= 0 ? json_integer(x->next_level) : json_null(),
			      "requests", (json_int_t)x->requests);
	for (int q = 0; j && q < SB_REFDRIFT_N_QTY; q++) {
		char k[32];
		snprintf(k, sizeof(k), "%s_p50_ms", qty_key[q]);
		json_object_set_new(j, k, sb_json_number(x->p50[q]));
	}
	for (int q = 0; j && q < SB_REFDRIFT_N_QTY; q++) {
		char k[32];
		snprintf(k, sizeof(k), "%s_pct", qty_key[q]);
		json_object_set_new(j, k, sb_json_number(x->pct[q]));
	}
	return j;
}

json_t *sb_refdrift_to_json(const sb_refdrift *d)
{
	if (!d->analysed)
		return NULL;
	json_t *j = head_json(d), *runs = json_array(), *mx = json_object();
	if (!j || !runs || !mx) {
		json_decref(j);
		json_decref(runs);
		json_decref(mx);
		return NULL;
	}
	for (size_t i = 0; i < d->n_run; i++)
		json_array_append_new(runs, run_json(&d->run[i]));
	for (int q = 0; q < SB_REFDRIFT_N_QTY; q++)
		json_object_set_new(mx, qty_key[q], sb_json_number(d->max_abs_pct[q]));
	json_object_set_new(j, "runs", runs);
	json_object_set_new(j, "max_abs_pct", mx);
	return j;
}
