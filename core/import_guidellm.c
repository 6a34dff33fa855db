/* import_guidellm.c — GuideLLM's benchmarks JSON (`guidellm benchmark
 * --output-path benchmarks.json`) as a results document (core/import.h;
 * mapping in docs/formats.md).
 *
 * The schema read: vllm-project/guidellm at commit
 * ee7a77457ba668b4b5ccb40f110518829893b36a (after v0.7.3):
 * src/guidellm/benchmark/schemas/report.py (GenerativeBenchmarksReport:
 * metadata, config, benchmarks[]), benchmark/schemas/benchmark.py
 * (GenerativeBenchmark: config.strategy, requests {successful, incomplete,
 * errored}, start_time / end_time the measured window), benchmark/schemas/
 * accumulator.py (every request kept unless config.sample_size samples them;
 * metrics over those overlapping the window), schemas/request_stats.py
 * (GenerativeRequestStats: info, input_metrics, output_metrics and the
 * computed prompt_tokens, output_tokens), schemas/info.py (RequestTimings:
 * request_start, first_token_iteration, request_end, resolve_start /
 * resolve_end, time.time() seconds; RequestInfo.error) and
 * scheduler/strategies.py (type_ synchronous, concurrent with streams,
 * throughput with max_concurrency, constant / poisson with rate, trace).
 * Unchanged since v0.4.0 (v0.4.0-v0.6.x name the sample size
 * sample_requests); main between 2025-10-01 and v0.4.0 named the first
 * token first_iteration. And the older schema of v0.2.0-v0.3.1 (tag
 * v0.3.1, src/guidellm/benchmark/benchmark.py: args.strategy,
 * request_totals / request_samples, GenerativeTextResponseStats start_time,
 * first_token_time, end_time, prompt_tokens, output_tokens;
 * GenerativeTextErrorStats error). */
#include "import_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the reader saw across the file, for the notes. */
typedef struct gl_seen {
	size_t old, from_resolve, warmup, errored, incomplete;
} gl_seen;

/* The reader's state: the records, what it saw, where it is (messages). */
typedef struct gl_ctx {
	imp_recs *b;
	gl_seen seen;
	size_t grp_cap; /* entries allocated in b->grp */
	const char *name;
	sb_error *e;
	char at[96]; /* the entry being read, "benchmarks[1].requests.errored[0]" */
} gl_ctx;

/* One benchmark's strategy as a level. */
typedef struct gl_level {
	const char *type; /* strategy.type_ */
	const char *where; /* "config.strategy" or (0.2-0.3) "args.strategy" */
	sb_mode mode;
	double level; /* NaN: from the records (throughput, trace) */
	long cap;     /* strategy.max_concurrency, -1 when none */
	int g;        /* its index in b->lv */
} gl_level;

/* The request lists, in the order records are made; failed from the second. */
enum { GL_OK, GL_ERRORED, GL_INCOMPLETE, GL_N_STATUS };
static const char *const gl_status[GL_N_STATUS] = { "successful", "errored", "incomplete" };

/* A request's times: [schema (0 >= 0.4, 1 older)][time][key, then the
 * fallback GuideLLM uses, or the pre-0.4 name] (NULL: none). */
enum { T_START, T_FIRST, T_END, N_T };
static const char *const gl_keys[2][N_T][2] = {
	{ { "request_start", "resolve_start" },
	  { "first_token_iteration", "first_iteration" },
	  { "request_end", "resolve_end" } },
	{ { "start_time", NULL }, { "first_token_time", NULL }, { "end_time", NULL } },
};

/* o[key]: a time in seconds, NaN when o or the key is absent or null. */
static int gl_time(gl_ctx *c, const json_t *o, const char *pre, const char *key, double *out)
{
	const json_t *v = json_object_get(o, key);
	*out = NAN;
	if (!v || json_is_null(v))
		return 0;
	double d = json_number_value(v);
	if (!json_is_number(v))
		return sb_error_set(c->e, "%s: %s.%s%s: expected a number (seconds) or null",
				    c->name, c->at, pre, key);
	if (!isfinite(d) || d < 0 || d > 1e12)
		return sb_error_set(c->e, "%s: %s.%s%s: %g is negative or implausibly large",
				    c->name, c->at, pre, key, d);
	*out = d;
	return 0;
}

/* o[key]: a token count into *out (untouched when absent or null). */
static int gl_count(gl_ctx *c, const json_t *o, const char *pre, const char *key, long *out)
{
	const json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (double)json_integer_value(v) > MAX_TOKENS)
		return sb_error_set(c->e, "%s: %s.%s%s: expected a token count (a whole number "
					  ">= 0)", c->name, c->at, pre, key);
	*out = (long)json_integer_value(v);
	return 0;
}

/* Entry o's start, first-token and end times (NaN where not given); *old:
 * the 0.2-0.3 schema; key[t] the key each came from, pre their prefix. */
static int gl_times(gl_ctx *c, const json_t *o, double t[N_T], const char *key[N_T],
		    const char **pre, int *old)
{
	const json_t *info = json_object_get(o, "info"), *src = o;
	*old = !info || json_is_null(info);
	*pre = *old ? "" : "info.timings.";
	if (*old && !json_object_get(o, "start_time"))
		return sb_error_set(c->e, "%s: %s: neither info.timings (GuideLLM >= 0.4) nor "
					  "start_time (GuideLLM 0.2-0.3)", c->name, c->at);
	if (!*old && !json_is_object(src = json_object_get(info, "timings")))
		return sb_error_set(c->e, "%s: %s.info%s", c->name, c->at,
				    json_is_object(info) ? ".timings: missing or not an object"
							 : ": expected an object with \"timings\"");
	for (int k = 0; k < N_T; k++) {
		for (int a = 0; a < 2 && (key[k] = gl_keys[*old][k][a]); a++) {
			int r = gl_time(c, src, *pre, key[k], &t[k]);
			if (r < 0)
				return r;
			if (isfinite(t[k]))
				break;
		}
		if (isnan(t[k]))
			key[k] = gl_keys[*old][k][0]; /* neither given: named by the first */
	}
	if (key[T_START] == gl_keys[0][T_START][1] || key[T_END] == gl_keys[0][T_END][1])
		c->seen.from_resolve++;
	c->seen.old += *old;
	return 0;
}

/* The entry's token counts: prompt_tokens / output_tokens (both schemas),
 * else input_metrics / output_metrics .total_tokens. */
static int gl_counts(gl_ctx *c, const json_t *o, sb_reqrec *q)
{
	int r;
	if ((r = gl_count(c, o, "", "prompt_tokens", &q->prompt_tokens)) < 0 ||
	    (r = gl_count(c, o, "", "output_tokens", &q->output_tokens)) < 0)
		return r;
	if (q->prompt_tokens < 0 &&
	    (r = gl_count(c, json_object_get(o, "input_metrics"), "input_metrics.", "total_tokens",
			  &q->prompt_tokens)) < 0)
		return r;
	if (q->output_tokens < 0)
		return gl_count(c, json_object_get(o, "output_metrics"), "output_metrics.",
				"total_tokens", &q->output_tokens);
	return 0;
}

/* The last record failed: info.error (0.2-0.3: error) as its message. */
static int gl_failed(gl_ctx *c, const json_t *o, int status, int old)
{
	const json_t *err = old ? json_object_get(o, "error")
				: json_object_get(json_object_get(o, "info"), "error");
	if (err && !json_is_null(err) && !json_is_string(err))
		return sb_error_set(c->e, "%s: %s.%s: expected a string or null", c->name, c->at,
				    old ? "error" : "info.error");
	const char *m = json_string_value(err);
	char s[512];
	if (status == GL_INCOMPLETE)
		snprintf(s, sizeof(s), "incomplete: %s",
			 m ? m : "cancelled by GuideLLM (the benchmark ended first)");
	else
		snprintf(s, sizeof(s), "%s", m ? m : "errored (GuideLLM gave no message)");
	c->seen.errored += status == GL_ERRORED;
	c->seen.incomplete += status == GL_INCOMPLETE;
	return imp_fail(c->b, "imported", s) < 0
		       ? sb_error_code(c->e, -ENOMEM, "%s: out of memory", c->name)
		       : 0;
}

/* b->grp as large as b->r, the last record in level g. */
static int gl_group(gl_ctx *c, int g)
{
	imp_recs *b = c->b;
	if (c->grp_cap < b->cap) {
		int *p = realloc(b->grp, b->cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		b->grp = p;
		c->grp_cap = b->cap;
	}
	b->grp[b->n - 1] = g;
	return 0;
}

/* Entry o (at c->at) of list `status` into a new record of level g; win:
 * the benchmark's measured window (NaN: none). */
static int gl_request(gl_ctx *c, const json_t *o, int status, int g, const double win[2])
{
	if (!json_is_object(o))
		return sb_error_set(c->e, "%s: %s: expected an object (one per request)", c->name,
				    c->at);
	sb_reqrec *q = imp_recs_add(c->b);
	if (!q || gl_group(c, g) < 0)
		return sb_error_code(c->e, -ENOMEM, "%s: out of memory", c->name);
	double t[N_T];
	const char *key[N_T], *pre;
	int old, r = gl_times(c, o, t, key, &pre, &old);
	if (r < 0 || (r = gl_counts(c, o, q)) < 0)
		return r;
	if (isnan(t[T_START]))
		return sb_error_set(c->e, "%s: %s.%s%s: missing or null%s: the request cannot be "
					  "placed in time", c->name, c->at, pre, key[T_START],
				    old ? "" : " (and no resolve_start)");
	if (t[T_END] < t[T_START])
		return sb_error_set(c->e, "%s: %s: %s%s %.6f is before %s%s %.6f", c->name, c->at,
				    pre, key[T_END], t[T_END], pre, key[T_START], t[T_START]);
	q->t_sent_s = t[T_START];
	q->t_done_s = t[T_END]; /* NaN for a failed request without one */
	q->warmup = (isfinite(t[T_END]) ? t[T_END] : t[T_START]) < win[0] || t[T_START] > win[1];
	c->seen.warmup += q->warmup;
	if (status != GL_OK)
		return gl_failed(c, o, status, old);
	const char *missing = isnan(t[T_FIRST]) ? key[T_FIRST]
			      : isnan(t[T_END])	    ? key[T_END]
						    : NULL;
	if (missing)
		return sb_error_set(c->e, "%s: %s.%s%s: missing or null%s", c->name, c->at, pre,
				    missing, missing == key[T_FIRST] ? " (a run without streaming? "
				    "servebench needs each request's TTFT)" : "");
	if (q->prompt_tokens < 0 || q->output_tokens < 0)
		return sb_error_set(c->e, "%s: %s: no %s", c->name, c->at,
				    q->prompt_tokens < 0 ? "prompt_tokens (nor input_metrics."
				    "total_tokens)" : "output_tokens (nor output_metrics.total_tokens)");
	if (t[T_FIRST] < t[T_START] || t[T_FIRST] > t[T_END])
		return sb_error_set(c->e, "%s: %s: %s%s %.6f outside %s%s %.6f .. %s%s %.6f",
				    c->name, c->at, pre, key[T_FIRST], t[T_FIRST], pre,
				    key[T_START], t[T_START], pre, key[T_END], t[T_END]);
	q->ttft_ms = (t[T_FIRST] - t[T_START]) * 1e3;
	q->e2e_ms = (t[T_END] - t[T_START]) * 1e3;
	return 0;
}

/* s[key]: a whole number of requests in flight, 1 .. GL_MAX_INFLIGHT, into
 * *out; -1 when absent or null and opt. */
#define GL_MAX_INFLIGHT 1000000
static int gl_whole(gl_ctx *c, const json_t *s, const char *where, const char *key, int opt,
		    long *out)
{
	const json_t *v = json_object_get(s, key);
	*out = -1;
	if (opt && (!v || json_is_null(v)))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > GL_MAX_INFLIGHT)
		return !v ? sb_error_set(c->e, "%s: %s.%s.%s: missing", c->name, c->at, where, key)
			  : sb_error_set(c->e, "%s: %s.%s.%s: expected a whole number from 1 to %d",
					 c->name, c->at, where, key, GL_MAX_INFLIGHT);
	*out = (long)json_integer_value(v);
	return 0;
}

/* Benchmark o's strategy (config.strategy, 0.2-0.3: args.strategy) into L. */
static int gl_strategy(gl_ctx *c, const json_t *o, gl_level *L)
{
	const json_t *s = json_object_get(json_object_get(o, "config"), "strategy");
	L->where = "config.strategy";
	if (!s && json_object_get(o, "args")) {
		s = json_object_get(json_object_get(o, "args"), "strategy");
		L->where = "args.strategy";
	}
	if (!json_is_object(s))
		return sb_error_set(c->e, "%s: %s.%s: missing or not an object", c->name, c->at,
				    L->where);
	if (!(L->type = json_string_value(json_object_get(s, "type_"))))
		return sb_error_set(c->e, "%s: %s.%s.type_: missing or not a string", c->name,
				    c->at, L->where);
	long n = 1;
	int r = gl_whole(c, s, L->where, "max_concurrency", 1, &L->cap);
	const json_t *v = json_object_get(s, "rate");
	L->mode = SB_MODE_CONCURRENCY;
	L->level = NAN; /* throughput, trace: from the records */
	if (r < 0 || !strcmp(L->type, "throughput"))
		return r;
	if (!strcmp(L->type, "synchronous") || !strcmp(L->type, "concurrent")) {
		if (!strcmp(L->type, "concurrent") &&
		    (r = gl_whole(c, s, L->where, "streams", 0, &n)) < 0)
			return r;
		L->level = (double)n;
		return 0;
	}
	L->mode = SB_MODE_RATE;
	if (!strcmp(L->type, "trace"))
		return 0;
	if (strcmp(L->type, "constant") && strcmp(L->type, "poisson"))
		return sb_error_set(c->e, "%s: %s.%s.type_: \"%s\" is not a strategy GuideLLM "
					  "runs (synchronous, concurrent, throughput, constant, "
					  "poisson, trace)", c->name, c->at, L->where, L->type);
	L->level = json_number_value(v);
	if (!json_is_number(v) || !(L->level > 0) || !(L->level <= 1e9))
		return sb_error_set(c->e, "%s: %s.%s.rate: %s", c->name, c->at, L->where,
				    v ? "expected a rate > 0 and <= 1e9 (req/s)" : "missing");
	return 0;
}

/* Every benchmark's strategy into L[], each given its level's index: the
 * open-loop ones first, then the closed-loop ones, in the file's order (a
 * results workload has one mode, its first level's, and a closed-loop mode
 * would refuse a fractional rate). */
static int gl_levels(gl_ctx *c, const json_t *bs, gl_level *L)
{
	size_t nb = json_array_size(bs);
	int g = 0, r = 0;
	for (size_t k = 0; k < nb && r == 0; k++) {
		snprintf(c->at, sizeof(c->at), "benchmarks[%zu]", k);
		if (!json_is_object(json_array_get(bs, k)))
			return sb_error_set(c->e, "%s: %s: expected an object", c->name, c->at);
		r = gl_strategy(c, json_array_get(bs, k), &L[k]);
	}
	for (int pass = 0; pass < 2 && r == 0; pass++)
		for (size_t k = 0; k < nb; k++)
			if ((L[k].mode == SB_MODE_RATE) == (pass == 0)) {
				L[k].g = g;
				c->b->lv[g++].mode = L[k].mode;
			}
	c->b->n_lv = g;
	return r;
}

/* Records n0.. of b's mean send rate, (n - 1) / their span (1 without). */
static double gl_mean_rate(const imp_recs *b, size_t n0)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = n0; i < b->n; i++) {
		lo = fmin(lo, b->r[i].t_sent_s);
		hi = fmax(hi, b->r[i].t_sent_s);
	}
	return b->n - n0 >= 2 && hi > lo ? (double)(b->n - n0 - 1) / (hi - lo) : 1.0;
}

/* The requests GuideLLM counted in benchmark o against the kept[] ones:
 * metrics.request_totals (0.2-0.3: request_totals). A note when the lists
 * are a sample. */
static void gl_sampled(gl_ctx *c, const json_t *o, const size_t kept[GL_N_STATUS], size_t k)
{
	const json_t *tot = json_object_get(json_object_get(o, "metrics"), "request_totals");
	if (!tot)
		tot = json_object_get(o, "request_totals");
	long long all = 0, n = 0;
	int sampled = 0;
	for (int s = 0; s < GL_N_STATUS; s++) {
		const json_t *v = json_object_get(tot, gl_status[s]);
		long long t = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
		sampled |= t > (long long)kept[s];
		all += t > (long long)kept[s] ? t : (long long)kept[s];
		n += (long long)kept[s];
	}
	if (sampled)
		imp_note(c->b, "benchmarks[%zu]: a SAMPLE: the file keeps %lld of the %lld requests "
			 "GuideLLM counted (config.sample_size, sample_requests in 0.4-0.6 with a "
			 "default of 10 per status until 0.5.3, --output-sampling in 0.2-0.3): this "
			 "level's records, and so its rates and in-flight counts, are a sample's",
			 k, n, all);
}

/* Benchmark o's requests (at index k, strategy L) into records of b. */
static int gl_benchmark(gl_ctx *c, const json_t *o, size_t k, gl_level *L)
{
	const json_t *reqs = json_object_get(o, "requests");
	if (!json_is_object(reqs))
		return sb_error_set(c->e, "%s: benchmarks[%zu].requests: missing or not an object",
				    c->name, k);
	const json_t *ws = json_object_get(o, "start_time"), *we = json_object_get(o, "end_time");
	double win[2] = { json_is_number(ws) ? json_number_value(ws) : NAN,
			  json_is_number(we) ? json_number_value(we) : NAN };
	size_t n0 = c->b->n, kept[GL_N_STATUS];
	for (int s = 0; s < GL_N_STATUS; s++) {
		const json_t *a = json_object_get(reqs, gl_status[s]);
		if (a && !json_is_null(a) && !json_is_array(a))
			return sb_error_set(c->e, "%s: benchmarks[%zu].requests.%s: expected a list",
					    c->name, k, gl_status[s]);
		kept[s] = json_array_size(a);
		for (size_t i = 0; i < kept[s]; i++) {
			snprintf(c->at, sizeof(c->at), "benchmarks[%zu].requests.%s[%zu]", k,
				 gl_status[s], i);
			int r = gl_request(c, json_array_get(a, i), s, L->g, win);
			if (r < 0)
				return r;
		}
	}
	size_t n = c->b->n - n0;
	if (n == 0)
		return sb_error_set(c->e, "%s: benchmarks[%zu].requests: no requests (successful, "
					  "errored and incomplete all empty)", c->name, k);
	if (isnan(L->level) && L->mode == SB_MODE_RATE)
		L->level = gl_mean_rate(c->b, n0);
	else if (isnan(L->level))
		L->level = L->cap > 0 && (size_t)L->cap < n ? (double)L->cap : (double)n;
	c->b->lv[L->g].level = L->level;
	gl_sampled(c, o, kept, k);
	return 0;
}

/* The note on how benchmark k's level was had. */
static void gl_level_note(gl_ctx *c, size_t k, const gl_level *L)
{
	char cap[128] = "";
	if (L->cap > 0)
		snprintf(cap, sizeof(cap), "; its max_concurrency %ld (GuideLLM's limit on requests "
			 "in flight) may have delayed sends, as recorded", L->cap);
	if (!strcmp(L->type, "throughput"))
		imp_note(c->b, "benchmarks[%zu] (throughput): closed loop at %g, %s", k, L->level,
			 L->cap == (long)L->level ? "its max_concurrency"
			 : L->cap > 0 ? "its request count (max_concurrency is more: every "
					"request in flight at once)"
				      : "its request count (no max_concurrency: every request "
					"taken as in flight at once)");
	else if (L->mode == SB_MODE_CONCURRENCY)
		imp_note(c->b, "benchmarks[%zu] (%s): closed loop at %g%s", k, L->type, L->level,
			 strcmp(L->type, "concurrent") ? "" : ", its streams");
	else if (!strcmp(L->type, "trace"))
		imp_note(c->b, "benchmarks[%zu] (trace): open loop at the recorded send times, the "
			 "level their mean rate %.4g req/s%s", k, L->level, cap);
	else
		imp_note(c->b, "benchmarks[%zu] (%s): open loop at its rate %g req/s, at the "
			 "recorded send times%s", k, L->type, L->level, cap);
}

static void gl_notes(gl_ctx *c, int reordered)
{
	const gl_seen *s = &c->seen;
	imp_note(c->b, "one level per benchmark, from its %s; t_sent_s is each request's "
		 "%s (GuideLLM's time.time() when its backend began the request), so a lag behind "
		 "GuideLLM's schedule (targeted_start, not read) is in neither TTFT nor E2E",
		 s->old ? "args.strategy" : "config.strategy", s->old ? "start_time" : "request_start");
	if (reordered)
		imp_note(c->b, "levels: the open-loop benchmarks first, then the closed-loop ones, "
			 "each in the file's order (a results workload has the mode of its first level)");
	imp_note(c->b, "ttft_ms = %s and e2e_ms = %s, as GuideLLM's time_to_first_token_ms "
		 "and request_latency", s->old ? "first_token_time - start_time"
		 : "first_token_iteration - request_start", s->old ? "end_time - start_time"
		 : "request_end - request_start");
	imp_note(c->b, "no per-token times in the file (itl_ms empty): GuideLLM keeps the first "
		 "and last token times only; its inter_token_latency_ms, (last - first token) / "
		 "(output - 1), is servebench's TPOT less the time after the last token, and its "
		 "time_per_output_token_ms divides by every output token");
	imp_note(c->b, "output_tokens are GuideLLM's output_tokens (output_metrics.total_tokens: "
		 "the server's usage where reported); records per benchmark in the file's order: "
		 "successful, errored, incomplete");
	if (s->old)
		imp_note(c->b, "GuideLLM 0.2-0.3's schema (start_time, first_token_time, end_time)");
	if (s->from_resolve)
		imp_note(c->b, "%zu request%s without request_start or request_end: timed from "
			 "resolve_start / resolve_end, as GuideLLM's request_start_time and "
			 "request_end_time are", s->from_resolve, s->from_resolve == 1 ? "" : "s");
	if (s->warmup)
		imp_note(c->b, "%zu request%s outside its benchmark's [start_time, end_time] "
			 "(GuideLLM's warm-up and cool-down, left out of its metrics) kept as warm-up "
			 "records (replayed, not counted)", s->warmup, s->warmup == 1 ? "" : "s");
	if (s->errored || s->incomplete)
		imp_note(c->b, "%zu failed request%s (%zu errored, %zu incomplete: cancelled when "
			 "the benchmark ended), with %s as the message: token counts where given, no "
			 "TTFT or E2E", s->errored + s->incomplete,
			 s->errored + s->incomplete == 1 ? "" : "s", s->errored, s->incomplete,
			 s->old ? "error" : "info.error");
}

/* The document's target: the client, GuideLLM's version, the model. */
static json_t *gl_target(const json_t *j)
{
	json_t *t = json_pack("{s:s}", "client", "guidellm");
	const json_t *md = json_object_get(j, "metadata");
	const char *v = json_string_value(json_object_get(md, "guidellm_version"));
	if (v)
		json_object_set_new(t, "guidellm_version", json_string(v));
	const json_t *b0 = json_array_get(json_object_get(j, "benchmarks"), 0);
	const json_t *be = json_object_get(json_object_get(b0, "config"), "backend");
	const char *m = json_string_value(json_object_get(be, "model"));
	if (!m) /* 0.2-0.3 */
		m = json_string_value(json_object_get(json_object_get(b0, "worker"), "backend_model"));
	if (m)
		json_object_set_new(t, "model", json_string(m));
	return t;
}

json_t *sb_import_guidellm(const json_t *j, const char *name, sb_error *e)
{
	const json_t *bs = json_object_get(j, "benchmarks");
	size_t nb = json_array_size(bs);
	if (nb && !json_object_get(json_array_get(bs, 0), "requests") &&
	    json_object_get(json_array_get(bs, 0), "benchmarks")) {
		sb_error_set(e, "%s: a GuideLLM 0.1 report (benchmarks[].benchmarks[]): not read; "
			        "GuideLLM 0.2 and later write benchmarks[].requests", name);
		return NULL;
	}
	if (nb == 0 || nb > SB_WORKLOAD_MAX_LEVELS) {
		if (nb)
			sb_error_set(e, "%s: benchmarks: %zu, more than servebench's %d levels", name,
				     nb, SB_WORKLOAD_MAX_LEVELS);
		else
			sb_error_set(e, "%s: benchmarks: none (a GuideLLM report of no benchmark)",
				     name);
		return NULL;
	}
	imp_recs b = { 0 };
	gl_ctx c = { .b = &b, .name = name, .e = e };
	gl_level L[SB_WORKLOAD_MAX_LEVELS];
	int r = gl_levels(&c, bs, L), reordered = 0;
	for (size_t k = 0; k < nb && r == 0; k++) {
		r = gl_benchmark(&c, json_array_get(bs, k), k, &L[k]);
		reordered |= L[k].g != (int)k;
		if (r == 0)
			gl_level_note(&c, k, &L[k]);
	}
	if (r < 0) {
		imp_recs_free(&b);
		return NULL;
	}
	gl_notes(&c, reordered);
	json_t *doc = imp_document(&b, b.lv[0].mode, b.lv[0].level, gl_target(j),
				   SB_IMPORT_GUIDELLM, name, e);
	imp_recs_free(&b);
	return doc;
}
