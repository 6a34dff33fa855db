/* results.c — results files shared by measured and simulated runs. */
#include "results.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "import.h"
#include "jsonfile.h"

json_t *sb_results_new(const char *source, json_t *target, const sb_workload *w)
{
	char created[32] = "";
	time_t now = time(NULL);
	struct tm tm;
	if (gmtime_r(&now, &tm))
		strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:[]}", "schema", SB_RESULTS_SCHEMA,
			 "source", source, "tool", "servebench " SB_VERSION, "created",
			 created, "target", target ? target : json_object(), "workload",
			 w ? sb_workload_to_json(w) : json_object(), "levels");
}

int sb_results_add_level(json_t *res, const sb_level *lv, json_t *requests)
{
	json_t *levels = json_object_get(res, "levels");
	json_t *l = sb_level_to_json(lv);
	if (!json_is_array(levels) || !l) {
		json_decref(l);
		json_decref(requests);
		return -EINVAL;
	}
	if (requests)
		json_object_set_new(l, "requests", requests);
	return json_array_append_new(levels, l) ? -ENOMEM : 0;
}

static double opt_num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A token count: -1 when absent, negative or implausibly large (> 1e15). */
static long opt_long(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	double d = json_is_number(v) ? json_number_value(v) : -1;
	return d >= 0 && d <= 1e15 ? (long)d : -1;
}

/* A record's "server" object (NULL: none) as numbers; NaN where absent. */
static void server_timing(const json_t *srv, sb_server_timing *t)
{
	t->prompt_n = opt_num(srv, "prompt_n");
	t->prompt_ms = opt_num(srv, "prompt_ms");
	t->predicted_n = opt_num(srv, "predicted_n");
	t->predicted_ms = opt_num(srv, "predicted_ms");
	t->cache_n = opt_num(srv, "cache_n");
}

/* An integer target field, else -1. */
static long target_long(const json_t *t, const char *key)
{
	const json_t *v = json_object_get(t, key);
	return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

/* target.replicas (a fleet run) into out->n_replicas, replica_slots.
 * 0, -EINVAL (not an array of objects) or -ENOMEM. */
static int target_replicas(const json_t *t, sb_target_info *out, const char *where,
			   sb_error *e)
{
	const json_t *reps = json_object_get(t, "replicas");
	if (!reps || json_is_null(reps))
		return 0;
	size_t n = json_array_size(reps);
	if (!json_is_array(reps) || n == 0)
		return sb_error_set(e, "%s: target.replicas: expected a non-empty array", where);
	if (!(out->replica_slots = malloc(n * sizeof(long))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(reps, i);
		if (!json_is_object(r))
			return sb_error_set(e, "%s: target.replicas[%zu]: expected an object", where,
					    i);
		out->replica_slots[i] = target_long(r, "slots");
	}
	out->n_replicas = n;
	return 0;
}

/* The document's "target" (may be NULL) into *out (strings borrowed). */
static void target_info(const json_t *t, sb_target_info *out)
{
	const json_t *m = json_object_get(t, "model");
	if (json_is_object(m)) /* a simulated run: the model object */
		m = json_object_get(m, "name");
	out->model = json_string_value(m);
	out->slots = target_long(t, "slots");
	out->batch_tokens = target_long(t, "batch_tokens");
	out->url = json_string_value(json_object_get(t, "url"));
	out->endpoint = json_string_value(json_object_get(t, "endpoint"));
	out->api = json_string_value(json_object_get(t, "api"));
	out->server = json_string_value(json_object_get(t, "server"));
	const json_t *ps = json_object_get(t, "prompt_sizing");
	out->sizing_method = json_string_value(json_object_get(ps, "method"));
	out->tokens_per_word = opt_num(ps, "tokens_per_word");
	out->overhead_tokens = opt_num(ps, "overhead_tokens");
	out->pin_stride = target_long(t, "pin_stride");
	if (out->pin_stride < 0)
		out->pin_stride = 0;
	out->ctx_per_slot = target_long(t, "ctx_per_slot");
	const json_t *cp = json_object_get(t, "cache_prompt");
	out->cache_prompt = json_is_boolean(cp) ? json_is_true(cp) : -1;
	out->kv_bytes_per_token = opt_num(t, "kv_bytes_per_token");
	out->context_overflow = json_string_value(json_object_get(t, "context_overflow"));
}

/* A record's "hash_ids", when present: an array of whole numbers >= 0. */
static int check_blocks(const json_t *ids, const char *where, size_t i, sb_error *e)
{
	if (!ids || json_is_null(ids))
		return 0;
	size_t k;
	const json_t *x;
	if (!json_is_array(ids))
		return sb_error_set(e, "%s.requests[%zu].hash_ids: expected an array", where, i);
	json_array_foreach(ids, k, x)
	{
		if (!json_is_integer(x) || json_integer_value(x) < 0)
			return sb_error_set(e, "%s.requests[%zu].hash_ids[%zu]: expected a whole "
					       "number >= 0", where, i, k);
	}
	return 0;
}

static int load_requests(const json_t *arr, sb_rlevel *lv, const char *where, sb_error *e)
{
	size_t n = json_array_size(arr);
	size_t n_itl = 0, n_blocks = 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(arr, i);
		if (!json_is_object(r))
			return sb_error_set(e, "%s.requests[%zu]: expected an object", where, i);
		const json_t *itl = json_object_get(r, "itl_ms");
		if (itl && !json_is_null(itl) && !json_is_array(itl))
			return sb_error_set(e, "%s.requests[%zu].itl_ms: expected an array", where, i);
		n_itl += json_array_size(itl);
		if (check_blocks(json_object_get(r, "hash_ids"), where, i, e) < 0)
			return -EINVAL;
		n_blocks += json_array_size(json_object_get(r, "hash_ids"));
	}
	lv->reqs = calloc(n ? n : 1, sizeof(*lv->reqs));
	lv->timing = malloc((n ? n : 1) * sizeof(*lv->timing));
	lv->itl_pool = malloc((n_itl ? n_itl : 1) * sizeof(double));
	lv->block_pool = malloc((n_blocks ? n_blocks : 1) * sizeof(long));
	if (!lv->reqs || !lv->timing || !lv->itl_pool || !lv->block_pool)
		return -ENOMEM;
	size_t pos = 0, bpos = 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(arr, i);
		sb_reqrec *q = &lv->reqs[i];
		q->id = json_is_integer(json_object_get(r, "id"))
				? (long)json_integer_value(json_object_get(r, "id"))
				: (long)i;
		q->t_sent_s = opt_num(r, "t_sent_s");
		q->t_scheduled_s = opt_num(r, "t_scheduled_s");
		if (isnan(q->t_scheduled_s))
			q->t_scheduled_s = q->t_sent_s;
		q->t_done_s = opt_num(r, "t_done_s");
		q->ttft_ms = opt_num(r, "ttft_ms");
		q->e2e_ms = opt_num(r, "e2e_ms");
		q->wait_ms = opt_num(r, "wait_ms");
		q->prompt_tokens = opt_long(r, "prompt_tokens");
		q->output_tokens = opt_long(r, "output_tokens");
		if (isnan(q->t_done_s) && !isnan(q->t_scheduled_s) && !isnan(q->e2e_ms))
			q->t_done_s = q->t_scheduled_s + q->e2e_ms / 1e3;
		const json_t *itl = json_object_get(r, "itl_ms");
		q->itl_ms = lv->itl_pool + pos;
		size_t k;
		const json_t *x;
		json_array_foreach(itl, k, x)
		{
			lv->itl_pool[pos++] = json_is_number(x) ? json_number_value(x) : NAN;
		}
		q->n_itl = json_array_size(itl);
		const json_t *srv = json_object_get(r, "server");
		server_timing(json_is_object(srv) ? srv : NULL, &lv->timing[i]);
		q->warmup = json_is_true(json_object_get(r, "warmup"));
		const json_t *slot = json_object_get(r, "slot");
		q->slot = json_is_integer(slot) && json_integer_value(slot) >= 0
				  ? (long)json_integer_value(slot)
				  : -1;
		const json_t *pg = json_object_get(r, "prefix_group");
		q->prefix_group = json_is_integer(pg) && json_integer_value(pg) >= 0
					  ? (long)json_integer_value(pg)
					  : -1;
		const json_t *ids = json_object_get(r, "hash_ids");
		q->blocks = json_array_size(ids) ? lv->block_pool + bpos : NULL;
		q->n_blocks = (long)json_array_size(ids);
		for (size_t b = 0; b < json_array_size(ids); b++)
			lv->block_pool[bpos++] = (long)json_integer_value(json_array_get(ids, b));
		const json_t *pt = json_object_get(r, "prefix_tokens");
		q->prefix_tokens = json_is_integer(pt) && json_integer_value(pt) >= 0 &&
					   json_integer_value(pt) < 1000000000
					   ? (long)json_integer_value(pt) : -1;
		const json_t *tn = json_object_get(r, "turn");
		q->turn = json_is_integer(tn) && json_integer_value(tn) >= 1 &&
				  json_integer_value(tn) < 1000000000
				  ? (long)json_integer_value(tn) : -1;
		const json_t *rep = json_object_get(r, "replica");
		q->replica = json_is_integer(rep) && json_integer_value(rep) >= 0
				     ? (long)json_integer_value(rep)
				     : -1;
		const json_t *err = json_object_get(r, "error");
		if (json_is_object(err)) {
			const char *cls = json_string_value(json_object_get(err, "class"));
			q->err_class = cls ? cls : "unknown";
			q->err_msg = json_string_value(json_object_get(err, "message"));
		} else if (err && !json_is_null(err)) {
			return sb_error_set(e, "%s.requests[%zu].error: expected null or an object",
					    where, i);
		}
		if (!q->err_class && (isnan(q->e2e_ms) || isnan(q->ttft_ms)))
			return sb_error_set(e, "%s.requests[%zu]: a successful request needs "
					       "numeric ttft_ms and e2e_ms", where, i);
	}
	lv->n_reqs = n;
	return 0;
}

/* Every record's "replica" names an entry of target.replicas. */
static int check_replicas(const sb_results *out, const char *where, sb_error *e)
{
	for (size_t i = 0; i < out->n_levels; i++)
		for (size_t j = 0; j < out->levels[i].n_reqs; j++) {
			long rep = out->levels[i].reqs[j].replica;
			if (rep >= 0 && (size_t)rep >= out->target.n_replicas)
				return sb_error_set(e, "%s: levels[%zu].requests[%zu].replica is %ld, "
						       "but target.replicas has %zu entries",
						    where, i, j, rep, out->target.n_replicas);
		}
	return 0;
}

/* A level's "server_view" (optional) into *v. */
static int load_view(const json_t *l, sb_server_view *v, const char *where, sb_error *e)
{
	const json_t *j = json_object_get(l, "server_view");
	memset(v, 0, sizeof *v);
	if (!j || json_is_null(j))
		return 0;
	char w[220];
	snprintf(w, sizeof(w), "%s.server_view", where);
	if (!json_is_object(j))
		return sb_error_set(e, "%s: expected an object", w);
	if (sb_json_get_long(j, "samples", 0, LONG_MAX, &v->samples, w, e) < 0 ||
	    sb_json_get_double(j, "running_mean", 0, 1e9, &v->running, w, e) < 0 ||
	    sb_json_get_double(j, "waiting_mean", 0, 1e9, &v->waiting, w, e) < 0)
		return -EINVAL;
	return 0;
}

int sb_results_from_json(json_t *root, sb_results *out, const char *where, sb_error *e)
{
	memset(out, 0, sizeof(*out));
	sb_workload_init(&out->workload);
	if (!json_is_object(root))
		return sb_error_set(e, "%s: expected a JSON object", where);
	out->root = json_incref(root);
	const char *schema = json_string_value(json_object_get(root, "schema"));
	if (!schema || strcmp(schema, SB_RESULTS_SCHEMA)) {
		sb_results_fini(out);
		return sb_error_set(e, "%s: \"schema\" is %s%s%s, expected \"%s\"", where,
				    schema ? "\"" : "", schema ? schema : "missing",
				    schema ? "\"" : "", SB_RESULTS_SCHEMA);
	}
	const char *src = json_string_value(json_object_get(root, "source"));
	snprintf(out->source, sizeof(out->source), "%s", src ? src : "measured");
	int r = 0;
	target_info(json_object_get(root, "target"), &out->target);
	if ((r = target_replicas(json_object_get(root, "target"), &out->target, where, e)) < 0)
		goto fail;
	const json_t *wl = json_object_get(root, "workload");
	if (json_is_object(wl) && json_object_size(wl) > 0) {
		char w[200];
		snprintf(w, sizeof(w), "%s: workload", where);
		r = sb_workload_from_json_lenient(wl, &out->workload, w, e);
		if (r < 0)
			goto fail;
		out->has_workload = 1;
	}
	const json_t *levels = json_object_get(root, "levels");
	if (!json_is_array(levels)) {
		r = sb_error_set(e, "%s: missing \"levels\" array", where);
		goto fail;
	}
	out->n_levels = json_array_size(levels);
	out->levels = calloc(out->n_levels ? out->n_levels : 1, sizeof(*out->levels));
	if (!out->levels) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < out->n_levels; i++) {
		char w[200];
		snprintf(w, sizeof(w), "%s: levels[%zu]", where, i);
		const json_t *l = json_array_get(levels, i);
		r = sb_level_from_json(l, &out->levels[i].sum, e);
		if (r < 0) {
			sb_error_prefix(e, "%s", w);
			goto fail;
		}
		if ((r = load_view(l, &out->levels[i].view, w, e)) < 0)
			goto fail;
		const json_t *reqs = json_object_get(l, "requests");
		if (reqs && !json_is_null(reqs)) {
			if (!json_is_array(reqs)) {
				r = sb_error_set(e, "%s.requests: expected an array", w);
				goto fail;
			}
			r = load_requests(reqs, &out->levels[i], w, e);
			if (r < 0)
				goto fail;
		}
	}
	if ((r = check_replicas(out, where, e)) < 0)
		goto fail;
	return 0;
fail:
	sb_results_fini(out);
	return r;
}

int sb_results_load(const char *path, sb_results *out, sb_error *e)
{
	memset(out, 0, sizeof(*out));
	int r;
	json_t *j = sb_import_load(path, NULL, &r, e);
	if (!j)
		return r;
	r = sb_results_from_json(j, out, path, e);
	json_decref(j);
	return r;
}

long sb_results_failed_count(const sb_results *r)
{
	long n = 0;
	for (size_t i = 0; i < r->n_levels; i++)
		n += r->levels[i].sum.requests_failed;
	return n;
}

void sb_results_fini(sb_results *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->levels && i < r->n_levels; i++) {
		free(r->levels[i].reqs);
		free(r->levels[i].timing);
		free(r->levels[i].itl_pool);
		free(r->levels[i].block_pool);
	}
	free(r->levels);
	free(r->target.replica_slots);
	json_decref(r->root);
	memset(r, 0, sizeof(*r));
}
