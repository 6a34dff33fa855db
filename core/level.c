/* level.c — per-request records in, the level summary out. */
#include "level.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "jsonfile.h"

const char *sb_mode_name(sb_mode m)
{
	return m == SB_MODE_RATE ? "rate" : "concurrency";
}

int sb_levelacc_init(sb_levelacc *a, const sb_slo *slo)
{
	memset(a, 0, sizeof(*a));
	sb_hist *h[] = { &a->ttft, &a->tpot, &a->itl, &a->e2e, &a->wait, &a->lag };
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
		if (sb_hist_init(h[i]) < 0) {
			sb_levelacc_fini(a);
			return -ENOMEM;
		}
	}
	if (slo)
		a->slo = *slo;
	return 0;
}

void sb_levelacc_fini(sb_levelacc *a)
{
	if (!a)
		return;
	sb_hist_fini(&a->ttft);
	sb_hist_fini(&a->tpot);
	sb_hist_fini(&a->itl);
	sb_hist_fini(&a->e2e);
	sb_hist_fini(&a->wait);
	sb_hist_fini(&a->lag);
}

double sb_reqrec_tpot_ms(const sb_reqrec *r)
{
	if (r->output_tokens < 2 || isnan(r->ttft_ms) || isnan(r->e2e_ms))
		return NAN;
	return (r->e2e_ms - r->ttft_ms) / (double)(r->output_tokens - 1);
}

int sb_slo_met(const sb_slo *slo, const sb_reqrec *r)
{
	if (r->err_class)
		return 0;
	if (!slo)
		return 1;
	if (slo->ttft_ms > 0 && !(r->ttft_ms <= slo->ttft_ms))
		return 0;
	if (slo->tpot_ms > 0) {
		double t = sb_reqrec_tpot_ms(r);
		if (!isnan(t) && !(t <= slo->tpot_ms))
			return 0;
	}
	return 1;
}

static void count_error(sb_levelacc *a, const char *cls)
{
	for (int i = 0; i < a->n_errors; i++) {
		if (!strcmp(a->errors[i].cls, cls)) {
			a->errors[i].count++;
			return;
		}
	}
	/* table full: the last entry becomes the catch-all "other" */
	int i = a->n_errors < SB_LEVEL_MAX_ERR_CLASSES ? a->n_errors++
						       : SB_LEVEL_MAX_ERR_CLASSES - 1;
	if (a->errors[i].count)
		cls = "other";
	snprintf(a->errors[i].cls, sizeof(a->errors[i].cls), "%s", cls);
	a->errors[i].count++;
}

void sb_levelacc_add(sb_levelacc *a, const sb_reqrec *r)
{
	if (r->t_done_s > a->t_end_s)
		a->t_end_s = r->t_done_s;
	/* Little's law counts every request that entered the system, failed or
	 * not, for as long as it was in it — the same population the in-flight
	 * integral sees. */
	if (isfinite(r->t_done_s) && isfinite(r->t_scheduled_s)) {
		a->n_all++;
		a->sojourn_s += r->t_done_s - r->t_scheduled_s;
	}
	if (r->err_class) {
		a->failed++;
		count_error(a, r->err_class);
		return;
	}
	a->ok++;
	sb_hist_add(&a->ttft, r->ttft_ms);
	sb_hist_add(&a->tpot, sb_reqrec_tpot_ms(r));
	sb_hist_add(&a->e2e, r->e2e_ms);
	sb_hist_add(&a->wait, r->wait_ms);
	sb_hist_add(&a->lag, (r->t_sent_s - r->t_scheduled_s) * 1e3);
	for (size_t i = 0; i < r->n_itl; i++)
		sb_hist_add(&a->itl, r->itl_ms[i]);
	if (r->output_tokens > 0)
		a->out_tokens += (double)r->output_tokens;
	if (sb_slo_met(&a->slo, r))
		a->good++;
}

void sb_levelacc_inflight(sb_levelacc *a, double t_s, int delta)
{
	if (t_s > a->t_last_s) {
		a->area += (double)a->inflight * (t_s - a->t_last_s);
		a->t_last_s = t_s;
	}
	a->inflight += delta;
}

void sb_levelacc_finish(sb_levelacc *a, double level, sb_mode mode,
			double duration_s, sb_level *out)
{
	memset(out, 0, sizeof(*out));
	out->level = level;
	out->mode = mode;
	out->requests_ok = a->ok;
	out->requests_failed = a->failed;
	sb_hist_summary(&a->ttft, &out->ttft_ms);
	sb_hist_summary(&a->tpot, &out->tpot_ms);
	sb_hist_summary(&a->itl, &out->itl_ms);
	sb_hist_summary(&a->e2e, &out->e2e_ms);
	sb_hist_summary(&a->wait, &out->wait_ms);
	double d = duration_s > 0 ? duration_s : a->t_end_s;
	out->duration_s = d;
	if (d > 0) {
		out->output_tok_s = a->out_tokens / d;
		out->req_s = (double)a->ok / d;
		out->goodput_req_s = (double)a->good / d;
		out->lambda_req_s = (double)a->n_all / d;
		/* close the in-flight integral at the end of the window */
		double area = a->area;
		if (d > a->t_last_s)
			area += (double)a->inflight * (d - a->t_last_s);
		out->l_observed = area / d;
	} else {
		out->output_tok_s = out->req_s = out->goodput_req_s = NAN;
		out->lambda_req_s = out->l_observed = NAN;
	}
	out->w_s = a->n_all ? a->sojourn_s / (double)a->n_all : NAN;
	out->l_law = out->lambda_req_s * out->w_s;
	out->schedule_lag_p99_ms = mode == SB_MODE_RATE && a->lag.n
					   ? sb_hist_quantile(&a->lag, 0.99)
					   : NAN;
	memcpy(out->errors, a->errors, sizeof(out->errors));
	out->n_errors = a->n_errors;
}

static json_t *summary_json(const sb_summary *s)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:I}", "mean", sb_json_number(s->mean),
			 "p50", sb_json_number(s->p50), "p90", sb_json_number(s->p90), "p99", sb_json_number(s->p99),
			 "min", sb_json_number(s->min), "max", sb_json_number(s->max), "n", (json_int_t)s->n);
}

json_t *sb_level_to_json(const sb_level *lv)
{
	json_t *errs = json_object();
	for (int i = 0; i < lv->n_errors; i++)
		json_object_set_new(errs, lv->errors[i].cls, json_integer(lv->errors[i].count));
	json_t *j = json_pack(
		"{s:o,s:s,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o,s:o},s:o}",
		"level", sb_json_number(lv->level), "mode", sb_mode_name(lv->mode),
		"requests_ok", (json_int_t)lv->requests_ok,
		"requests_failed", (json_int_t)lv->requests_failed,
		"ttft_ms", summary_json(&lv->ttft_ms), "tpot_ms", summary_json(&lv->tpot_ms),
		"itl_ms", summary_json(&lv->itl_ms), "e2e_ms", summary_json(&lv->e2e_ms),
		"wait_ms", summary_json(&lv->wait_ms), "duration_s", sb_json_number(lv->duration_s),
		"output_tok_s", sb_json_number(lv->output_tok_s), "req_s", sb_json_number(lv->req_s),
		"goodput_req_s", sb_json_number(lv->goodput_req_s), "littles_law",
		"lambda_req_s", sb_json_number(lv->lambda_req_s), "w_s", sb_json_number(lv->w_s),
		"l_law", sb_json_number(lv->l_law), "l_observed", sb_json_number(lv->l_observed),
		"errors", errs);
	if (j && isfinite(lv->schedule_lag_p99_ms))
		json_object_set_new(j, "schedule_lag_p99_ms", sb_json_number(lv->schedule_lag_p99_ms));
	return j;
}

json_t *sb_reqrec_to_json(const sb_reqrec *r, json_t *server)
{
	json_t *itl = json_array();
	for (size_t i = 0; i < r->n_itl; i++)
		json_array_append_new(itl, sb_json_number(r->itl_ms[i]));
	json_t *err = r->err_class
			      ? json_pack("{s:s,s:s}", "class", r->err_class, "message",
					  r->err_msg ? r->err_msg : "")
			      : json_null();
	json_t *j = json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
			      "id", (json_int_t)r->id, "t_scheduled_s", sb_json_number(r->t_scheduled_s),
			      "t_sent_s", sb_json_number(r->t_sent_s), "t_done_s", sb_json_number(r->t_done_s),
			      "ttft_ms", sb_json_number(r->ttft_ms), "e2e_ms", sb_json_number(r->e2e_ms),
			      "wait_ms", sb_json_number(r->wait_ms), "itl_ms", itl,
			      "prompt_tokens",
			      r->prompt_tokens >= 0 ? json_integer(r->prompt_tokens) : json_null(),
			      "output_tokens",
			      r->output_tokens >= 0 ? json_integer(r->output_tokens) : json_null(),
			      "server", server ? server : json_null(), "error", err);
	if (j && r->warmup)
		json_object_set_new(j, "warmup", json_true());
	if (j && r->blocks && r->n_blocks > 0) {
		json_t *ids = json_array();
		for (long i = 0; ids && i < r->n_blocks; i++)
			json_array_append_new(ids, json_integer(r->blocks[i]));
		json_object_set_new(j, "hash_ids", ids);
	}
	return j;
}

void sb_reqrec_set_sharing(json_t *j, long group, long prefix_tokens, long turn)
{
	if (!j || group < 0)
		return;
	json_object_set_new(j, "prefix_group", json_integer(group));
	if (prefix_tokens >= 0)
		json_object_set_new(j, "prefix_tokens", json_integer(prefix_tokens));
	if (turn >= 1)
		json_object_set_new(j, "turn", json_integer(turn));
}

/* Reads a summary object; absent fields stay NaN (published tables give only
 * some percentiles). */
static int summary_from_json(const json_t *j, const char *key, sb_summary *s,
			     const char *where, sb_error *e)
{
	s->mean = s->p50 = s->p90 = s->p99 = s->min = s->max = NAN;
	s->n = 0;
	const json_t *o = json_object_get(j, key);
	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return sb_error_set(e, "%s.%s: expected an object", where, key);
	char w[160];
	snprintf(w, sizeof(w), "%s.%s", where, key);
	struct {
		const char *k;
		double *v;
	} f[] = { { "mean", &s->mean }, { "p50", &s->p50 }, { "p90", &s->p90 },
		  { "p99", &s->p99 },   { "min", &s->min }, { "max", &s->max } };
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (sb_json_get_double(o, f[i].k, -1e300, 1e300, f[i].v, w, e) < 0)
			return -EINVAL;
	}
	long n = 0;
	if (sb_json_get_long(o, "n", 0, 1L << 62, &n, w, e) < 0)
		return -EINVAL;
	s->n = (uint64_t)n;
	return 0;
}

int sb_level_from_json(const json_t *j, sb_level *out, sb_error *e)
{
	memset(out, 0, sizeof(*out));
	if (!json_is_object(j))
		return sb_error_set(e, "level: expected an object");
	const char *where = "level";
	if (sb_json_get_double(j, "level", 0, 1e12, &out->level, where, e) != 1)
		return sb_error_set(e, "level: missing or invalid \"level\" (the concurrency or rate)");
	const char *mode = "concurrency";
	if (sb_json_get_string(j, "mode", &mode, where, e) < 0)
		return -EINVAL;
	if (!strcmp(mode, "rate"))
		out->mode = SB_MODE_RATE;
	else if (!strcmp(mode, "concurrency"))
		out->mode = SB_MODE_CONCURRENCY;
	else
		return sb_error_set(e, "level.mode: '%s' is neither \"concurrency\" nor \"rate\"", mode);
	if (sb_json_get_long(j, "requests_ok", 0, 1L << 62, &out->requests_ok, where, e) < 0 ||
	    sb_json_get_long(j, "requests_failed", 0, 1L << 62, &out->requests_failed, where, e) < 0)
		return -EINVAL;
	if (summary_from_json(j, "ttft_ms", &out->ttft_ms, where, e) < 0 ||
	    summary_from_json(j, "tpot_ms", &out->tpot_ms, where, e) < 0 ||
	    summary_from_json(j, "itl_ms", &out->itl_ms, where, e) < 0 ||
	    summary_from_json(j, "e2e_ms", &out->e2e_ms, where, e) < 0 ||
	    summary_from_json(j, "wait_ms", &out->wait_ms, where, e) < 0)
		return -EINVAL;
	out->duration_s = out->output_tok_s = out->req_s = out->goodput_req_s = NAN;
	out->lambda_req_s = out->w_s = out->l_law = out->l_observed = NAN;
	out->schedule_lag_p99_ms = NAN;
	if (sb_json_get_double(j, "duration_s", 0, 1e12, &out->duration_s, where, e) < 0 ||
	    sb_json_get_double(j, "output_tok_s", 0, 1e12, &out->output_tok_s, where, e) < 0 ||
	    sb_json_get_double(j, "req_s", 0, 1e12, &out->req_s, where, e) < 0 ||
	    sb_json_get_double(j, "goodput_req_s", 0, 1e12, &out->goodput_req_s, where, e) < 0 ||
	    sb_json_get_double(j, "schedule_lag_p99_ms", -1e12, 1e12, &out->schedule_lag_p99_ms, where, e) < 0)
		return -EINVAL;
	const json_t *ll = json_object_get(j, "littles_law");
	if (json_is_object(ll)) {
		const char *w = "level.littles_law";
		if (sb_json_get_double(ll, "lambda_req_s", 0, 1e12, &out->lambda_req_s, w, e) < 0 ||
		    sb_json_get_double(ll, "w_s", 0, 1e12, &out->w_s, w, e) < 0 ||
		    sb_json_get_double(ll, "l_law", 0, 1e12, &out->l_law, w, e) < 0 ||
		    sb_json_get_double(ll, "l_observed", 0, 1e12, &out->l_observed, w, e) < 0)
			return -EINVAL;
	}
	const json_t *errs = json_object_get(j, "errors");
	if (json_is_object(errs)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)errs, k, v)
		{
			if (out->n_errors >= SB_LEVEL_MAX_ERR_CLASSES || !json_is_integer(v))
				continue;
			snprintf(out->errors[out->n_errors].cls, sizeof(out->errors[0].cls), "%s", k);
			out->errors[out->n_errors++].count = (long)json_integer_value(v);
		}
	}
	return 0;
}

/* ---- a level from its records ----------------------------------------- */

typedef struct inflight_ev {
	double t;
	int d;
} inflight_ev;

static int cmp_inflight_ev(const void *a, const void *b)
{
	const inflight_ev *x = a, *y = b;
	if (x->t != y->t)
		return (x->t > y->t) - (x->t < y->t);
	return x->d - y->d; /* completions before arrivals at equal times */
}

int sb_level_of_records(const sb_reqrec *r, size_t n, double level, sb_mode mode,
			sb_level *out)
{
	sb_levelacc a;
	if (sb_levelacc_init(&a, NULL) < 0)
		return -ENOMEM;
	double t0 = INFINITY, t1 = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		if (r[i].t_sent_s < t0)
			t0 = r[i].t_sent_s;
		if (r[i].t_scheduled_s < t0)
			t0 = r[i].t_scheduled_s;
		if (r[i].t_done_s > t1)
			t1 = r[i].t_done_s;
	}
	inflight_ev *evs = malloc((2 * n + 1) * sizeof(*evs));
	if (!evs) {
		sb_levelacc_fini(&a);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		sb_reqrec q = r[i];
		q.t_sent_s -= t0;
		q.t_scheduled_s -= t0;
		q.t_done_s -= t0;
		sb_levelacc_add(&a, &q);
		evs[2 * i] = (inflight_ev){ q.t_scheduled_s, +1 };
		evs[2 * i + 1] = (inflight_ev){ q.t_done_s, -1 };
	}
	qsort(evs, 2 * n, sizeof(*evs), cmp_inflight_ev);
	for (size_t i = 0; i < 2 * n; i++)
		sb_levelacc_inflight(&a, evs[i].t, evs[i].d);
	free(evs);
	double d = n ? t1 - t0 : 0;
	sb_levelacc_finish(&a, level, mode, d > 0 ? d : 0, out);
	sb_levelacc_fini(&a);
	return 0;
}
