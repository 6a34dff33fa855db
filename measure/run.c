/* run.c — see run.h: one measurement through a handle of its own
 * (bench.h). */
#include "run.h"

#include <errno.h>
#include <string.h>

#include "bench.h"

void sb_run_config_init(sb_run_config *c)
{
	memset(c, 0, sizeof(*c));
	sb_workload_init(&c->workload);
	c->api = SB_API_AUTO;
	c->cache_prompt = 1;
	c->ignore_eos = 1;
	c->timeout_s = 300;
	c->max_line = SB_RUN_MAX_LINE;
	c->server_view_s = 0.25;
}

long sb_run_failed_count(const json_t *results)
{
	long n = 0;
	size_t i;
	json_t *lv;
	json_array_foreach(json_object_get(results, "levels"), i, lv)
		n += (long)json_integer_value(json_object_get(lv, "requests_failed"));
	return n;
}

int sb_run_set_trace(sb_run_config *c, const sb_trace *t, const char *file,
		     const sb_trace_opts *o, sb_error *e)
{
	if (t->n == 0)
		return sb_error_set(e, "%s: the trace has no requests", file);
	/* as sbsim --trace calls it: arrivals over the span */
	double rate = t->span_s > 0 ? (double)(t->n - 1) / t->span_s : (double)t->n;
	sb_workload *w = &c->workload;
	if (sb_workload_set_levels(w, SB_MODE_RATE, &rate, 1, "the trace's rate", e) < 0)
		return -EINVAL;
	w->requests = (long)t->n;
	w->duration_s = 0;
	c->trace = t;
	c->trace_file = file;
	c->trace_opts = *o;
	return 0;
}

/* The results' "trace" (run.h). */
static json_t *trace_json(const sb_run_config *c)
{
	const sb_trace *t = c->trace;
	const sb_trace_opts *o = &c->trace_opts;
	json_t *win = json_null();
	if (o->from_s > 0 || o->to_s > 0)
		win = json_pack("[f,o]", o->from_s, o->to_s > 0 ? json_real(o->to_s) : json_null());
	json_t *j = json_pack("{s:s,s:s,s:I,s:f,s:o,s:I,s:I,s:f}", "file", c->trace_file,
			      "format", t->format, "requests", (json_int_t)t->n, "speedup",
			      o->speedup, "window", win, "left_out", (json_int_t)t->skipped,
			      "clamped", (json_int_t)t->clamped, "span_s", t->span_s);
	if (j && o->limit > 0)
		json_object_set_new(j, "limit", json_integer(o->limit));
	return j;
}

/* Says in doc that c's trace was sent: "trace", and no workload lengths
 * or arrivals (they describe no measured request). */
static void note_trace(json_t *doc, const sb_run_config *c)
{
	json_t *w = json_object_get(doc, "workload");
	json_object_del(w, "input_len");
	json_object_del(w, "output_len");
	json_object_del(w, "arrival");
	json_object_del(w, "arrival_cv");
	json_object_set_new(doc, "trace", trace_json(c));
}

int sb_run_execute(const sb_run_config *c, json_t **results_out, sb_error *e)
{
	*results_out = NULL;
	sb_bench_config bc;
	sb_bench_config_from_run(&bc, c);
	if (sb_bench_config_check(&bc, e) < 0 || sb_workload_validate(&c->workload, e) < 0)
		return -EINVAL;
	sb_bench *b = NULL;
	int ret = sb_bench_new(&bc, &b, e);
	if (ret < 0)
		return ret;
	sb_bench_opts o;
	sb_bench_opts_from_run(&o, c);
	ret = sb_bench_measure(b, &c->workload, &o, results_out, e);
	sb_bench_free(b);
	if (*results_out && c->trace)
		note_trace(*results_out, c);
	return ret;
}
