/* trace.c — request traces (Mooncake JSONL, Azure LLM inference CSV,
 * BurstGPT CSV) read into send times and lengths; see trace.h. */
#include "trace.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "idset.h"

#define AZURE_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"
#define BURST_HEADER "Timestamp,Model,Request tokens,Response tokens"
#define MAX_LEN 100000000L /* tokens: beyond this a length is refused */

void sb_trace_opts_init(sb_trace_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->speedup = 1.0;
}

int sb_trace_window_parse(const char *s, sb_trace_opts *o, sb_error *e)
{
	char *end = NULL;
	double a = strtod(s, &end);
	if (end == s || *end != ',')
		return sb_error_set(e, "--trace-window: \"%s\" is not FROM,TO (seconds)", s);
	const char *p = end + 1;
	double b = strtod(p, &end);
	if (end == p || *end || !isfinite(a) || !isfinite(b) || a < 0 || b <= a)
		return sb_error_set(e, "--trace-window: \"%s\" is not FROM,TO with 0 <= FROM < TO",
				    s);
	o->from_s = a;
	o->to_s = b;
	return 0;
}

/* ---- the rows ---------------------------------------------------------- */

typedef struct rows {
	sb_trace_req *r;
	size_t n, cap;
	size_t clamped;
	sb_idset ids;      /* Mooncake's hash ids seen so far */
	/* every row's hash ids, in file order (row.first_block) */
	long *pool;
	size_t n_pool, cap_pool;
} rows;

/* Appends id to b's pool; -1 out of memory. */
static int pool_add(rows *b, long id)
{
	if (b->n_pool == b->cap_pool) {
		size_t nc = b->cap_pool ? 2 * b->cap_pool : 4096;
		long *p = realloc(b->pool, nc * sizeof(*p));
		if (!p)
			return -1;
		b->pool = p;
		b->cap_pool = nc;
	}
	b->pool[b->n_pool++] = id;
	return 0;
}

static sb_trace_req *row_add(rows *b)
{
	if (b->n == b->cap) {
		size_t nc = b->cap ? 2 * b->cap : 1024;
		sb_trace_req *nr = realloc(b->r, nc * sizeof(*nr));
		if (!nr)
			return NULL;
		b->r = nr;
		b->cap = nc;
	}
	memset(&b->r[b->n], 0, sizeof(b->r[0]));
	return &b->r[b->n++];
}

/* A length field: v >= 0 (0 raised to 1 and counted). */
static int set_len(rows *b, long *dst, double v, const char *name, size_t line, const char *field,
		   sb_error *e)
{
	if (!isfinite(v) || v < 0 || v > MAX_LEN || v != floor(v))
		return sb_error_set(e, "%s:%zu: %s: expected a whole number of tokens >= 0", name,
				    line, field);
	*dst = v < 1 ? 1 : (long)v;
	b->clamped += v < 1;
	return 0;
}

/* ---- Mooncake JSONL ---------------------------------------------------- */

static int mooncake_blocks(rows *b, sb_trace_req *q, const json_t *ids, const char *name,
			   size_t line, sb_error *e)
{
	if (!ids || json_is_null(ids))
		return 0;
	if (!json_is_array(ids))
		return sb_error_set(e, "%s:%zu: hash_ids: expected an array of block ids", name,
				    line);
	int leading = 1;
	q->first_block = b->n_pool;
	for (size_t i = 0; i < json_array_size(ids); i++) {
		const json_t *v = json_array_get(ids, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return sb_error_set(e, "%s:%zu: hash_ids[%zu]: expected a whole number >= 0",
					    name, line, i);
		int seen = sb_idset_add(&b->ids, (long)json_integer_value(v));
		if (seen < 0 || pool_add(b, (long)json_integer_value(v)) < 0)
			return sb_error_code(e, -ENOMEM, "out of memory");
		leading = leading && seen;
		q->shared_blocks += leading;
	}
	q->n_blocks = (long)json_array_size(ids);
	return 0;
}

static int mooncake_row(rows *b, const char *s, size_t len, const char *name, size_t line,
			sb_error *e)
{
	json_error_t je;
	json_t *o = json_loadb(s, len, 0, &je);
	if (!json_is_object(o)) {
		json_decref(o);
		return sb_error_set(e, "%s:%zu: not a JSON object (%s)", name, line,
				    o ? "another JSON value" : je.text);
	}
	sb_trace_req *q = row_add(b);
	int rc = q ? 0 : sb_error_code(e, -ENOMEM, "out of memory");
	const char *keys[3] = { "timestamp", "input_length", "output_length" };
	double v[3];
	for (int k = 0; rc == 0 && k < 3; k++) {
		const json_t *x = json_object_get(o, keys[k]);
		if (!json_is_number(x))
			rc = sb_error_set(e, "%s:%zu: %s: %s", name, line, keys[k],
					  x ? "expected a number" : "missing");
		else
			v[k] = json_number_value(x);
	}
	if (rc == 0 && !(v[0] >= 0 && isfinite(v[0])))
		rc = sb_error_set(e, "%s:%zu: timestamp: expected milliseconds >= 0", name, line);
	if (rc == 0) {
		q->t_s = v[0] / 1000.0;
		rc = set_len(b, &q->in_len, v[1], name, line, "input_length", e);
	}
	if (rc == 0)
		rc = set_len(b, &q->out_len, v[2], name, line, "output_length", e);
	if (rc == 0)
		rc = mooncake_blocks(b, q, json_object_get(o, "hash_ids"), name, line, e);
	json_decref(o);
	return rc;
}

/* ---- CSV --------------------------------------------------------------- */

/* Splits line [s, s+len) at commas into at most max fields (copied into
 * buf, NUL-terminated, pointed to by f[]); returns the count, or -1 for a
 * quoted field (not expected in these traces). */
static int split(const char *s, size_t len, char *buf, char **f, int max)
{
	int n = 0;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (len && buf[len - 1] == '\r')
		buf[len - 1] = 0;
	if (strchr(buf, '"'))
		return -1;
	char *p = buf;
	while (n < max) {
		f[n++] = p;
		char *c = strchr(p, ',');
		if (!c)
			break;
		*c = 0;
		p = c + 1;
	}
	return n;
}

static int num_field(const char *s, double *v)
{
	char *end = NULL;
	while (isspace((unsigned char)*s))
		s++;
	*v = strtod(s, &end);
	while (end && isspace((unsigned char)*end))
		end++;
	return end != s && end && !*end && isfinite(*v);
}

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
static long days_from_civil(long y, long m, long d)
{
	y -= m <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	long yoe = y - era * 400;
	long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DD HH:MM:SS[.frac]" (UTC) into seconds since the epoch. */
static int azure_time(const char *s, double *t)
{
	int y, mo, d, h, mi, used = 0;
	double sec;
	if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6 ||
	    s[used] || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 ||
	    sec >= 61)
		return 0;
	*t = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
	return 1;
}

static int csv_row(rows *b, int burst, const char *s, size_t len, const char *name, size_t line,
		   sb_error *e)
{
	char *buf = malloc(len + 1), *f[8];
	if (!buf)
		return sb_error_code(e, -ENOMEM, "out of memory");
	int nf = split(s, len, buf, f, 8), rc = 0;
	double t = 0, in = 0, out = 0;
	int want = burst ? 6 : 3;
	if (nf < 0)
		rc = sb_error_set(e, "%s:%zu: a quoted field (not expected in this trace)", name,
				  line);
	else if (nf < want)
		rc = sb_error_set(e, "%s:%zu: %d fields, expected %d", name, line, nf, want);
	else if (burst ? !num_field(f[0], &t) || t < 0 : !azure_time(f[0], &t))
		rc = sb_error_set(e, "%s:%zu: %s: \"%s\" is not %s", name, line,
				  burst ? "Timestamp" : "TIMESTAMP", f[0],
				  burst ? "seconds >= 0" : "a time YYYY-MM-DD HH:MM:SS[.fraction]");
	else if (!num_field(f[burst ? 2 : 1], &in) || !num_field(f[burst ? 3 : 2], &out))
		rc = sb_error_set(e, "%s:%zu: %s: not a number", name, line,
				  burst ? "Request tokens or Response tokens"
					: "ContextTokens or GeneratedTokens");
	if (rc == 0 && burst && out == 0) {
		free(buf);
		return 1; /* a failed request */
	}
	sb_trace_req *q = rc == 0 ? row_add(b) : NULL;
	if (rc == 0 && !q)
		rc = sb_error_code(e, -ENOMEM, "out of memory");
	if (rc == 0) {
		q->t_s = t;
		rc = set_len(b, &q->in_len, in, name, line, burst ? "Request tokens" : "ContextTokens", e);
	}
	if (rc == 0)
		rc = set_len(b, &q->out_len, out, name, line,
			     burst ? "Response tokens" : "GeneratedTokens", e);
	free(buf);
	return rc;
}

/* ---- the whole file ---------------------------------------------------- */

enum { FMT_MOONCAKE, FMT_AZURE, FMT_BURST };
static const char *const fmt_names[] = { "mooncake", "azure", "burstgpt" };

/* The format from the text's first line. Returns 0 or -EINVAL. */
static int detect(const char *text, size_t len, const char *name, int *fmt, sb_error *e)
{
	size_t i = 0;
	while (i < len && isspace((unsigned char)text[i]))
		i++;
	if (i < len && text[i] == '{')
		*fmt = FMT_MOONCAKE;
	else if (len - i >= strlen(AZURE_HEADER) && !strncmp(text + i, AZURE_HEADER, strlen(AZURE_HEADER)))
		*fmt = FMT_AZURE;
	else if (len - i >= strlen(BURST_HEADER) && !strncmp(text + i, BURST_HEADER, strlen(BURST_HEADER)))
		*fmt = FMT_BURST;
	else
		return sb_error_set(e, "%s: not a trace servebench reads: expected Mooncake JSONL "
				       "({\"timestamp\", \"input_length\", \"output_length\", ...} a "
				       "line), or a CSV whose header starts \"" AZURE_HEADER
				       "\" (Azure) or \"" BURST_HEADER "\" (BurstGPT)",
				    name);
	return 0;
}

/* Every line of the text into b (the CSV's header skipped). */
static int read_rows(rows *b, const char *text, size_t len, const char *name, int fmt,
		     size_t *failed, sb_error *e)
{
	size_t line = 0, pos = 0;
	while (pos < len) {
		const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;
		pos += l + 1;
		line++;
		size_t k = 0;
		while (k < l && isspace((unsigned char)s[k]))
			k++;
		if (k == l || (fmt != FMT_MOONCAKE && line == 1))
			continue;
		int rc = fmt == FMT_MOONCAKE ? mooncake_row(b, s, l, name, line, e)
					     : csv_row(b, fmt == FMT_BURST, s, l, name, line, e);
		if (rc < 0)
			return rc;
		*failed += rc == 1;
	}
	return 0;
}

static int cmp_time(const void *a, const void *b)
{
	double x = ((const sb_trace_req *)a)->t_s, y = ((const sb_trace_req *)b)->t_s;
	return x < y ? -1 : x > y;
}

/* Sorts b's rows, keeps the window and the limit, re-bases and speeds up
 * the times into t. */
static int finish(rows *b, const sb_trace_opts *o, const char *name, sb_trace *t, sb_error *e)
{
	/* stable order for equal times: the file's */
	for (size_t i = 1; i < b->n; i++)
		if (b->r[i].t_s < b->r[i - 1].t_s) {
			qsort(b->r, b->n, sizeof(b->r[0]), cmp_time);
			break;
		}
	double t0 = b->n ? b->r[0].t_s : 0;
	size_t k = 0;
	for (size_t i = 0; i < b->n; i++) {
		double rel = b->r[i].t_s - t0;
		if (rel < o->from_s || (o->to_s > 0 && rel >= o->to_s) ||
		    (o->limit > 0 && (long)k >= o->limit))
			continue;
		b->r[k] = b->r[i];
		b->r[k++].t_s = rel;
	}
	t->skipped += b->n - k;
	if (k == 0)
		return sb_error_set(e, "%s: no request%s", name,
				    b->n ? " in the window" : "");
	double w0 = b->r[0].t_s, sp = o->speedup > 0 ? o->speedup : 1;
	for (size_t i = 0; i < k; i++)
		b->r[i].t_s = (b->r[i].t_s - w0) / sp;
	t->r = b->r;
	t->n = k;
	t->clamped = b->clamped;
	t->span_s = b->r[k - 1].t_s;
	t->blocks = b->pool;
	b->r = NULL;
	b->pool = NULL;
	return 0;
}

int sb_trace_parse(const char *text, size_t len, const char *name, const sb_trace_opts *o,
		   sb_trace *t, sb_error *e)
{
	memset(t, 0, sizeof(*t));
	int fmt = FMT_MOONCAKE;
	if (detect(text, len, name, &fmt, e) < 0)
		return -EINVAL;
	t->format = fmt_names[fmt];
	rows b = { 0 };
	int rc = read_rows(&b, text, len, name, fmt, &t->skipped, e);
	if (rc == 0)
		rc = finish(&b, o, name, t, e);
	free(b.r);
	sb_idset_fini(&b.ids);
	free(b.pool);
	return rc;
}

int sb_trace_load(const char *path, const sb_trace_opts *o, sb_trace *t, sb_error *e)
{
	memset(t, 0, sizeof(*t));
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f)
		return sb_error_code(e, errno == ENOENT ? -ENOENT : -EIO, "%s: %s", path,
				     strerror(errno));
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	int err = ferror(f);
	if (f != stdin)
		fclose(f);
	if (!buf)
		return sb_error_code(e, -ENOMEM, "%s: out of memory", path);
	int rc = err ? sb_error_code(e, -EIO, "%s: read error", path)
		     : sb_trace_parse(buf, n, path, o, t, e);
	free(buf);
	return rc;
}

void sb_trace_fini(sb_trace *t)
{
	if (!t)
		return;
	free(t->r);
	free(t->blocks);
	memset(t, 0, sizeof(*t));
}
