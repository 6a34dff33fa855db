/* export.c — per-request records for other tools (see export.h). */
#include "export.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jsonfile.h"
#include "stats.h"

/* A number cell: ten significant digits (below a microsecond for times
 * under an hour); NaN (unknown) is an empty cell. */
static void num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.10g", v);
}

/* A count cell: -1 (unknown) is an empty cell. */
static void count(FILE *f, long v)
{
	if (v >= 0)
		fprintf(f, "%ld", v);
}

/* A text cell, quoted (RFC 4180) when it holds a comma, quote or newline. */
static void text(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void row(FILE *f, const sb_reqrec *q, const sb_level *lv)
{
	num(f, q->t_sent_s);
	fputc(',', f);
	count(f, q->prompt_tokens);
	fputc(',', f);
	count(f, q->output_tokens);
	fputc(',', f);
	num(f, q->ttft_ms);
	fputc(',', f);
	num(f, q->e2e_ms);
	fputc(',', f);
	text(f, q->err_class);
	fputc(',', f);
	for (size_t i = 0; i < q->n_itl; i++)
		fprintf(f, i ? " %.10g" : "%.10g", q->itl_ms[i]);
	fprintf(f, ",%.10g,%s,%ld,", lv->level, sb_mode_name(lv->mode), q->id);
	num(f, q->t_scheduled_s);
	fputc(',', f);
	num(f, q->wait_ms);
	fprintf(f, ",%d\n", q->warmup ? 1 : 0);
}

long sb_export_csv(FILE *f, const sb_results *r, sb_error *e)
{
	long n = 0;
	fprintf(f, "%s\n", SB_EXPORT_CSV_HEADER);
	for (size_t l = 0; l < r->n_levels; l++)
		for (size_t i = 0; i < r->levels[l].n_reqs; i++, n++)
			row(f, &r->levels[l].reqs[i], &r->levels[l].sum);
	if (fflush(f) != 0 || ferror(f))
		return sb_error_code(e, -EIO, "writing the CSV: %s", strerror(errno));
	return n;
}

/* ---- vllm bench serve --save-result --save-detailed ----------------------- */

/* The indices of lv's counted (not warm-up) records into idx; their count. */
static size_t counted_records(const sb_rlevel *lv, size_t *idx)
{
	size_t n = 0;
	for (size_t i = 0; i < lv->n_reqs; i++)
		if (!lv->reqs[i].warmup)
			idx[n++] = i;
	return n;
}

/* vLLM's four statistics of x[0..n) in ms under its key names: mean_<k>_ms,
 * median_<k>_ms, std_<k>_ms (population), p99_<k>_ms; 0 when n is 0, as
 * vLLM writes them. Sorts x. */
static int add_stats(json_t *o, const char *k, double *x, size_t n)
{
	double mean = 0, var = 0, med = 0, p99 = 0;
	if (n > 0) {
		for (size_t i = 0; i < n; i++)
			mean += x[i] / (double)n;
		for (size_t i = 0; i < n; i++)
			var += (x[i] - mean) * (x[i] - mean) / (double)n;
		med = sb_median_sort(x, n);
		p99 = sb_sorted_quantile(x, n, 0.99);
	}
	char key[64];
	const char *stat[4] = { "mean", "median", "std", "p99" };
	double v[4] = { mean, med, sqrt(var), p99 };
	for (int j = 0; j < 4; j++) {
		snprintf(key, sizeof key, "%s_%s_ms", stat[j], k);
		if (json_object_set_new(o, key, json_real(v[j])) < 0)
			return -1;
	}
	return 0;
}

/* The per-request lists of the records idx[0..n) of lv, appended to o. */
static int add_lists(json_t *o, const sb_rlevel *lv, const size_t *idx, size_t n)
{
	json_t *in = json_array(), *out = json_array(), *ttft = json_array(), *lat = json_array(),
	       *itls = json_array(), *start = json_array(), *err = json_array();
	int bad = json_object_set_new(o, "input_lens", in) | json_object_set_new(o, "output_lens", out) |
		  json_object_set_new(o, "ttfts", ttft) | json_object_set_new(o, "latencies", lat) |
		  json_object_set_new(o, "itls", itls) | json_object_set_new(o, "start_times", start) |
		  json_object_set_new(o, "errors", err);
	for (size_t j = 0; j < n && !bad; j++) {
		const sb_reqrec *q = &lv->reqs[idx[j]];
		int ok = !q->err_class;
		json_t *g = json_array();
		for (size_t i = 0; ok && i < q->n_itl; i++)
			bad |= json_array_append_new(g, json_real(q->itl_ms[i] / 1000));
		bad |= json_array_append_new(in, json_integer(q->prompt_tokens > 0 ? q->prompt_tokens : 0)) |
		       json_array_append_new(out, json_integer(ok && q->output_tokens > 0 ? q->output_tokens : 0)) |
		       json_array_append_new(ttft, json_real(ok && isfinite(q->ttft_ms) ? q->ttft_ms / 1000 : 0)) |
		       json_array_append_new(lat, json_real(ok && isfinite(q->e2e_ms) ? q->e2e_ms / 1000 : 0)) |
		       json_array_append_new(itls, g) | json_array_append_new(start, json_real(q->t_sent_s)) |
		       json_array_append_new(err, json_string(ok ? "" : q->err_msg ? q->err_msg : q->err_class));
	}
	return bad ? -1 : 0;
}

/* The run's figures as vLLM computes them from the records idx[0..n) of lv
 * (successful ones: TTFT; TPOT (E2E - TTFT) / (output - 1) for outputs of
 * 2 or more; every ITL gap; E2E), the counts and throughputs over the
 * level's span from the first send to the last completion. */
static int add_summary(json_t *o, const sb_rlevel *lv, const size_t *idx, size_t n)
{
	size_t n_itl = 0, ok = 0, nt = 0;
	for (size_t j = 0; j < n; j++)
		n_itl += lv->reqs[idx[j]].n_itl;
	double *ttft = calloc(n + 1, sizeof(double)), *tpot = calloc(n + 1, sizeof(double)),
	       *e2e = calloc(n + 1, sizeof(double)), *itl = calloc(n_itl + 1, sizeof(double));
	double t0 = INFINITY, t1 = -INFINITY, tok_in = 0, tok_out = 0;
	n_itl = 0;
	for (size_t j = 0; ttft && tpot && e2e && itl && j < n; j++) {
		const sb_reqrec *q = &lv->reqs[idx[j]];
		t0 = fmin(t0, q->t_sent_s);
		t1 = fmax(t1, q->t_done_s);
		if (q->err_class || !isfinite(q->ttft_ms) || !isfinite(q->e2e_ms))
			continue;
		ttft[ok] = q->ttft_ms;
		e2e[ok++] = q->e2e_ms;
		tok_in += q->prompt_tokens > 0 ? (double)q->prompt_tokens : 0;
		tok_out += q->output_tokens > 0 ? (double)q->output_tokens : 0;
		if (q->output_tokens > 1)
			tpot[nt++] = (q->e2e_ms - q->ttft_ms) / (double)(q->output_tokens - 1);
		for (size_t i = 0; i < q->n_itl; i++)
			itl[n_itl++] = q->itl_ms[i];
	}
	double span = t1 > t0 ? t1 - t0 : NAN;
	int r = !ttft || !tpot || !e2e || !itl ? -1 : 0;
	if (r == 0)
		r = add_stats(o, "ttft", ttft, ok) | add_stats(o, "tpot", tpot, nt) |
		    add_stats(o, "itl", itl, n_itl) | add_stats(o, "e2el", e2e, ok);
	if (r == 0)
		r = json_object_set_new(o, "duration", sb_json_number(span)) |
		    json_object_set_new(o, "completed", json_integer((json_int_t)ok)) |
		    json_object_set_new(o, "failed", json_integer((json_int_t)(n - ok))) |
		    json_object_set_new(o, "total_input_tokens", json_integer((json_int_t)tok_in)) |
		    json_object_set_new(o, "total_output_tokens", json_integer((json_int_t)tok_out)) |
		    json_object_set_new(o, "request_throughput", sb_json_number((double)ok / span)) |
		    json_object_set_new(o, "output_throughput", sb_json_number(tok_out / span)) |
		    json_object_set_new(o, "total_token_throughput",
					sb_json_number((tok_in + tok_out) / span));
	free(ttft);
	free(tpot);
	free(e2e);
	free(itl);
	return r;
}

/* How the level was sent, in vLLM's terms: closed loop at C is
 * request_rate "inf" with max_concurrency C; open loop at a rate is that
 * request_rate (Poisson: burstiness 1) without a cap. */
static int add_settings(json_t *o, const sb_results *r, const sb_level *lv, size_t n)
{
	int closed = lv->mode == SB_MODE_CONCURRENCY;
	return json_object_set_new(o, "backend", json_string("servebench")) |
	       json_object_set_new(o, "model_id", json_string(r->target.model ? r->target.model : "")) |
	       json_object_set_new(o, "num_prompts", json_integer((json_int_t)n)) |
	       json_object_set_new(o, "request_rate", closed ? json_string("inf") : json_real(lv->level)) |
	       json_object_set_new(o, "burstiness", json_real(1.0)) |
	       json_object_set_new(o, "max_concurrency",
				   closed ? json_integer((json_int_t)lround(lv->level)) : json_null());
}

long sb_export_vllm(FILE *f, const sb_results *r, size_t level, sb_error *e)
{
	if (level >= r->n_levels)
		return sb_error_code(e, -EINVAL, "no level %zu (the file has %zu)", level + 1,
				     r->n_levels);
	const sb_rlevel *lv = &r->levels[level];
	size_t *idx = malloc((lv->n_reqs + 1) * sizeof(size_t));
	json_t *o = json_object();
	if (!idx || !o) {
		free(idx);
		json_decref(o);
		return sb_error_code(e, -ENOMEM, "out of memory");
	}
	size_t n = counted_records(lv, idx);
	long rc = (long)n;
	if (n == 0)
		rc = sb_error_code(e, -EINVAL, "level %zu holds no request records (a summary-only "
					       "file cannot be written per request)", level + 1);
	else if (add_settings(o, r, &lv->sum, n) < 0 || add_summary(o, lv, idx, n) < 0 ||
		 add_lists(o, lv, idx, n) < 0)
		rc = sb_error_code(e, -ENOMEM, "out of memory");
	else if (json_dumpf(o, f, JSON_COMPACT) < 0 || fputc('\n', f) == EOF || fflush(f) != 0)
		rc = sb_error_code(e, -EIO, "writing the vLLM JSON: %s", strerror(errno));
	free(idx);
	json_decref(o);
	return rc;
}
