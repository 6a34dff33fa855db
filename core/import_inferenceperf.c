/* import_inferenceperf.c — inference-perf's per_request_lifecycle_metrics.json
 * as a results document (core/import.h; mapping in docs/formats.md).
 *
 * The record schema read: kubernetes-sigs/inference-perf at commit
 * 7de5ef2ed6f7934e0ecbc8297e593f79e68430c0: inference_perf/reportgen/base.py
 * (generate_reports writes a JSON list, one object per request: start_time,
 * end_time, request, response, info, error), inference_perf/apis/base.py
 * (InferenceInfo: request_metrics.text.input_tokens, the deprecated mirror
 * input_tokens, response_metrics {output_tokens, server_usage, chunk_times,
 * output_token_times}; ErrorResponseInfo: error_type, error_msg), and
 * client/modelserver/openai_client.py (start_time / end_time are
 * time.perf_counter() seconds around the request; TTFT is
 * output_token_times[0] - start_time, reportgen/base.py summarize_requests). */
#include "import_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the reader saw across the file, for the notes. */
typedef struct ip_seen {
	size_t from_chunks, one_time, deprecated_in, failed;
} ip_seen;

/* o[key]: a time in seconds (finite, >= 0, not absurd). */
static int ip_sec(const json_t *o, const char *key, double *out, const char *name, size_t i,
		  sb_error *e)
{
	const json_t *v = json_object_get(o, key);
	if (!json_is_number(v))
		return sb_error_set(e, "%s: [%zu].%s: %s", name, i, key,
				    v ? "expected a number (seconds)" : "missing");
	double d = json_number_value(v);
	if (!isfinite(d) || d < 0 || d > 1e12)
		return sb_error_set(e, "%s: [%zu].%s: %g is negative or implausibly large", name, i,
				    key, d);
	*out = d;
	return 0;
}

/* A token count at o[key] (*out untouched when absent or null). */
static int ip_count(const json_t *o, const char *key, const char *where, long *out,
		    const char *name, size_t i, sb_error *e)
{
	const json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (double)json_integer_value(v) > MAX_TOKENS)
		return sb_error_set(e, "%s: [%zu].%s%s: expected a token count (a whole number "
				       ">= 0)", name, i, where, key);
	*out = (long)json_integer_value(v);
	return 0;
}

/* The request's token counts: info.request_metrics.text.input_tokens (or the
 * deprecated info.input_tokens), info.response_metrics.output_tokens. */
static int ip_counts(sb_reqrec *q, const json_t *info, ip_seen *seen, const char *name, size_t i,
		     sb_error *e)
{
	const json_t *text = json_object_get(json_object_get(info, "request_metrics"), "text");
	const json_t *rm = json_object_get(info, "response_metrics");
	int r;
	if ((r = ip_count(text, "input_tokens", "info.request_metrics.text.", &q->prompt_tokens,
			  name, i, e)) < 0)
		return r;
	if (q->prompt_tokens < 0) {
		if ((r = ip_count(info, "input_tokens", "info.", &q->prompt_tokens, name, i, e)) < 0)
			return r;
		seen->deprecated_in += q->prompt_tokens >= 0;
	}
	return ip_count(rm, "output_tokens", "info.response_metrics.", &q->output_tokens, name,
			i, e);
}

/* The token times of a streamed response (output_token_times, else
 * chunk_times): NULL for a response that was not streamed. */
static const json_t *ip_times(const json_t *rm, ip_seen *seen, int *r, const char *name, size_t i,
			      sb_error *e)
{
	const char *key = "output_token_times";
	const json_t *t = json_object_get(rm, key);
	if (!json_array_size(t) && json_array_size(json_object_get(rm, "chunk_times"))) {
		key = "chunk_times";
		t = json_object_get(rm, key);
		seen->from_chunks++;
	}
	if (t && !json_is_null(t) && !json_is_array(t)) {
		*r = sb_error_set(e, "%s: [%zu].info.response_metrics.%s: expected a list of times "
				     "(seconds)", name, i, key);
		return NULL;
	}
	for (size_t k = 0; k < json_array_size(t); k++) {
		const json_t *v = json_array_get(t, k);
		double d = json_number_value(v);
		if (!json_is_number(v) || !isfinite(d) ||
		    (k > 0 && d < json_number_value(json_array_get(t, k - 1)))) {
			*r = sb_error_set(e, "%s: [%zu].info.response_metrics.%s[%zu]: expected a "
					     "time (seconds) no earlier than the one before",
					  name, i, key, k);
			return NULL;
		}
	}
	return json_array_size(t) ? t : NULL;
}

/* A successful request's TTFT, E2E and gaps from its token times. */
static int ip_ok(imp_recs *b, sb_reqrec *q, const json_t *info, double end, ip_seen *seen,
		 const char *name, size_t i, sb_error *e)
{
	int r = 0;
	const json_t *t = ip_times(json_object_get(info, "response_metrics"), seen, &r, name, i, e);
	if (r < 0)
		return r;
	if (!t)
		return sb_error_set(e, "%s: [%zu].info.response_metrics: no output_token_times (a "
				       "run without streaming? servebench needs each request's TTFT)",
				    name, i);
	double first = json_number_value(json_array_get(t, 0));
	double last = json_number_value(json_array_get(t, json_array_size(t) - 1));
	if (first < q->t_sent_s || last > end)
		return sb_error_set(e, "%s: [%zu]: token times %.6f..%.6f outside start_time %.6f .. "
				       "end_time %.6f", name, i, first, last, q->t_sent_s, end);
	seen->one_time += json_array_size(t) == 1;
	q->ttft_ms = (first - q->t_sent_s) * 1e3;
	q->e2e_ms = (end - q->t_sent_s) * 1e3;
	q->t_done_s = end;
	for (size_t k = 1; k < json_array_size(t); k++) {
		double g = json_number_value(json_array_get(t, k)) -
			   json_number_value(json_array_get(t, k - 1));
		if (imp_add_itl(b, g * 1e3) < 0)
			return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	}
	return 0;
}

/* Entry o (index i) into a new record of b. */
static int ip_request(imp_recs *b, const json_t *o, ip_seen *seen, const char *name, size_t i,
		      sb_error *e)
{
	if (!json_is_object(o))
		return sb_error_set(e, "%s: [%zu]: expected an object (one per request)", name, i);
	sb_reqrec *q = imp_recs_add(b);
	if (!q)
		return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	double end;
	int r;
	if ((r = ip_sec(o, "start_time", &q->t_sent_s, name, i, e)) < 0 ||
	    (r = ip_sec(o, "end_time", &end, name, i, e)) < 0)
		return r;
	if (end < q->t_sent_s)
		return sb_error_set(e, "%s: [%zu]: end_time %.6f is before start_time %.6f", name, i,
				    end, q->t_sent_s);
	const json_t *info = json_object_get(o, "info");
	if (info && !json_is_null(info) && !json_is_object(info))
		return sb_error_set(e, "%s: [%zu].info: expected an object", name, i);
	if ((r = ip_counts(q, info, seen, name, i, e)) < 0)
		return r;
	const json_t *err = json_object_get(o, "error");
	if (!err || json_is_null(err)) {
		if (q->prompt_tokens < 0 || q->output_tokens < 0)
			return sb_error_set(e, "%s: [%zu].info: no %s", name, i,
					    q->prompt_tokens < 0 ? "request_metrics.text.input_tokens"
								 : "response_metrics.output_tokens");
		return ip_ok(b, q, info, end, seen, name, i, e);
	}
	const char *type = json_string_value(json_object_get(err, "error_type"));
	const char *msg = json_string_value(json_object_get(err, "error_msg"));
	if (!json_is_object(err) || !msg)
		return sb_error_set(e, "%s: [%zu].error: expected an object with \"error_msg\"", name, i);
	char s[512];
	snprintf(s, sizeof(s), "%s: %s", type ? type : "error", msg);
	q->t_done_s = end; /* the time of the failure */
	seen->failed++;
	return imp_fail(b, "imported", s) < 0 ? sb_error_code(e, -ENOMEM, "%s: out of memory", name)
					      : 0;
}

static void ip_notes(imp_recs *b, const ip_seen *s, double rate)
{
	imp_note(b, "the file does not say how the requests were sent (nor which load stage each "
		    "belongs to; the stages are in the run's config.yaml, not read): all of them "
		    "one level, an open loop at the recorded start_time (the client's perf_counter, "
		    "s), their mean rate %.4g req/s", rate);
	imp_note(b, "ttft_ms is output_token_times[0] - start_time and e2e_ms end_time - "
		    "start_time, as inference-perf defines them");
	imp_note(b, "itl_ms are the gaps between output_token_times: inference-perf gives every "
		    "token of a chunk the chunk's arrival time when it re-tokenizes the response "
		    "(those gaps 0), one time per chunk when it does not; its TPOT, (last - first "
		    "token time) / (output - 1), is servebench's TPOT up to the end_time after the "
		    "last token");
	imp_note(b, "output_tokens are info.response_metrics.output_tokens (inference-perf's "
		    "client-side count, not the server's usage)");
	if (s->from_chunks)
		imp_note(b, "%zu request%s without output_token_times: timed from chunk_times",
			 s->from_chunks, s->from_chunks == 1 ? "" : "s");
	if (s->one_time)
		imp_note(b, "%zu request%s with one token time: TTFT taken from it (inference-perf "
			    "reports no TTFT for fewer than two)", s->one_time,
			 s->one_time == 1 ? "" : "s");
	if (s->deprecated_in)
		imp_note(b, "%zu request%s without info.request_metrics.text: input_tokens from the "
			    "older info.input_tokens", s->deprecated_in,
			 s->deprecated_in == 1 ? "" : "s");
	if (s->failed)
		imp_note(b, "%zu failed request%s (a non-null \"error\"): token counts where "
			    "given, no TTFT or E2E", s->failed, s->failed == 1 ? "" : "s");
}

json_t *sb_import_inferenceperf(const json_t *j, const char *name, sb_error *e)
{
	imp_recs b = { 0 };
	ip_seen seen = { 0 };
	int r = 0;
	for (size_t i = 0; r == 0 && i < json_array_size(j); i++)
		r = ip_request(&b, json_array_get(j, i), &seen, name, i, e);
	if (r < 0) {
		imp_recs_free(&b);
		return NULL;
	}
	double rate = imp_mean_rate(&b);
	ip_notes(&b, &seen, rate);
	json_t *target = json_pack("{s:s}", "client", "inference-perf");
	json_t *doc = imp_document(&b, SB_MODE_RATE, rate, target, SB_IMPORT_INFERENCEPERF, name, e);
	imp_recs_free(&b);
	return doc;
}
