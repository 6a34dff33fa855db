/* import.c — other tools' per-request result files as a results document. */
#include "import.h"

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
	default:
		return "servebench-results";
	}
}

/* Beyond these a value is a mistake (or another clock), not a measurement:
 * token counts, and the span of a level's times in seconds (3 years). */
#define MAX_TOKENS 1e12
#define MAX_SPAN_S 1e8

#define CSV_HEADER "t_sent_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,error"

/* ---- the records being built ------------------------------------------- */

typedef struct recs {
	sb_reqrec *r;
	size_t *itl_at; /* each record's first gap in itl (pointers set at the end) */
	size_t n, cap;
	double *itl;
	size_t n_itl, cap_itl;
	char **msg; /* owned error messages, one per record (NULL: none) */
	json_t *notes;
	int *grp;   /* each record's level: an index into lv (NULL: all one level) */
	struct { double level; sb_mode mode; } lv[SB_WORKLOAD_MAX_LEVELS];
	int n_lv;
} recs;

static void recs_free(recs *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->msg[i]);
	free(b->r);
	free(b->itl_at);
	free(b->itl);
	free(b->msg);
	free(b->grp);
	json_decref(b->notes);
}

/* A new record (times NaN, counts unknown), or NULL when out of memory. */
static sb_reqrec *recs_add(recs *b)
{
	if (b->n == b->cap) {
		size_t c = b->cap ? 2 * b->cap : 64;
		sb_reqrec *r = realloc(b->r, c * sizeof(*r));
		if (r)
			b->r = r;
		size_t *a = realloc(b->itl_at, c * sizeof(*a));
		if (a)
			b->itl_at = a;
		char **m = realloc(b->msg, c * sizeof(*m));
		if (m)
			b->msg = m;
		if (!r || !a || !m)
			return NULL;
		b->cap = c;
	}
	sb_reqrec *q = &b->r[b->n];
	memset(q, 0, sizeof(*q));
	q->id = (long)b->n;
	q->t_scheduled_s = q->t_sent_s = q->t_done_s = NAN;
	q->ttft_ms = q->e2e_ms = q->wait_ms = NAN;
	q->prompt_tokens = q->output_tokens = -1;
	q->slot = q->replica = -1;
	b->itl_at[b->n] = b->n_itl;
	b->msg[b->n] = NULL;
	b->n++;
	return q;
}

/* b->grp grown to b->cap entries (the last record's group 0), or NULL
 * (b->grp then still owned by b). */
static int *realloc_grp(recs *b)
{
	int *g = realloc(b->grp, b->cap * sizeof(*g));
	if (g) {
		b->grp = g;
		g[b->n - 1] = 0;
	}
	return g;
}

static int recs_add_itl(recs *b, double v)
{
	if (b->n_itl == b->cap_itl) {
		size_t c = b->cap_itl ? 2 * b->cap_itl : 256;
		double *p = realloc(b->itl, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		b->itl = p;
		b->cap_itl = c;
	}
	b->itl[b->n_itl++] = v;
	b->r[b->n - 1].n_itl++;
	return 0;
}

/* Marks the last record failed: class cls (static), message msg (copied). */
static int recs_fail(recs *b, const char *cls, const char *msg)
{
	sb_reqrec *q = &b->r[b->n - 1];
	q->err_class = cls;
	if (msg && !(b->msg[b->n - 1] = strdup(msg)))
		return -ENOMEM;
	json_t *ok = msg ? json_string(msg) : NULL;
	if (msg && !ok) /* not UTF-8 (JSON strings must be): bytes >= 0x80 as '?' */
		for (unsigned char *c = (unsigned char *)b->msg[b->n - 1]; *c; c++)
			if (*c >= 0x80)
				*c = '?';
	json_decref(ok);
	q->err_msg = b->msg[b->n - 1];
	return 0;
}

static void note(recs *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(recs *b, const char *fmt, ...)
{
	char s[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s, sizeof(s), fmt, ap);
	va_end(ap);
	if (!b->notes)
		b->notes = json_array();
	json_array_append_new(b->notes, json_string(s));
}

/* Records i0.. of b's level g (all of them when b has no levels), shifted
 * so that the level's first send is at 0, into a new array (*n of them);
 * NULL when out of memory. Gaps point into b->itl. */
static sb_reqrec *level_records(recs *b, int g, size_t *n)
{
	sb_reqrec *r = malloc((b->n ? b->n : 1) * sizeof(*r));
	if (!r)
		return NULL;
	double t0 = INFINITY;
	*n = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (b->grp && b->grp[i] != g)
			continue;
		sb_reqrec q = b->r[i];
		q.itl_ms = q.n_itl ? b->itl + b->itl_at[i] : NULL;
		if (isnan(q.t_scheduled_s))
			q.t_scheduled_s = q.t_sent_s;
		t0 = fmin(t0, q.t_scheduled_s);
		r[(*n)++] = q;
	}
	for (size_t i = 0; i < *n; i++) {
		sb_reqrec *q = &r[i];
		q->t_sent_s -= t0;
		q->t_scheduled_s -= t0;
		if (isnan(q->t_done_s))
			q->t_done_s = q->t_sent_s + (isfinite(q->e2e_ms) ? q->e2e_ms / 1e3 : 0);
		else
			q->t_done_s -= t0;
	}
	return r;
}

/* Level g of the document: its records, checked to lie on one clock, and
 * their summary added to doc. Returns 0, -EINVAL or -ENOMEM with a message. */
static int add_level(json_t *doc, recs *b, int g, sb_mode mode, double level,
		     const char *name, sb_error *e)
{
	size_t n;
	sb_reqrec *r = level_records(b, g, &n);
	if (!r)
		return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	int ret = 0;
	for (size_t i = 0; i < n && ret == 0; i++)
		if (!(r[i].t_sent_s <= MAX_SPAN_S && r[i].t_done_s <= MAX_SPAN_S))
			ret = sb_error_set(e, "%s: request %zu: %g s after the first send (more "
					      "than %g s): times on different clocks?", name, i,
					   fmax(r[i].t_sent_s, r[i].t_done_s), MAX_SPAN_S);
	sb_level lv;
	if (ret == 0 && sb_level_of_records(r, n, level, mode, &lv) < 0)
		ret = sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	json_t *reqs = ret == 0 ? json_array() : NULL;
	for (size_t i = 0; reqs && i < n; i++)
		if (json_array_append_new(reqs, sb_reqrec_to_json(&r[i], NULL)) < 0)
			break;
	if (ret == 0 && (!reqs || json_array_size(reqs) != n || sb_results_add_level(doc, &lv, reqs) < 0))
		ret = sb_error_code(e, -ENOMEM, "%s: out of memory", name); /* reqs stolen */
	free(r);
	return ret;
}

/* The document: each level's records shifted so its first send is at 0,
 * their summary over [first send, last completion], a workload saying the
 * mode and levels, target (stolen), and "import". Without levels in b, one
 * level of mode and level. */
static json_t *recs_document(recs *b, sb_mode mode, double level, json_t *target,
			     sb_import_format fmt, const char *name, sb_error *e)
{
	if (b->n == 0) {
		json_decref(target);
		sb_error_set(e, "%s: no requests in the file", name);
		return NULL;
	}
	int nl = b->grp ? b->n_lv : 1;
	sb_workload w;
	sb_workload_init(&w);
	w.mode = b->grp ? b->lv[0].mode : mode;
	for (int g = 0; g < nl; g++)
		w.levels[g] = b->grp ? b->lv[g].level : level;
	w.n_levels = nl;
	w.requests = (long)b->n;
	w.warmup = 0;
	json_t *doc = sb_results_new("measured", target, &w);
	if (!doc) {
		sb_error_code(e, -ENOMEM, "%s: out of memory", name);
		return NULL;
	}
	/* the workload's lengths are the defaults, not this file's: leave them out */
	json_t *wl = json_object_get(doc, "workload");
	json_object_del(wl, "input_len");
	json_object_del(wl, "output_len");
	json_t *imp = json_pack("{s:s,s:s,s:O}", "format", sb_import_format_name(fmt), "file",
				name, "notes", b->notes ? b->notes : json_array());
	if (!imp || json_object_set_new(doc, "import", imp) < 0) {
		json_decref(doc);
		sb_error_code(e, -ENOMEM, "%s: out of memory", name);
		return NULL;
	}
	for (int g = 0; g < nl; g++) {
		int r = add_level(doc, b, g, b->grp ? b->lv[g].mode : mode,
				  b->grp ? b->lv[g].level : level, name, e);
		if (r < 0) {
			json_decref(doc);
			return NULL;
		}
	}
	return doc;
}

/* The records' mean send rate, (n - 1) / their span (1 with fewer than 2
 * or no span). */
static double mean_rate(const recs *b)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < b->n; i++) {
		lo = fmin(lo, b->r[i].t_sent_s);
		hi = fmax(hi, b->r[i].t_sent_s);
	}
	return b->n >= 2 && hi > lo ? (double)(b->n - 1) / (hi - lo) : 1.0;
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
static int csv_group(recs *b, const char *lvl, const char *mode, const char *name, size_t ln,
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
static int csv_gaps(recs *b, const char *cellv, const char *name, size_t ln, sb_error *e)
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
		if (recs_add_itl(b, g) < 0)
			return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
	}
	return 0;
}

/* One data line (its cells in c, by column) into a new record of b. */
static int csv_row(recs *b, char **c, const char *name, size_t ln, sb_error *e)
{
	sb_reqrec *q = recs_add(b);
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
	if (failed && recs_fail(b, "imported", c[C_ERROR]) < 0)
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
	recs b = { 0 };
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
		recs_free(&b);
		return NULL;
	}
	double rate = mean_rate(&b);
	if (b.grp)
		note(&b, "%d level%s as the file's level and mode columns give them", b.n_lv,
		     b.n_lv == 1 ? "" : "s");
	else
		note(&b, "open loop at the send times the file gives; the level (%.4g req/s) is "
			 "their mean rate", rate);
	json_t *doc = recs_document(&b, SB_MODE_RATE, rate, json_object(), SB_IMPORT_CSV, name, e);
	recs_free(&b);
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
static void closed_loop_sends(recs *b, size_t c)
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
static int vllm_request(recs *b, const vllm_lists *L, size_t i, double t, const char *name,
			sb_error *e)
{
	sb_reqrec *q = recs_add(b);
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
		    (!failed && (r = recs_add_itl(b, g * 1e3)) < 0))
			return r;
		sum += g;
	}
	q->t_sent_s = t;
	if (failed) {
		if ((r = recs_fail(b, "imported", em)) < 0)
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
static void vllm_notes(recs *b, const vllm_lists *L, const vllm_send *s)
{
	if (!L->errs)
		note(b, "the file has no \"errors\": every request taken as successful");
	if (!L->lat)
		note(b, "no \"latencies\" (an older vllm): each E2E is its TTFT plus its ITL gaps");
	if (L->st)
		note(b, "send times from \"start_times\" (the client's perf_counter when each "
			"request was sent, after max_concurrency let it go)");
	else if (s->mode == SB_MODE_RATE)
		note(b, "the file has no \"start_times\": send times DRAWN as %s arrivals at its "
			"request_rate %g req/s (burstiness %g), seed 0 — not the measured ones",
		     s->burst == 1.0 ? "Poisson" : "gamma", s->rate, s->burst);
	else if (s->conc > 0)
		note(b, "the file has no \"start_times\": send times DERIVED for a closed loop "
			"at max_concurrency %ld (vllm's semaphore lets requests go in the file's "
			"order as earlier ones finish; each sent when the first of %ld clients is "
			"free), not measured", s->conc, s->conc);
	else
		note(b, "the file has no \"start_times\": request_rate inf and no "
			"max_concurrency, so every request was sent at once (t_sent_s 0)");
	if (s->mode == SB_MODE_RATE && s->conc > 0)
		note(b, "max_concurrency %ld also capped requests in flight; the level is open "
			"loop at the recorded send times, which include the cap's delays", s->conc);
	if (L->itls)
		note(b, "itl_ms are vllm's gaps between streamed chunks (a chunk may carry "
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
	recs b = { 0 };
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
		recs_free(&b);
		return NULL;
	}
	if (!L.st && s.mode == SB_MODE_CONCURRENCY && s.conc > 0)
		closed_loop_sends(&b, (size_t)s.conc);
	else if (!L.st && s.mode == SB_MODE_CONCURRENCY)
		for (size_t i = 0; i < b.n; i++)
			b.r[i].t_sent_s = 0;
	vllm_notes(&b, &L, &s);
	json_t *doc = recs_document(&b, s.mode, s.level, vllm_target(j), SB_IMPORT_VLLM, name, e);
	recs_free(&b);
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

static json_t *lss_target(const char *dir, recs *b)
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
		note(b, "target.model from meta.json beside the file");
	}
	const json_t *ek = json_object_get(m, "engine_kwargs");
	const json_t *seqs = json_object_get(ek, "max_num_seqs");
	if (json_is_integer(seqs))
		json_object_set_new(t, "max_num_seqs", json_integer(json_integer_value(seqs)));
	const char *ver = json_string_value(json_object_get(m, "vllm_version"));
	if (ver)
		json_object_set_new(t, "vllm_version", json_string(ver));
	json_decref(m);
	return t;
}

/* The file's lines as JSON objects (blank lines skipped), each with its line
 * number in "_line", into *rows (*n). Returns 0 or a negative errno with a
 * message; *rows holds what was read either way (release with lss_free). */
static int lss_rows(char *text, json_t ***rows, size_t *n, const char *name, sb_error *e)
{
	size_t ln = 0, cap = 0;
	char *save = text;
	for (char *line = text; line; line = save) {
		char *nl = strchr(line, '\n');
		save = nl ? nl + 1 : NULL;
		if (nl)
			*nl = 0;
		ln++;
		if (strspn(line, " \t\r") == strlen(line))
			continue;
		json_error_t je;
		json_t *o = json_loads(line, 0, &je);
		if (!json_is_object(o)) {
			json_decref(o);
			return sb_error_set(e, "%s:%zu: %s", name, ln,
					    o ? "expected a JSON object (one request per line)"
					      : je.text);
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			json_t **p = realloc(*rows, cap * sizeof(*p));
			if (!p) {
				json_decref(o);
				return sb_error_code(e, -ENOMEM, "%s: out of memory", name);
			}
			*rows = p;
		}
		json_object_set_new(o, "_line", json_integer((json_int_t)ln));
		(*rows)[(*n)++] = o;
	}
	return 0;
}

static void lss_free(json_t **rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(rows[i]);
	free(rows);
}

static size_t lss_line(const json_t *o)
{
	return (size_t)json_integer_value(json_object_get(o, "_line"));
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
		if ((r = lss_num(rows[i], "arrival_time", &arr, name, lss_line(rows[i]), e)) < 0 ||
		    (r = lss_num(rows[i], "first_token_ts", &fst, name, lss_line(rows[i]), e)) < 0)
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
static int lss_request(recs *b, const json_t *o, const char *anchor, const char *name,
		       sb_error *e)
{
	size_t l = lss_line(o);
	sb_reqrec *q = recs_add(b);
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
		return recs_fail(b, "imported", "no first_token_ts/last_token_ts");
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
	recs b = { 0 };
	json_t **rows = NULL;
	size_t n_rows = 0;
	const char *anchor = NULL;
	int other_clock = 0, r = lss_rows(text, &rows, &n_rows, name, e);
	if (r == 0)
		r = lss_anchor(rows, n_rows, &anchor, &other_clock, name, e);
	for (size_t i = 0; r == 0 && i < n_rows; i++)
		r = lss_request(&b, rows[i], anchor, name, e);
	if (r == 0 && n_rows == 0)
		r = sb_error_set(e, "%s: no requests in the file", name);
	lss_free(rows, n_rows);
	if (r < 0) {
		recs_free(&b);
		return NULL;
	}
	double rate = mean_rate(&b);
	note(&b, "open loop at the send times the file gives (%s); the level (%.4g req/s) is "
		 "their mean rate", anchor, rate);
	if (other_clock)
		note(&b, "arrival_time is on another clock than first/last_token_ts (epoch vs "
			 "monotonic), so requests are timed from queued_ts, as LLMServingSim's "
			 "validate.py does: TTFT and E2E leave out the time before vllm queued "
			 "the request");
	note(&b, "no inter-token gaps in the file (itl_ms empty); TPOT is (E2E - TTFT) / "
		 "(output - 1) as LLMServingSim defines it");
	note(&b, "output_tokens are the requested output_toks (the bench runs with "
		 "ignore_eos), not counted");
	json_t *target = lss_target(dir, &b);
	json_t *doc = recs_document(&b, SB_MODE_RATE, rate, target, SB_IMPORT_LLMSERVINGSIM, name, e);
	recs_free(&b);
	return doc;
}

/* ---- detection --------------------------------------------------------- */

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
	if (buf[s] == '{') {
		json_error_t je;
		json_t *j = json_loadb(buf + s, len - s, 0, &je);
		if (!j) {
			/* one object per line? */
			const char *nl = memchr(buf + s, '\n', len - s);
			json_t *first = json_loadb(buf + s, nl ? (size_t)(nl - (buf + s)) : len - s, 0,
						   &je);
			if (json_is_object(first) && json_object_get(first, "first_token_ts")) {
				f = SB_IMPORT_LLMSERVINGSIM;
				doc = import_lss(buf, name, dir, e);
			} else if (json_is_object(first) && json_object_get(first, "ttfts")) {
				f = SB_IMPORT_VLLM;
				sb_error_set(e, "%s: several vllm bench serve results in one file "
					        "(--append-result): give each run as a file of its "
					        "own", name);
			} else {
				doc = sb_json_load_string(buf, name, e);
				json_decref(doc);
				doc = NULL;
			}
			json_decref(first);
		} else if (json_object_get(j, "schema")) {
			doc = json_incref(j);
		} else if (json_object_get(j, "ttfts") || json_object_get(j, "input_lens")) {
			f = SB_IMPORT_VLLM;
			doc = import_vllm(j, name, e);
		} else if (json_object_get(j, "first_token_ts")) {
			f = SB_IMPORT_LLMSERVINGSIM;
			doc = import_lss(buf, name, dir, e);
		} else {
			sb_error_set(e, "%s: a JSON object of unknown shape: not a servebench results "
				        "file (no \"schema\"), not a vllm bench serve result (no "
				        "\"ttfts\"), not LLMServingSim requests (no \"first_token_ts\")",
				     name);
		}
		json_decref(j);
	} else if (buf[s] == '[') {
		sb_error_set(e, "%s: a JSON array: not a format servebench reads (results files are "
			        "objects)", name);
	} else if (!strncmp(buf + s, "t_sent_s,", 9)) {
		f = SB_IMPORT_CSV;
		doc = import_csv(buf + s, name, e);
	} else {
		sb_error_set(e, "%s: unknown format: expected a servebench results JSON, a vllm bench "
			        "serve JSON (--save-detailed), LLMServingSim requests.jsonl, or a CSV "
			        "with the header \"" CSV_HEADER "\"", name);
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
