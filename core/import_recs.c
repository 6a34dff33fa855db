/* import_recs.c — the records an importer builds, the notes on its
 * assumptions, the results document they make, and a JSON-lines file's
 * rows: what every reader in core/import*.c shares (core/import_internal.h). */
#include "import_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

void imp_recs_free(imp_recs *b)
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
sb_reqrec *imp_recs_add(imp_recs *b)
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


int imp_add_itl(imp_recs *b, double v)
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
int imp_fail(imp_recs *b, const char *cls, const char *msg)
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

void imp_note(imp_recs *b, const char *fmt, ...)
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
static sb_reqrec *level_records(imp_recs *b, int g, size_t *n)
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
static int add_level(json_t *doc, imp_recs *b, int g, sb_mode mode, double level,
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
json_t *imp_document(imp_recs *b, sb_mode mode, double level, json_t *target,
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
double imp_mean_rate(const imp_recs *b)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < b->n; i++) {
		lo = fmin(lo, b->r[i].t_sent_s);
		hi = fmax(hi, b->r[i].t_sent_s);
	}
	return b->n >= 2 && hi > lo ? (double)(b->n - 1) / (hi - lo) : 1.0;
}

/* ---- JSON lines ---------------------------------------------------------- */

/* The file's lines as JSON objects (blank lines skipped), each with its line
 * number in "_line", into *rows (*n). Returns 0 or a negative errno with a
 * message; *rows holds what was read either way (release with imp_rows_free). */
int imp_jsonl_rows(char *text, json_t ***rows, size_t *n, const char *name, sb_error *e)
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

void imp_rows_free(json_t **rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(rows[i]);
	free(rows);
}

size_t imp_row_line(const json_t *o)
{
	return (size_t)json_integer_value(json_object_get(o, "_line"));
}
