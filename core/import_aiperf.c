/* import_aiperf.c — AIPerf's per-request export, profile_export.jsonl, as a
 * results document (core/import.h; mapping in docs/formats.md).
 *
 * The record schema read: ai-dynamo/aiperf at commit
 * db4f6397d11ee2d4cfbb41f70b2327315163dcf0, aiperf/common/models/
 * record_models.py (MetricRecordInfo: "metadata", "metrics", "error";
 * MetricRecordMetadata: request_start_ns / request_end_ns, time.time_ns()
 * wall clock, benchmark_phase, was_cancelled), error_models.py (ErrorDetails:
 * code, type, message), post_processors/record_export_results_processor.py
 * (one MetricRecordInfo per line, each metric {"value", "unit"} in its
 * display unit) and metrics/types/ (time_to_first_token, request_latency,
 * inter_chunk_latency: ns, displayed in ms; input_sequence_length,
 * output_sequence_length, error_isl: tokens). */
#include "import_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the reader saw across the file, for the notes. */
typedef struct aip_seen {
	size_t no_icl, warmup, cancelled, from_otc, failed;
} aip_seen;

/* Milliseconds in one of AIPerf's time units (MetricTimeUnit tags); 0 when
 * the unit is not a time. */
static double aip_unit_ms(const char *u)
{
	static const struct { const char *tag; double ms; } units[] = {
		{ "ns", 1e-6 }, { "us", 1e-3 }, { "ms", 1.0 }, { "sec", 1e3 },
	};
	for (size_t i = 0; u && i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(u, units[i].tag))
			return units[i].ms;
	return 0;
}

/* metrics[key]: NULL when absent or null; else the {"value", "unit"} object
 * whose unit is a time (*ms: milliseconds per unit) or "tokens" (*ms 0).
 * -EINVAL in *r for any other shape. */
static const json_t *aip_metric(const json_t *metrics, const char *key, double *ms, int *r,
				const char *name, size_t ln, sb_error *e)
{
	const json_t *m = json_object_get(metrics, key);
	if (!m || json_is_null(m))
		return NULL;
	const char *u = json_string_value(json_object_get(m, "unit"));
	const json_t *v = json_object_get(m, "value");
	*ms = aip_unit_ms(u);
	if (!json_is_object(m) || !u || !v || (*ms == 0 && strcmp(u, "tokens"))) {
		*r = sb_error_set(e, "%s:%zu: metrics.%s: expected {\"value\": ..., \"unit\": "
				     "\"ns\"|\"us\"|\"ms\"|\"sec\"|\"tokens\"}", name, ln, key);
		return NULL;
	}
	return v;
}

/* metrics[key] as a time in ms (finite, >= 0); NaN when absent. */
static int aip_time(const json_t *metrics, const char *key, double *out, const char *name,
		    size_t ln, sb_error *e)
{
	int r = 0;
	double ms;
	const json_t *v = aip_metric(metrics, key, &ms, &r, name, ln, e);
	*out = NAN;
	if (!v)
		return r;
	double d = json_number_value(v);
	if (!json_is_number(v) || ms == 0)
		return sb_error_set(e, "%s:%zu: metrics.%s: expected a number in a time unit",
				    name, ln, key);
	if (!isfinite(d) || d < 0 || d * ms > 1e12)
		return sb_error_set(e, "%s:%zu: metrics.%s: %g is negative or implausibly large",
				    name, ln, key, d);
	*out = d * ms;
	return 0;
}

/* metrics[key] as a token count; *out untouched when absent. */
static int aip_tokens(const json_t *metrics, const char *key, long *out, const char *name,
		      size_t ln, sb_error *e)
{
	int r = 0;
	double ms;
	const json_t *v = aip_metric(metrics, key, &ms, &r, name, ln, e);
	if (!v)
		return r;
	if (ms != 0 || !json_is_integer(v) || json_integer_value(v) < 0 ||
	    (double)json_integer_value(v) > MAX_TOKENS)
		return sb_error_set(e, "%s:%zu: metrics.%s: expected a token count (a whole "
				       "number >= 0, unit \"tokens\")", name, ln, key);
	*out = (long)json_integer_value(v);
	return 0;
}

/* metadata[key]: a wall-clock time in ns (an integer >= 0). */
static int aip_ns(const json_t *md, const char *key, int null_ok, json_int_t *out,
		  const char *name, size_t ln, sb_error *e)
{
	const json_t *v = json_object_get(md, key);
	if (null_ok && (!v || json_is_null(v))) {
		*out = -1;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return sb_error_set(e, "%s:%zu: metadata.%s: %s", name, ln, key,
				    v ? "expected a time in ns (a whole number >= 0)" : "missing");
	*out = json_integer_value(v);
	return 0;
}

/* The earliest request_start_ns: every row's send is measured from it, in
 * whole ns, before it becomes seconds (epoch ns do not fit a double). */
static int aip_t0(json_t **rows, size_t n, json_int_t *t0, const char *name, sb_error *e)
{
	*t0 = -1;
	for (size_t i = 0; i < n; i++) {
		size_t ln = imp_row_line(rows[i]);
		const json_t *md = json_object_get(rows[i], "metadata");
		json_int_t s;
		if (!json_is_object(md))
			return sb_error_set(e, "%s:%zu: metadata: missing or not an object", name, ln);
		int r = aip_ns(md, "request_start_ns", 0, &s, name, ln, e);
		if (r < 0)
			return r;
		if (*t0 < 0 || s < *t0)
			*t0 = s;
	}
	return 0;
}

/* The row's "error" (and was_cancelled) onto the last record of b. *failed:
 * whether it failed. */
static int aip_error(imp_recs *b, const json_t *o, int *failed, aip_seen *seen,
		     const char *name, size_t ln, sb_error *e)
{
	const json_t *err = json_object_get(o, "error");
	const json_t *md = json_object_get(o, "metadata");
	int cancelled = json_is_true(json_object_get(md, "was_cancelled"));
	*failed = cancelled || (err && !json_is_null(err));
	if (!*failed)
		return 0;
	seen->cancelled += cancelled;
	seen->failed++;
	const char *msg = json_string_value(json_object_get(err, "message"));
	if (err && !json_is_null(err) && (!json_is_object(err) || !msg))
		return sb_error_set(e, "%s:%zu: error: expected an object with a \"message\"",
				    name, ln);
	const char *type = json_string_value(json_object_get(err, "type"));
	const json_t *code = json_object_get(err, "code");
	char s[512];
	if (!msg)
		snprintf(s, sizeof(s), "cancelled (was_cancelled, no error)");
	else if (json_is_integer(code))
		snprintf(s, sizeof(s), "%lld %s: %s", (long long)json_integer_value(code),
			 type ? type : "error", msg);
	else
		snprintf(s, sizeof(s), "%s: %s", type ? type : "error", msg);
	return imp_fail(b, "imported", s) < 0 ? sb_error_code(e, -ENOMEM, "%s: out of memory", name)
					      : 0;
}

/* A successful row's times, counts and chunk gaps onto q (the last of b). */
static int aip_ok(imp_recs *b, sb_reqrec *q, const json_t *m, aip_seen *seen, const char *name,
		  size_t ln, sb_error *e)
{
	int r;
	if ((r = aip_time(m, "time_to_first_token", &q->ttft_ms, name, ln, e)) < 0 ||
	    (r = aip_time(m, "request_latency", &q->e2e_ms, name, ln, e)) < 0 ||
	    (r = aip_tokens(m, "input_sequence_length", &q->prompt_tokens, name, ln, e)) < 0 ||
	    (r = aip_tokens(m, "output_sequence_length", &q->output_tokens, name, ln, e)) < 0)
		return r;
	if (q->output_tokens < 0) {
		if ((r = aip_tokens(m, "output_token_count", &q->output_tokens, name, ln, e)) < 0)
			return r;
		seen->from_otc += q->output_tokens >= 0;
	}
	const char *missing = isnan(q->ttft_ms) ? "time_to_first_token (a run without "
						  "--streaming? servebench needs each TTFT)"
			      : isnan(q->e2e_ms)	 ? "request_latency"
			      : q->prompt_tokens < 0 ? "input_sequence_length"
			      : q->output_tokens < 0 ? "output_sequence_length"
						     : NULL;
	if (missing)
		return sb_error_set(e, "%s:%zu: metrics.%s: missing", name, ln, missing);
	if (q->e2e_ms < q->ttft_ms)
		return sb_error_set(e, "%s:%zu: metrics.request_latency %g ms is less than its "
				       "time_to_first_token %g ms", name, ln, q->e2e_ms, q->ttft_ms);
	double ms;
	const json_t *icl = aip_metric(m, "inter_chunk_latency", &ms, &r, name, ln, e);
	if (r < 0)
		return r;
	seen->no_icl += !icl;
	if (icl && (!json_is_array(icl) || ms == 0))
		return sb_error_set(e, "%s:%zu: metrics.inter_chunk_latency: expected a list of "
				       "gaps in a time unit", name, ln);
	for (size_t k = 0; k < json_array_size(icl); k++) {
		double g = json_number_value(json_array_get(icl, k)) * ms;
		if (!json_is_number(json_array_get(icl, k)) || !isfinite(g) || g < 0 || g > 1e12)
			return sb_error_set(e, "%s:%zu: metrics.inter_chunk_latency[%zu]: expected "
					       "a gap >= 0", name, ln, k);
		if (imp_add_itl(b, g) < 0)
			return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	}
	return 0;
}

/* Row o into a new record of b, sent (t_start - t0) ns after the first. */
static int aip_request(imp_recs *b, const json_t *o, json_int_t t0, aip_seen *seen,
		       const char *name, sb_error *e)
{
	size_t ln = imp_row_line(o);
	sb_reqrec *q = imp_recs_add(b);
	if (!q)
		return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	const json_t *md = json_object_get(o, "metadata");
	const json_t *m = json_object_get(o, "metrics");
	json_int_t start, end;
	int failed, r;
	if ((r = aip_ns(md, "request_start_ns", 0, &start, name, ln, e)) < 0 ||
	    (r = aip_ns(md, "request_end_ns", 1, &end, name, ln, e)) < 0)
		return r;
	if (m && !json_is_null(m) && !json_is_object(m))
		return sb_error_set(e, "%s:%zu: metrics: expected an object or null", name, ln);
	if (end >= 0 && end < start)
		return sb_error_set(e, "%s:%zu: metadata.request_end_ns is before "
				       "request_start_ns", name, ln);
	const json_t *ph = json_object_get(md, "benchmark_phase");
	if (ph && !json_is_null(ph) && !json_is_string(ph))
		return sb_error_set(e, "%s:%zu: metadata.benchmark_phase: expected a string", name, ln);
	q->warmup = ph && !strcmp(json_string_value(ph) ? json_string_value(ph) : "", "warmup");
	seen->warmup += q->warmup;
	q->t_sent_s = (double)(start - t0) / 1e9;
	if ((r = aip_error(b, o, &failed, seen, name, ln, e)) < 0)
		return r;
	if (!failed)
		return aip_ok(b, q, m, seen, name, ln, e);
	if (end >= 0)
		q->t_done_s = (double)(end - t0) / 1e9; /* the time of the error */
	if ((r = aip_tokens(m, "error_isl", &q->prompt_tokens, name, ln, e)) < 0 ||
	    (r = aip_tokens(m, "input_sequence_length", &q->prompt_tokens, name, ln, e)) < 0 ||
	    (r = aip_tokens(m, "output_sequence_length", &q->output_tokens, name, ln, e)) < 0)
		return r;
	return 0;
}

static void aip_notes(imp_recs *b, const aip_seen *s, double rate)
{
	imp_note(b, "the file does not say how the requests were sent (aiperf's --concurrency "
		    "or --request-rate is not in profile_export.jsonl): the level is an open loop "
		    "at the recorded metadata.request_start_ns (wall clock, ns), their mean rate "
		    "%.4g req/s", rate);
	imp_note(b, "ttft_ms and e2e_ms are aiperf's time_to_first_token and request_latency "
		    "(its perf counter, from the request's start to the first / last response), "
		    "converted from their display units");
	imp_note(b, "itl_ms are aiperf's inter_chunk_latency: gaps between streamed responses (a "
		    "chunk may carry several tokens); its inter_token_latency, (E2E - TTFT) / "
		    "(output - 1), is servebench's TPOT and is not read");
	imp_note(b, "output_tokens are output_sequence_length (output plus reasoning tokens)");
	if (s->no_icl)
		imp_note(b, "%zu successful request%s without inter_chunk_latency (fewer than two "
			    "responses): itl_ms empty", s->no_icl, s->no_icl == 1 ? "" : "s");
	if (s->from_otc)
		imp_note(b, "%zu request%s without output_sequence_length: output_tokens from "
			    "output_token_count", s->from_otc, s->from_otc == 1 ? "" : "s");
	if (s->warmup)
		imp_note(b, "%zu request%s of benchmark_phase \"warmup\" kept as warm-up requests "
			    "(replayed, not counted)", s->warmup, s->warmup == 1 ? "" : "s");
	if (s->cancelled)
		imp_note(b, "%zu request%s cancelled by aiperf (was_cancelled) counted as failed",
			 s->cancelled, s->cancelled == 1 ? "" : "s");
	if (s->failed)
		imp_note(b, "%zu failed request%s (a non-null \"error\" or was_cancelled): "
			    "prompt_tokens from error_isl where given, no TTFT or E2E", s->failed,
			 s->failed == 1 ? "" : "s");
}

json_t *sb_import_aiperf(char *text, const char *name, sb_error *e)
{
	imp_recs b = { 0 };
	aip_seen seen = { 0 };
	json_t **rows = NULL;
	size_t n_rows = 0;
	json_int_t t0 = 0;
	int r = imp_jsonl_rows(text, &rows, &n_rows, name, e);
	if (r == 0)
		r = aip_t0(rows, n_rows, &t0, name, e);
	for (size_t i = 0; r == 0 && i < n_rows; i++)
		r = aip_request(&b, rows[i], t0, &seen, name, e);
	imp_rows_free(rows, n_rows);
	if (r < 0) {
		imp_recs_free(&b);
		return NULL;
	}
	double rate = imp_mean_rate(&b);
	aip_notes(&b, &seen, rate);
	json_t *target = json_pack("{s:s}", "client", "aiperf");
	json_t *doc = imp_document(&b, SB_MODE_RATE, rate, target, SB_IMPORT_AIPERF, name, e);
	imp_recs_free(&b);
	return doc;
}
