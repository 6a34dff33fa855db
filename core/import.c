/* import.c — other tools' per-request result files as a results document:
 * the format told from the content, servebench's CSV, vllm bench serve and
 * LLMServingSim read here; AIPerf in import_aiperf.c, inference-perf in
 * import_inferenceperf.c, GuideLLM in import_guidellm.c; what they share in
 * import_recs.c (import_internal.h). */
#include "import_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "jsonfile.h"
#include "level.h"
#include "results.h"
#include "workload.h"

const char *sb_import_format_name(sb_import_format f)
{
	switch (f) {
	case SB_IMPORT_CSV:
		return "servebench-csv";
	case SB_IMPORT_VLLM:
		return "vllm-bench-serve";
	case SB_IMPORT_LLMSERVINGSIM:
		return "llmservingsim-requests";
	case SB_IMPORT_AIPERF:
		return "aiperf-profile-export";
	case SB_IMPORT_INFERENCEPERF:
		return "inference-perf-per-request";
	case SB_IMPORT_GUIDELLM:
		return "guidellm-benchmarks";
	default:
		return "servebench-results";
	}
}

#define CSV_HEADER "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error"

/* b->grp grown to b->cap entries (the last record's group 0), or NULL
 * (b->grp then still owned by b). */
static int *realloc_grp(imp_recs *b)
{
	int *g = realloc(b->grp, b->cap * sizeof(*g));
	if (g) {
		b->grp = g;
		g[b->n - 1] = 0;
	}
	return g;
}
/* ---- servebench's CSV -------------------------------------------------- */

/* The next comma-separated cell of *p (the line, NUL-terminated), NUL-
 * terminated in place; NULL when the line has no more. */
/* The next cell of a CSV line at *p (RFC 4180: a quoted cell may hold
 * commas and doubled quotes), unquoted in place; *p moves past its comma
 * (NULL after the last cell). NULL when there is no cell left; *bad set
 * when a quoted cell is not closed. */
static char *cell(char **p, int *bad)
{
	if (!*p)
		return NULL;
	char *s = *p;
	if (*s != '"') {
		char *c = strchr(s, ',');
		*p = c ? c + 1 : NULL;
		if (c)
			*c = 0;
		return s;
	}
	char *w = s;
	for (char *r = s + 1;; r++) {
		if (!*r) {
			*bad = 1;
			return NULL;
		}
		if (*r == '"' && r[1] == '"') {
			*w++ = '"';
			r++;
		} else if (*r == '"') {
			*w = 0;
			*p = r[1] == ',' ? r + 2 : NULL;
			return r[1] == ',' || !r[1] ? s : (*bad = 1, (char *)NULL);
		} else {
			*w++ = *r;
		}
	}
}

/* The columns: the six the format needs, in this order, then any of the
 * optional ones (`servebench export` writes them all). */
enum { C_SENT, C_PROMPT, C_OUTPUT, C_TTFT, C_E2E, C_ERROR, C_ITL, C_LEVEL, C_MODE, C_ID,
       C_SCHED, C_WAIT, C_WARMUP, N_COLS };
static const char *const csv_cols[N_COLS] = { "t_sent_s", "prompt_tokens", "output_tokens",
					      "ttft_ms",  "e2e_ms",	   "error",
					      "itl_ms",	  "level",	   "mode",
					      "id",	  "t_scheduled_s", "wait_ms",
					      "warmup" };

/* A number in cell s of column col, line ln: finite, >= 0. empty_ok: an empty
 * cell is NaN. */
static int csv_num(const char *s, const char *name, size_t ln, int col, int empty_ok,
		   double *out, sb_error *e)
{
	if (!*s) {
		if (empty_ok) {
			*out = NAN;
			return 0;
		}
		return sb_error_set(e, "%s:%zu: %s: empty (a number is needed)", name, ln,
				    csv_cols[col]);
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE || !isfinite(v))
		return sb_error_set(e, "%s:%zu: %s: \"%s\" is not a number", name, ln,
				    csv_cols[col], s);
	if (v < 0)
		return sb_error_set(e, "%s:%zu: %s: %s is negative", name, ln, csv_cols[col], s);
	if (v > 1e15)
		return sb_error_set(e, "%s:%zu: %s: %s is implausibly large", name, ln,
				    csv_cols[col], s);
	if ((col == C_PROMPT || col == C_OUTPUT || col == C_ID || col == C_WARMUP) &&
	    (v != floor(v) || v > MAX_TOKENS))
		return sb_error_set(e, "%s:%zu: %s: %s is not a whole number%s%s", name, ln,
				    csv_cols[col], s, col <= C_OUTPUT ? " of tokens" : "",
				    v > MAX_TOKENS ? " (too large)" : "");
	*out = v;
	return 0;
}

/* The header: col[i] the column of the line's cell i. Returns its cell
 * count, or -EINVAL with a message. */
static int csv_header(char *line, int *col, const char *name, sb_error *e)
{
	int n = 0, bad = 0, seen[N_COLS] = { 0 };
	for (char *p = line, *c; (c = cell(&p, &bad)); n++) {
		int k = 0;
		while (k < N_COLS && strcmp(c, csv_cols[k]))
			k++;
		if (n < C_ITL ? k != n : (k < C_ITL || k == N_COLS || seen[k]) || n >= N_COLS)
			return sb_error_set(e, "%s:1: the header must start \"" CSV_HEADER "\", then "
					       "any of itl_ms, level, mode, id, t_scheduled_s, "
					       "wait_ms, warmup once each (column %d is \"%s\")",
					    name, n + 1, c);
		seen[k] = 1;
		col[n] = k;
	}
	if (bad || n < C_ITL || seen[C_LEVEL] != seen[C_MODE])
		return sb_error_set(e, "%s:1: the header must start \"" CSV_HEADER "\"%s", name,
				    seen[C_LEVEL] != seen[C_MODE] ? " (level and mode go together)"
								  : "");
	return n;
}

/* Record q's level: the group of (level, mode) in b, added at its first row.
 * Returns 0 or -EINVAL with a message. */
static int csv_group(imp_recs *b, const char *lvl, const char *mode, const char *name, size_t ln,
		     sb_error *e)
{
	double v;
	int r = csv_num(lvl, name, ln, C_LEVEL, 0, &v, e);
	if (r < 0)
		return r;
	sb_mode m = !strcmp(mode, "concurrency") ? SB_MODE_CONCURRENCY : SB_MODE_RATE;
	if (strcmp(mode, "concurrency") && strcmp(mode, "rate"))
		return sb_error_set(e, "%s:%zu: mode: \"%s\" is neither concurrency nor rate", name,
				    ln, mode);
	if (!(v > 0))
		return sb_error_set(e, "%s:%zu: level: %s is not positive", name, ln, lvl);
	int g = 0;
	while (g < b->n_lv && !(b->lv[g].level == v && b->lv[g].mode == m))
		g++;
	if (g == b->n_lv) {
		if (g == SB_WORKLOAD_MAX_LEVELS)
			return sb_error_set(e, "%s:%zu: more than %d levels", name, ln,
					    SB_WORKLOAD_MAX_LEVELS);
		b->lv[g].level = v;
		b->lv[g].mode = m;
		b->n_lv++;
	}
	b->grp[b->n - 1] = g;
	return 0;
}

/* The gaps in cell s (space-separated) onto the last record. */
static int csv_gaps(imp_recs *b, const char *cellv, const char *name, size_t ln, sb_error *e)
{
	const char *s = cellv;
	for (char *end; s && *s; s = end) {
		while (*s == ' ')
			s++;
		if (!*s)
			break;
		errno = 0;
		double g = strtod(s, &end);
		if (end == s || (*end && *end != ' ') || !isfinite(g) || g < 0)
			return sb_error_set(e, "%s:%zu: itl_ms: \"%s\" is not a list of gaps "
					       "(non-negative numbers, space-separated)", name, ln, cellv);
		if (imp_add_itl(b, g) < 0)
			return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	}
	return 0;
}

/* One data line (its cells in c, by column) into a new record of b. */
static int csv_row(imp_recs *b, char **c, const char *name, size_t ln, sb_error *e)
{
	sb_reqrec *q = imp_recs_add(b);
	if (!q || (b->grp && !realloc_grp(b)))
		return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	int failed = c[C_ERROR][0] != 0, r;
	double v[C_ERROR];
	for (int i = 0; i < C_ERROR; i++)
		if ((r = csv_num(c[i], name, ln, i, failed && i >= C_TTFT, &v[i], e)) < 0)
			return r;
	q->t_sent_s = v[C_SENT];
	q->prompt_tokens = (long)v[C_PROMPT];
	q->output_tokens = (long)v[C_OUTPUT];
	q->ttft_ms = v[C_TTFT];
	q->e2e_ms = v[C_E2E];
	if (!failed && q->e2e_ms < q->ttft_ms)
		return sb_error_set(e, "%s:%zu: e2e_ms %g is less than ttft_ms %g", name, ln,
				    q->e2e_ms, q->ttft_ms);
	if (failed && imp_fail(b, "imported", c[C_ERROR]) < 0)
		return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	double x;
	if (c[C_ID] && (r = csv_num(c[C_ID], name, ln, C_ID, 0, &x, e)) == 0)
		q->id = (long)x;
	if (r == 0 && c[C_SCHED] && (r = csv_num(c[C_SCHED], name, ln, C_SCHED, 1, &x, e)) == 0)
		q->t_scheduled_s = x;
	if (r == 0 && c[C_WAIT] && (r = csv_num(c[C_WAIT], name, ln, C_WAIT, 1, &x, e)) == 0)
		q->wait_ms = x;
	if (r == 0 && c[C_WARMUP] && (r = csv_num(c[C_WARMUP], name, ln, C_WARMUP, 0, &x, e)) == 0)
		q->warmup = x != 0;
	if (r == 0 && b->grp)
		r = csv_group(b, c[C_LEVEL], c[C_MODE], name, ln, e);
	return r < 0 ? r : csv_gaps(b, c[C_ITL], name, ln, e);
}

static json_t *import_csv(char *text, const char *name, sb_error *e)
{
	imp_recs b = { 0 };
	int r = 0, col[N_COLS], nc = 0;
	size_t ln = 0;
	char *save = text;
	for (char *line = text; line && r == 0; line = save) {
		char *nl = strchr(line, '\n');
		save = nl ? nl + 1 : NULL;
		if (nl)
			*nl = 0;
		size_t len = strlen(line);
		if (len && line[len - 1] == '\r')
			line[--len] = 0;
		if (++ln == 1) {
			nc = r = csv_header(line, col, name, e);
			for (int i = 0; r > 0 && i < nc; i++)
				if (col[i] == C_LEVEL && !(b.grp = malloc(sizeof(int))))
					r = sb_error_code(e, -ENOMEM, "%s: out of memory", name);
			r = r < 0 ? r : 0;
			continue;
		}
		if (!len)
			continue; /* blank lines (the last newline) */
		char *c[N_COLS] = { 0 }, *p = line, *x;
		int i = 0, bad = 0;
		for (; i < nc && (x = cell(&p, &bad)); i++)
			c[col[i]] = x;
		if (bad)
			r = sb_error_set(e, "%s:%zu: a quoted cell is not closed", name, ln);
		else if (i < nc)
			r = sb_error_set(e, "%s:%zu: %d columns, expected %d (no %s)", name, ln, i,
					 nc, csv_cols[col[i]]);
		else if (p)
			r = sb_error_set(e, "%s:%zu: more than %d columns (quote an error message "
					    "that holds a comma)", name, ln, nc);
		else
			r = csv_row(&b, c, name, ln, e);
	}
	if (r == 0 && ln == 0)
		r = sb_error_set(e, "%s: empty file", name);
	if (r < 0) {
		imp_recs_free(&b);
		return NULL;
	}
	double rate = imp_mean_rate(&b);
	if (b.grp)
		imp_note(&b, "%d level%s as the file's level and mode columns give them", b.n_lv,
		     b.n_lv == 1 ? "" : "s");
	else
		imp_note(&b, "open loop at the send times the file gives; the level (%.4g req/s) is "
			 "their mean rate", rate);
	json_t *doc = imp_document(&b, SB_MODE_RATE, rate, json_object(), SB_IMPORT_CSV, name, e);
	imp_recs_free(&b);
	return doc;
}

/* ---- vllm bench serve -------------------------------------------------- */

/* obj[key] as an array of n entries (n == (size_t)-1: any, set), NULL when
 * absent; -EINVAL in *r when present but not an array of that length. */
static const json_t *vllm_list(const json_t *obj, const char *key, size_t *n, int *r,
			       const char *name, sb_error *e)
{
	const json_t *a = json_object_get(obj, key);
	if (!a || json_is_null(a))
		return NULL;
	if (!json_is_array(a)) {
		*r = sb_error_set(e, "%s: \"%s\": expected a list, one entry per request", name, key);
		return NULL;
	}
	if (*n == (size_t)-1)
		*n = json_array_size(a);
	else if (json_array_size(a) != *n) {
		*r = sb_error_set(e, "%s: \"%s\" has %zu entries, \"ttfts\" has %zu", name, key,
				  json_array_size(a), *n);
		return NULL;
	}
	return a;
}

/* a[i] in seconds: a finite non-negative number; NaN (allowed) when null. */
static int vllm_sec(const json_t *a, const char *key, size_t i, int null_ok, double *out,
		    const char *name, sb_error *e)
{
	const json_t *v = json_array_get(a, i);
	if ((!v || json_is_null(v)) && null_ok) {
		*out = NAN;
		return 0;
	}
	if (!json_is_number(v))
		return sb_error_set(e, "%s: %s[%zu]: expected a number (seconds)", name, key, i);
	double d = json_number_value(v);
	if (!isfinite(d) || d < 0)
		return sb_error_set(e, "%s: %s[%zu]: %g is negative", name, key, i, d);
	if (d > 1e12)
		return sb_error_set(e, "%s: %s[%zu]: %g s is implausibly large", name, key, i, d);
	*out = d;
	return 0;
}

static int vllm_count(const json_t *a, const char *key, size_t i, long *out, const char *name,
		      sb_error *e)
{
	const json_t *v = json_array_get(a, i);
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (double)json_integer_value(v) > MAX_TOKENS)
		return sb_error_set(e, "%s: %s[%zu]: expected a token count (a whole number >= 0)",
				    name, key, i);
	*out = (long)json_integer_value(v);
	return 0;
}

/* Closed loop at c clients, requests in record order: each is sent when the
 * first client is free (at 0 for the first c), and keeps it for its E2E. */
static void closed_loop_sends(imp_recs *b, size_t c)
{
	double *free_at = calloc(c, sizeof(double));
	for (size_t i = 0; i < b->n; i++) {
		sb_reqrec *q = &b->r[i];
		size_t k = 0;
		for (size_t m = 1; free_at && m < c; m++)
			if (free_at[m] < free_at[k])
				k = m;
		q->t_sent_s = free_at ? free_at[k] : 0;
		double d = isfinite(q->e2e_ms) ? q->e2e_ms / 1e3
					       : (isfinite(q->t_done_s) ? q->t_done_s : 0);
		q->t_done_s = NAN; /* from t_sent_s + e2e (a failed request: its latency) */
		if (!isfinite(q->e2e_ms) && d > 0)
			q->t_done_s = q->t_sent_s + d;
		if (free_at)
			free_at[k] = q->t_sent_s + d;
	}
	free(free_at);
}

/* The per-request lists of a vllm result, all of one length n. */
typedef struct vllm_lists {
	const json_t *ttfts, *in, *out, *itls, *lat, *st, *errs;
	size_t n;
} vllm_lists;

/* How the requests were sent: the file's request_rate (INFINITY: "inf"),
 * max_concurrency (-1: none), burstiness, ramp-up; the level they make. */
typedef struct vllm_send {
	double rate, burst, level;
	long conc;
	int ramp;
	sb_mode mode;
} vllm_send;

static int vllm_read_lists(const json_t *j, vllm_lists *L, const char *name, sb_error *e)
{
	int r = 0;
	L->n = (size_t)-1;
	L->ttfts = vllm_list(j, "ttfts", &L->n, &r, name, e);
	if (r < 0)
		return r;
	if (!L->ttfts)
		return sb_error_set(e, "%s: a vllm bench serve result without \"ttfts\": saved "
				       "without --save-detailed? The per-request lists are needed",
				    name);
	L->in = vllm_list(j, "input_lens", &L->n, &r, name, e);
	L->out = r < 0 ? NULL : vllm_list(j, "output_lens", &L->n, &r, name, e);
	L->itls = r < 0 ? NULL : vllm_list(j, "itls", &L->n, &r, name, e);
	L->lat = r < 0 ? NULL : vllm_list(j, "latencies", &L->n, &r, name, e);
	L->st = r < 0 ? NULL : vllm_list(j, "start_times", &L->n, &r, name, e);
	L->errs = r < 0 ? NULL : vllm_list(j, "errors", &L->n, &r, name, e);
	if (r < 0)
		return r;
	if (!L->in || !L->out)
		return sb_error_set(e, "%s: vllm bench serve result: no \"%s\" (per-request token "
				       "counts)", name, L->in ? "output_lens" : "input_lens");
	if (!L->lat && !L->itls)
		return sb_error_set(e, "%s: vllm bench serve result: neither \"latencies\" nor "
				       "\"itls\": no request's end-to-end time can be known", name);
	return 0;
}

static int vllm_read_send(const json_t *j, const vllm_lists *L, vllm_send *s, const char *name,
			  sb_error *e)
{
	const json_t *rr = json_object_get(j, "request_rate");
	s->rate = INFINITY;
	if (json_is_number(rr))
		s->rate = json_number_value(rr);
	else if (rr && !json_is_null(rr) && !(json_is_string(rr) && !strcmp(json_string_value(rr), "inf")))
		return sb_error_set(e, "%s: request_rate: expected a number or \"inf\"", name);
	if (!(s->rate > 0))
		return sb_error_set(e, "%s: request_rate: %g is not positive", name, s->rate);
	const json_t *mc = json_object_get(j, "max_concurrency");
	s->conc = -1;
	if (json_is_integer(mc) && json_integer_value(mc) >= 1)
		s->conc = (long)json_integer_value(mc);
	else if (mc && !json_is_null(mc))
		return sb_error_set(e, "%s: max_concurrency: expected a whole number >= 1 or null",
				    name);
	const json_t *ramp = json_object_get(j, "ramp_up_strategy");
	s->ramp = ramp && !json_is_null(ramp);
	s->burst = 1.0;
	const json_t *bj = json_object_get(j, "burstiness");
	if (json_is_number(bj) && json_number_value(bj) > 0)
		s->burst = json_number_value(bj);
	s->mode = isinf(s->rate) ? SB_MODE_CONCURRENCY : SB_MODE_RATE;
	s->level = isinf(s->rate) ? (s->conc > 0 ? (double)s->conc : (double)L->n) : s->rate;
	if (!L->st && s->mode == SB_MODE_RATE && (s->conc > 0 || s->ramp))
		return sb_error_set(e, "%s: vllm bench serve result without \"start_times\" at "
				       "request_rate %g with %s: when the requests were sent cannot "
				       "be known", name, s->rate,
				    s->conc > 0 ? "max_concurrency" : "a ramp-up");
	return 0;
}

/* Request i of the lists into a new record of b, sent at t (NaN: placed
 * later). Returns 0 or a negative errno with a message. */
static int vllm_request(imp_recs *b, const vllm_lists *L, size_t i, double t, const char *name,
			sb_error *e)
{
	sb_reqrec *q = imp_recs_add(b);
	if (!q)
		return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	const json_t *ej = json_array_get(L->errs, i);
	const char *em = json_string_value(ej);
	if (ej && !json_is_null(ej) && !em)
		return sb_error_set(e, "%s: errors[%zu]: expected a string", name, i);
	int failed = em && *em, r;
	double ttft, l = NAN;
	if ((r = vllm_count(L->in, "input_lens", i, &q->prompt_tokens, name, e)) < 0 ||
	    (r = vllm_count(L->out, "output_lens", i, &q->output_tokens, name, e)) < 0 ||
	    (r = vllm_sec(L->ttfts, "ttfts", i, failed, &ttft, name, e)) < 0 ||
	    (L->lat && (r = vllm_sec(L->lat, "latencies", i, failed, &l, name, e)) < 0))
		return r;
	const json_t *gaps = json_array_get(L->itls, i);
	if (L->itls && !json_is_array(gaps) && !(failed && (!gaps || json_is_null(gaps))))
		return sb_error_set(e, "%s: itls[%zu]: expected a list of gaps (seconds)", name, i);
	double sum = 0;
	for (size_t k = 0; k < json_array_size(gaps); k++) {
		double g;
		char key[48];
		snprintf(key, sizeof(key), "itls[%zu]", i);
		if ((r = vllm_sec(gaps, key, k, 0, &g, name, e)) < 0 ||
		    (!failed && (r = imp_add_itl(b, g * 1e3)) < 0))
			return r;
		sum += g;
	}
	q->t_sent_s = t;
	if (failed) {
		if ((r = imp_fail(b, "imported", em)) < 0)
			return r;
		if (isfinite(l) && l > 0)
			q->t_done_s = isnan(t) ? l : t + l; /* closed loop: a duration */
		return 0;
	}
	q->ttft_ms = ttft * 1e3;
	q->e2e_ms = (isfinite(l) ? l : ttft + sum) * 1e3;
	if (q->e2e_ms < q->ttft_ms)
		return sb_error_set(e, "%s: latencies[%zu]: %g s is less than its TTFT %g s", name,
				    i, l, ttft);
	return 0;
}

/* The notes on what the file lacked and how its send times were had. */
static void vllm_notes(imp_recs *b, const vllm_lists *L, const vllm_send *s)
{
	if (!L->errs)
		imp_note(b, "the file has no \"errors\": every request taken as successful");
	if (!L->lat)
		imp_note(b, "no \"latencies\" (an older vllm): each E2E is its TTFT plus its ITL gaps");
	if (L->st)
		imp_note(b, "send times from \"start_times\" (the client's perf_counter when each "
			"request was sent, after max_concurrency let it go)");
	else if (s->mode == SB_MODE_RATE)
		imp_note(b, "the file has no \"start_times\": send times DRAWN as %s arrivals at its "
			"request_rate %g req/s (burstiness %g), seed 0 — not the measured ones",
		     s->burst == 1.0 ? "Poisson" : "gamma", s->rate, s->burst);
	else if (s->conc > 0)
		imp_note(b, "the file has no \"start_times\": send times DERIVED for a closed loop "
			"at max_concurrency %ld (vllm's semaphore lets requests go in the file's "
			"order as earlier ones finish; each sent when the first of %ld clients is "
			"free), not measured", s->conc, s->conc);
	else
		imp_note(b, "the file has no \"start_times\": request_rate inf and no "
			"max_concurrency, so every request was sent at once (t_sent_s 0)");
	if (s->mode == SB_MODE_RATE && s->conc > 0)
		imp_note(b, "max_concurrency %ld also capped requests in flight; the level is open "
			"loop at the recorded send times, which include the cap's delays", s->conc);
	if (L->itls)
		imp_note(b, "itl_ms are vllm's gaps between streamed chunks (a chunk may carry "
			"several tokens)");
}

/* The document's target: the file's model, backend and date. */
static json_t *vllm_target(const json_t *j)
{
	json_t *target = json_object();
	const char *model = json_string_value(json_object_get(j, "model_id"));
	if (model)
		json_object_set_new(target, "model", json_string(model));
	const char *be = json_string_value(json_object_get(j, "backend"));
	if (!be)
		be = json_string_value(json_object_get(j, "endpoint_type"));
	if (be)
		json_object_set_new(target, "vllm_backend", json_string(be));
	const char *date = json_string_value(json_object_get(j, "date"));
	if (date)
		json_object_set_new(target, "vllm_date", json_string(date));
	return target;
}

static json_t *import_vllm(const json_t *j, const char *name, sb_error *e)
{
	vllm_lists L = { 0 };
	vllm_send s = { 0 };
	if (vllm_read_lists(j, &L, name, e) < 0 || vllm_read_send(j, &L, &s, name, e) < 0)
		return NULL;
	gsl_rng *rng = NULL;
	sb_workload w;
	if (!L.st && s.mode == SB_MODE_RATE) {
		sb_workload_init(&w);
		w.arrival = s.burst == 1.0 ? SB_ARRIVAL_POISSON : SB_ARRIVAL_GAMMA;
		w.arrival_cv = 1.0 / sqrt(s.burst);
		if (!(rng = sb_rng_new(0))) {
			sb_error_code(e, -ENOMEM, "%s: out of memory", name);
			return NULL;
		}
	}
	imp_recs b = { 0 };
	int r = 0;
	double t_next = 0;
	for (size_t i = 0; i < L.n && r == 0; i++) {
		double t = NAN; /* closed loop without start_times: placed below */
		if (L.st)
			r = vllm_sec(L.st, "start_times", i, 0, &t, name, e);
		else if (rng) {
			t = t_next;
			t_next += sb_workload_gap_s(&w, s.rate, rng);
		}
		if (r == 0)
			r = vllm_request(&b, &L, i, t, name, e);
	}
	gsl_rng_free(rng);
	if (r < 0) {
		imp_recs_free(&b);
		return NULL;
	}
	if (!L.st && s.mode == SB_MODE_CONCURRENCY && s.conc > 0)
		closed_loop_sends(&b, (size_t)s.conc);
	else if (!L.st && s.mode == SB_MODE_CONCURRENCY)
		for (size_t i = 0; i < b.n; i++)
			b.r[i].t_sent_s = 0;
	vllm_notes(&b, &L, &s);
	json_t *doc = imp_document(&b, s.mode, s.level, vllm_target(j), SB_IMPORT_VLLM, name, e);
	imp_recs_free(&b);
	return doc;
}

/* ---- LLMServingSim requests.jsonl -------------------------------------- */

/* obj[key]: NaN when absent or null, else a finite number (-EINVAL if not). */
static int lss_num(const json_t *o, const char *key, double *out, const char *name, size_t ln,
		   sb_error *e)
{
	const json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		*out = NAN;
		return 0;
	}
	if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
	    fabs(json_number_value(v)) > 1e15)
		return sb_error_set(e, "%s:%zu: %s: expected a number (seconds) or null", name, ln,
				    key);
	*out = json_number_value(v);
	return 0;
}

/* Two timestamps on the same clock (LLMServingSim's bench/core/validate.py:
 * requests finish in seconds, not days). */
static int same_clock(double a, double b)
{
	return isfinite(a) && isfinite(b) && fabs(a - b) < 100000;
}

static json_t *lss_target(const char *dir, imp_recs *b)
{
	json_t *t = json_object();
	json_object_set_new(t, "server", json_string("vllm"));
	if (!dir)
		return t;
	char path[4096];
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return t;
	fclose(f);
	json_error_t je;
	json_t *m = json_load_file(path, 0, &je);
	const char *model = json_string_value(json_object_get(m, "model"));
	if (model) {
		json_object_set_new(t, "model", json_string(model));
		imp_note(b, "target.model from meta.json beside the file");
	}
	/* the server settings calibrate --engine vllm replays on */
	const json_t *ek = json_object_get(m, "engine_kwargs");
	const json_t *kv = json_object_get(m, "kv_cache");
	const struct {
		const json_t *from;
		const char *key, *as;
	} set[] = { { ek, "max_num_seqs", "max_num_seqs" },
		    { ek, "max_num_batched_tokens", "max_num_batched_tokens" },
		    { ek, "data_parallel_size", "data_parallel_size" },
		    { kv, "block_size", "block_size" },
		    { kv, "num_gpu_blocks", "gpu_blocks" } };
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		const json_t *v = json_object_get(set[i].from, set[i].key);
		if (json_is_integer(v) && json_integer_value(v) > 0)
			json_object_set_new(t, set[i].as, json_integer(json_integer_value(v)));
	}
	const char *ver = json_string_value(json_object_get(m, "vllm_version"));
	if (ver)
		json_object_set_new(t, "vllm_version", json_string(ver));
	json_decref(m);
	return t;
}

/* One clock for every send: arrival_time when it shares the engine's clock
 * (first/last_token_ts), else queued_ts (vllm's arrival_time is wall-clock
 * epoch, the others monotonic). *anchor: the key; *other_clock: arrival_time
 * was on another clock. Returns 0 or -EINVAL. */
static int lss_anchor(json_t **rows, size_t n, const char **anchor, int *other_clock,
		      const char *name, sb_error *e)
{
	int use_arrival = 1, any = 0, r;
	for (size_t i = 0; i < n; i++) {
		double arr, fst;
		if ((r = lss_num(rows[i], "arrival_time", &arr, name, imp_row_line(rows[i]), e)) < 0 ||
		    (r = lss_num(rows[i], "first_token_ts", &fst, name, imp_row_line(rows[i]), e)) < 0)
			return r;
		if (!isfinite(fst))
			continue;
		any = 1;
		if (!same_clock(arr, fst))
			use_arrival = 0;
	}
	*anchor = use_arrival && any ? "arrival_time" : "queued_ts";
	*other_clock = !use_arrival;
	return 0;
}

/* Row o into a new record of b, timed from its `anchor`. */
static int lss_request(imp_recs *b, const json_t *o, const char *anchor, const char *name,
		       sb_error *e)
{
	size_t l = imp_row_line(o);
	sb_reqrec *q = imp_recs_add(b);
	if (!q)
		return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	const char *keys[2] = { "input_toks", "output_toks" };
	long *dst[2] = { &q->prompt_tokens, &q->output_tokens };
	for (int k = 0; k < 2; k++) {
		const json_t *v = json_object_get(o, keys[k]);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    (double)json_integer_value(v) > MAX_TOKENS)
			return sb_error_set(e, "%s:%zu: %s: %s", name, l, keys[k],
					    v ? "expected a whole number >= 0" : "missing");
		*dst[k] = (long)json_integer_value(v);
	}
	double t, fst, lst;
	int r;
	if ((r = lss_num(o, anchor, &t, name, l, e)) < 0 ||
	    (r = lss_num(o, "first_token_ts", &fst, name, l, e)) < 0 ||
	    (r = lss_num(o, "last_token_ts", &lst, name, l, e)) < 0)
		return r;
	if (!isfinite(t) && !isfinite(fst) && !isfinite(lst))
		/* vllm returned no RequestStateStats: sent, but when is not known */
		return sb_error_set(e, "%s:%zu: no timestamps (%s, first_token_ts, last_token_ts "
				       "all null): the request cannot be placed in time", name, l,
				    anchor);
	if (!isfinite(t))
		return sb_error_set(e, "%s:%zu: %s: missing or null", name, l, anchor);
	q->t_sent_s = t;
	if (!isfinite(fst) || !isfinite(lst))
		return imp_fail(b, "imported", "no first_token_ts/last_token_ts");
	if (fst < t || lst < fst)
		return sb_error_set(e, "%s:%zu: times out of order (%s %.6f, first_token_ts %.6f, "
				       "last_token_ts %.6f): a negative TTFT or TPOT", name, l,
				    anchor, t, fst, lst);
	q->ttft_ms = (fst - t) * 1e3;
	q->e2e_ms = (lst - t) * 1e3;
	q->t_done_s = lst;
	return 0;
}

static json_t *import_lss(char *text, const char *name, const char *dir, sb_error *e)
{
	imp_recs b = { 0 };
	json_t **rows = NULL;
	size_t n_rows = 0;
	const char *anchor = "queued_ts"; /* set by lss_anchor */
	int other_clock = 0, r = imp_jsonl_rows(text, &rows, &n_rows, name, e);
	if (r == 0)
		r = lss_anchor(rows, n_rows, &anchor, &other_clock, name, e);
	for (size_t i = 0; r == 0 && i < n_rows; i++)
		r = lss_request(&b, rows[i], anchor, name, e);
	if (r == 0 && n_rows == 0)
		r = sb_error_set(e, "%s: no requests in the file", name);
	imp_rows_free(rows, n_rows);
	if (r < 0) {
		imp_recs_free(&b);
		return NULL;
	}
	double rate = imp_mean_rate(&b);
	imp_note(&b, "open loop at the send times the file gives (%s); the level (%.4g req/s) is "
		 "their mean rate", anchor, rate);
	if (other_clock)
		imp_note(&b, "arrival_time is on another clock than first/last_token_ts (epoch vs "
			 "monotonic), so requests are timed from queued_ts, as LLMServingSim's "
			 "validate.py does: TTFT and E2E leave out the time before vllm queued "
			 "the request");
	imp_note(&b, "no inter-token gaps in the file (itl_ms empty); TPOT is (E2E - TTFT) / "
		 "(output - 1) as LLMServingSim defines it");
	imp_note(&b, "output_tokens are the requested output_toks (the bench runs with "
		 "ignore_eos), not counted");
	json_t *target = lss_target(dir, &b);
	json_t *doc = imp_document(&b, SB_MODE_RATE, rate, target, SB_IMPORT_LLMSERVINGSIM, name, e);
	imp_recs_free(&b);
	return doc;
}

/* ---- detection --------------------------------------------------------- */

/* An AIPerf record (MetricRecordInfo): "metadata" with "request_start_ns",
 * and "metrics". */
static int is_aiperf(const json_t *o)
{
	const json_t *md = json_object_get(o, "metadata");
	return json_is_object(md) && json_object_get(md, "request_start_ns") &&
	       json_object_get(o, "metrics");
}

/* A GuideLLM report: "benchmarks", a list whose first entry has "requests"
 * or type_ "generative_benchmark" (0.1: "benchmarks", refused by the
 * reader), or none beside metadata.guidellm_version. */
static int is_guidellm(const json_t *j)
{
	const json_t *bs = json_object_get(j, "benchmarks"), *b0 = json_array_get(bs, 0);
	const char *type = json_string_value(json_object_get(b0, "type_"));
	if (!json_is_array(bs))
		return 0;
	if (!b0)
		return json_object_get(json_object_get(j, "metadata"), "guidellm_version") != NULL;
	return json_object_get(b0, "requests") || json_object_get(b0, "benchmarks") ||
	       (type && !strcmp(type, "generative_benchmark"));
}

/* Text that is not one JSON object: JSON lines, each format told by its
 * first line. */
static json_t *import_lines(char *buf, size_t s, size_t len, const char *name, const char *dir,
			    sb_import_format *f, sb_error *e)
{
	json_error_t je;
	json_t *doc = NULL;
	const char *nl = memchr(buf + s, '\n', len - s);
	json_t *first = json_loadb(buf + s, nl ? (size_t)(nl - (buf + s)) : len - s, 0, &je);
	if (json_is_object(first) && json_object_get(first, "first_token_ts")) {
		*f = SB_IMPORT_LLMSERVINGSIM;
		doc = import_lss(buf, name, dir, e);
	} else if (json_is_object(first) && is_aiperf(first)) {
		*f = SB_IMPORT_AIPERF;
		doc = sb_import_aiperf(buf, name, e);
	} else if (json_is_object(first) && json_object_get(first, "ttfts")) {
		*f = SB_IMPORT_VLLM;
		sb_error_set(e, "%s: several vllm bench serve results in one file "
			        "(--append-result): give each run as a file of its own", name);
	} else {
		doc = sb_json_load_string(buf, name, e);
		json_decref(doc);
		doc = NULL;
	}
	json_decref(first);
	return doc;
}

/* Text that starts with '{': one JSON object, or JSON lines. */
static json_t *import_object(char *buf, size_t s, size_t len, const char *name,
			     const char *dir, sb_import_format *f, sb_error *e)
{
	json_error_t je;
	json_t *j = json_loadb(buf + s, len - s, 0, &je), *doc = NULL;
	if (!j)
		return import_lines(buf, s, len, name, dir, f, e);
	if (json_object_get(j, "schema")) {
		doc = json_incref(j);
	} else if (json_object_get(j, "ttfts") || json_object_get(j, "input_lens")) {
		*f = SB_IMPORT_VLLM;
		doc = import_vllm(j, name, e);
	} else if (json_object_get(j, "first_token_ts")) {
		*f = SB_IMPORT_LLMSERVINGSIM;
		doc = import_lss(buf, name, dir, e);
	} else if (is_aiperf(j)) {
		*f = SB_IMPORT_AIPERF;
		doc = sb_import_aiperf(buf, name, e);
	} else if (is_guidellm(j)) {
		*f = SB_IMPORT_GUIDELLM;
		doc = sb_import_guidellm(j, name, e);
	} else {
		sb_error_set(e, "%s: a JSON object of unknown shape: not a servebench results "
			        "file (no \"schema\"), not a vllm bench serve result (no "
			        "\"ttfts\"), not LLMServingSim requests (no \"first_token_ts\"), "
			        "not an AIPerf record (no \"metadata\".\"request_start_ns\"), "
			        "not a GuideLLM report (no \"benchmarks\" with \"requests\")", name);
	}
	json_decref(j);
	return doc;
}

/* Text that starts with '[': inference-perf's list of requests. */
static json_t *import_array(const char *text, size_t len, const char *name,
			    sb_import_format *f, sb_error *e)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, 0, &je), *doc = NULL;
	const json_t *first = json_array_get(j, 0);
	if (!j) {
		sb_error_set(e, "%s:%d: %s", name, je.line, je.text);
	} else if (json_is_object(first) && json_object_get(first, "start_time") &&
		   json_object_get(first, "info")) {
		*f = SB_IMPORT_INFERENCEPERF;
		doc = sb_import_inferenceperf(j, name, e);
	} else {
		sb_error_set(e, "%s: a JSON array%s: not a format servebench reads (results files "
			        "are objects; inference-perf's per-request file is a list of objects "
			        "with \"start_time\" and \"info\")", name,
			     json_array_size(j) ? "" : " (empty)");
	}
	json_decref(j);
	return doc;
}

json_t *sb_import_text(const char *text, size_t len, const char *name, const char *dir,
		       sb_import_format *fmt, sb_error *e)
{
	sb_import_format f = SB_IMPORT_RESULTS;
	if (fmt)
		*fmt = f;
	size_t s = 0;
	if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
		s = 3;
	while (s < len && strchr(" \t\r\n", text[s]))
		s++;
	if (s == len) {
		sb_error_set(e, "%s: empty file", name);
		return NULL;
	}
	if (memchr(text, 0, len)) {
		sb_error_set(e, "%s: a NUL byte: not a text file", name);
		return NULL;
	}
	char *buf = malloc(len + 1);
	if (!buf) {
		sb_error_code(e, -ENOMEM, "%s: out of memory", name);
		return NULL;
	}
	memcpy(buf, text, len);
	buf[len] = 0;
	json_t *doc = NULL;
	if (buf[s] == '{')
		doc = import_object(buf, s, len, name, dir, &f, e);
	else if (buf[s] == '[')
		doc = import_array(buf + s, len - s, name, &f, e);
	else if (!strncmp(buf + s, "t_sent_s,", 9)) {
		f = SB_IMPORT_CSV;
		doc = import_csv(buf + s, name, e);
	} else {
		sb_error_set(e, "%s: unknown format: expected a servebench results JSON, a vllm bench "
			        "serve JSON (--save-detailed), LLMServingSim requests.jsonl, AIPerf "
			        "profile_export.jsonl, inference-perf per_request_lifecycle_metrics.json, "
			        "a GuideLLM benchmarks.json, or a CSV with the header \"" CSV_HEADER "\"",
			     name);
	}
	free(buf);
	if (fmt)
		*fmt = f;
	return doc;
}

json_t *sb_import_load(const char *path, sb_import_format *fmt, int *err, sb_error *e)
{
	int dummy;
	if (!err)
		err = &dummy;
	*err = -EINVAL;
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f) {
		*err = -errno;
		sb_error_set(e, "%s: %s", path, strerror(errno));
		return NULL;
	}
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	while (buf) {
		if (len == cap) {
			char *p = realloc(buf, cap *= 2);
			if (!p) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = p;
		}
		size_t k = fread(buf + len, 1, cap - len, f);
		len += k;
		if (k == 0)
			break;
	}
	int rd_err = ferror(f);
	if (f != stdin)
		fclose(f);
	if (!buf) {
		*err = -ENOMEM;
		sb_error_code(e, -ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	if (rd_err) {
		free(buf);
		*err = -EIO;
		sb_error_set(e, "%s: read error", path);
		return NULL;
	}
	char *dir = NULL;
	const char *slash = strrchr(path, '/');
	if (strcmp(path, "-"))
		dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path))
			    : strdup(".");
	json_t *doc = sb_import_text(buf, len, path, dir, fmt, e);
	free(dir);
	free(buf);
	if (doc)
		*err = 0;
	return doc;
}
