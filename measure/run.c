/* run.c — see run.h: probing, prompt sizing, levels, results. */
#include "run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/level.h"
#include "core/results.h"
#include "driver.h"
#include "probe.h"
#include "prompt.h"
#include "recorder.h"

void sb_run_config_init(sb_run_config *c)
{
	memset(c, 0, sizeof(*c));
	sb_workload_init(&c->workload);
	c->api = SB_API_AUTO;
	c->cache_prompt = 1;
	c->ignore_eos = 1;
	c->timeout_s = 300;
	c->max_line = SB_RUN_MAX_LINE;
}

/* Everything one run needs while levels are measured. */
typedef struct run {
	const sb_run_config *c;
	sb_api api;
	char root[1024];
	char endpoint[1100];
	sb_prompt_size size;
	gsl_rng *rng_prompt, *rng_arrival, *rng_think;
	char *reused;              /* the prompt of --reuse-prompt */
	sb_recorder *rec;
	int rec_failed;
	/* the level being measured */
	int li;
	int warmup;
	sb_levelacc acc;
	json_t *requests;
	long *in_len, *out_len;    /* per request id: asked-for lengths */
	size_t cap_len;
	long total;
	sb_run_progress prog;
} run;

/* ---- prompt sizing --------------------------------------------------------- */

static void size_prompts(run *r, const sb_probe_opts *po, const sb_server_info *info)
{
	const sb_run_config *c = r->c;
	sb_error e;
	r->size.overhead = 0;
	r->size.per_word = 1.3;
	r->size.method = "default";
	gsl_rng *g = sb_rng_new(c->workload.seed ^ 0x5bd1e995UL);
	if (!g)
		return;
	char *big = sb_prompt_text(g, 400), *small = sb_prompt_text(g, 24);
	long t_big = 0, t_small = 0, p_small = 0, p_big = 0;
	if (!big || !small)
		goto out;
	if (info->has_tokenize && sb_probe_tokenize(po, r->root, big, 0, &t_big, &e) == 0 &&
	    t_big > 0) {
		/* No generation request: the template overhead comes from the
		 * server's own template and tokenizer (probe requests would count
		 * as traffic on the server being measured). */
		r->size.per_word = (double)t_big / 400.0;
		r->size.method = "tokenize";
		char *tpl = NULL;
		if (sb_probe_tokenize(po, r->root, small, 0, &t_small, &e) == 0) {
			if (r->api == SB_API_OPENAI_CHAT || r->api == SB_API_OLLAMA_CHAT) {
				if (sb_probe_apply_template(po, r->root, small, &tpl, &e) == 0 &&
				    sb_probe_tokenize(po, r->root, tpl, 1, &p_small, &e) == 0)
					r->size.overhead = (double)(p_small - t_small);
			} else if (sb_probe_tokenize(po, r->root, small, 1, &p_small, &e) == 0) {
				r->size.overhead = (double)(p_small - t_small);
			}
		}
		free(tpl);
		goto out;
	}
	if (sb_probe_prompt_tokens(po, r->api, r->root, c->model, small, &p_small, &e) == 0 &&
	    sb_probe_prompt_tokens(po, r->api, r->root, c->model, big, &p_big, &e) == 0 &&
	    p_big > p_small) {
		r->size.per_word = (double)(p_big - p_small) / (400.0 - 24.0);
		r->size.overhead = (double)p_small - r->size.per_word * 24.0;
		r->size.method = "probe";
	}
out:
	free(big);
	free(small);
	gsl_rng_free(g);
}

/* ---- phase callbacks ------------------------------------------------------- */

static int remember_lengths(run *r, long id, long in, long out)
{
	if ((size_t)id >= r->cap_len) {
		size_t cap = r->cap_len ? r->cap_len : 256;
		while (cap <= (size_t)id)
			cap *= 2;
		long *a = realloc(r->in_len, cap * sizeof(long));
		if (!a)
			return -ENOMEM;
		r->in_len = a;
		long *b = realloc(r->out_len, cap * sizeof(long));
		if (!b)
			return -ENOMEM;
		r->out_len = b;
		r->cap_len = cap;
	}
	r->in_len[id] = in;
	r->out_len[id] = out;
	return 0;
}

static char *make_body(void *ud, long id)
{
	run *r = ud;
	const sb_workload *w = &r->c->workload;
	long in = sb_workload_len(&w->input_len, r->rng_prompt);
	long out = sb_workload_len(&w->output_len, r->rng_prompt);
	char *text = NULL;
	if (r->reused) {
		in = -1; /* the reused prompt's own length, reported by the server */
	} else {
		text = sb_prompt_text(r->rng_prompt, sb_prompt_words(&r->size, in));
		if (!text)
			return NULL;
	}
	if (!r->warmup && remember_lengths(r, id, in, out) < 0) {
		free(text);
		return NULL;
	}
	sb_api_req rq = {
		.model = r->c->model,
		.prompt = r->reused ? r->reused : text,
		.max_tokens = out,
		.ignore_eos = r->c->ignore_eos,
		.cache_prompt = r->c->cache_prompt,
		.stream = 1,
	};
	char *body = sb_api_body(r->api, &rq);
	free(text);
	return body;
}

static void on_done(void *ud, const sb_driver_done *d)
{
	run *r = ud;
	if (r->warmup)
		return;
	sb_stream *st = d->st;
	double ttft = isnan(d->t_first_s) ? NAN : (d->t_first_s - d->t_scheduled_s) * 1e3;
	long out_tokens = st->completion_tokens;
	const char *src = "server";
	if (out_tokens < 0) {
		out_tokens = st->n_content;
		src = "chunks";
	}
	sb_reqrec rec = {
		.id = d->id,
		.t_scheduled_s = d->t_scheduled_s,
		.t_sent_s = d->t_sent_s,
		.t_done_s = d->t_done_s,
		.ttft_ms = ttft,
		.e2e_ms = (d->t_done_s - d->t_scheduled_s) * 1e3,
		.wait_ms = isfinite(st->prompt_ms) && isfinite(ttft) ? ttft - st->prompt_ms : NAN,
		.itl_ms = d->itl_ms,
		.n_itl = d->n_itl,
		.prompt_tokens = st->prompt_tokens,
		.output_tokens = out_tokens,
		.err_class = d->err_class,
		.err_msg = d->err_msg,
	};
	sb_levelacc_add(&r->acc, &rec);
	json_t *server = st->server;
	st->server = NULL;
	json_t *j = sb_reqrec_to_json(&rec, server);
	if (!j)
		return;
	if ((size_t)d->id < r->cap_len) {
		if (r->in_len[d->id] > 0)
			json_object_set_new(j, "input_len", json_integer(r->in_len[d->id]));
		json_object_set_new(j, "output_len", json_integer(r->out_len[d->id]));
	}
	json_object_set_new(j, "output_tokens_source", json_string(src));
	if (d->retries)
		json_object_set_new(j, "client_retries", json_integer(d->retries));
	if (r->rec) {
		/* the partial line says which level; the final record does not need to */
		json_object_set_new(j, "level", json_real(r->c->workload.levels[r->li]));
		json_object_set_new(j, "level_index", json_integer(r->li));
		json_object_set_new(j, "mode", json_string(sb_mode_name(r->c->workload.mode)));
		if (sb_recorder_append(r->rec, j) < 0)
			r->rec_failed = 1;
		json_object_del(j, "level");
		json_object_del(j, "level_index");
		json_object_del(j, "mode");
	}
	json_array_append_new(r->requests, j);
}

static void on_inflight(void *ud, double t_s, int delta)
{
	run *r = ud;
	if (!r->warmup)
		sb_levelacc_inflight(&r->acc, t_s, delta);
}

static void on_tick(void *ud, double t_s, long sent, long done)
{
	run *r = ud;
	const sb_run_config *c = r->c;
	if (!c->progress)
		return;
	sb_run_progress *p = &r->prog;
	p->sent = sent;
	p->done = done;
	p->elapsed_s = t_s;
	p->total = r->warmup ? c->workload.warmup : r->total;
	p->warmup = r->warmup;
	p->eta_s = NAN;
	if (p->total > 0 && done > 0)
		p->eta_s = t_s / (double)done * (double)(p->total - done);
	else if (p->total < 0 && c->workload.duration_s > 0)
		p->eta_s = fmax(0, c->workload.duration_s - t_s);
	c->progress(c->progress_ud, p);
}

/* ---- levels ------------------------------------------------------------------ */

/* Open-loop send times for one level: the first at 0, then gaps. */
static double *arrivals(run *r, double rate, size_t *n)
{
	const sb_workload *w = &r->c->workload;
	size_t cap = 256, k = 0;
	double *a = malloc(cap * sizeof(double));
	double t = 0;
	while (a) {
		if (w->duration_s > 0 ? t >= w->duration_s : (long)k >= w->requests)
			break;
		if (k == cap) {
			cap *= 2;
			double *q = realloc(a, cap * sizeof(double));
			if (!q) {
				free(a);
				return NULL;
			}
			a = q;
		}
		a[k++] = t;
		t += sb_workload_gap_s(w, rate, r->rng_arrival);
	}
	*n = k;
	return a;
}

static int run_level(run *r, sb_driver *drv, json_t *results, sb_error *e)
{
	const sb_run_config *c = r->c;
	const sb_workload *w = &c->workload;
	double level = w->levels[r->li];
	int rc;
	memset(&r->prog, 0, sizeof(r->prog));
	r->prog.level_index = r->li;
	r->prog.n_levels = w->n_levels;
	r->prog.level = level;
	r->prog.mode = w->mode;

	if (w->warmup > 0) {
		r->warmup = 1;
		sb_phase wp = { .mode = SB_MODE_CONCURRENCY, .concurrency = 1, .count = w->warmup,
				.body = make_body, .done = on_done, .tick = on_tick,
				.inflight = on_inflight, .ud = r };
		rc = sb_driver_run(drv, &wp, e);
		r->warmup = 0;
		if (rc < 0)
			return rc;
	}

	if (sb_levelacc_init(&r->acc, &w->slo) < 0)
		return sb_error_code(e, -ENOMEM, "out of memory");
	r->requests = json_array();
	sb_phase ph = { .mode = w->mode, .think = &w->think_s, .rng = r->rng_think,
			.body = make_body, .done = on_done, .tick = on_tick,
			.inflight = on_inflight, .ud = r };
	double *arr = NULL;
	if (w->mode == SB_MODE_CONCURRENCY) {
		ph.concurrency = (long)level;
		ph.count = w->duration_s > 0 ? -1 : w->requests;
		ph.duration_s = w->duration_s;
		r->total = ph.count;
	} else {
		size_t n = 0;
		arr = arrivals(r, level, &n);
		if (!arr) {
			sb_levelacc_fini(&r->acc);
			json_decref(r->requests);
			return sb_error_code(e, -ENOMEM, "out of memory");
		}
		ph.arrivals = arr;
		ph.n_arrivals = n;
		r->total = (long)n;
	}
	rc = sb_driver_run(drv, &ph, e);
	free(arr);
	sb_level lv;
	sb_levelacc_finish(&r->acc, level, w->mode, 0, &lv);
	sb_levelacc_fini(&r->acc);
	if (rc == 0 || lv.requests_ok + lv.requests_failed > 0)
		sb_results_add_level(results, &lv, r->requests);
	else
		json_decref(r->requests);
	r->requests = NULL;
	return rc;
}

/* ---- public -------------------------------------------------------------------- */

long sb_run_failed_count(const json_t *results)
{
	long n = 0;
	size_t i;
	json_t *lv;
	json_array_foreach(json_object_get(results, "levels"), i, lv)
		n += (long)json_integer_value(json_object_get(lv, "requests_failed"));
	return n;
}

static json_t *target_json(const run *r, const sb_server_info *info)
{
	const sb_run_config *c = r->c;
	json_t *t = json_object();
	json_object_set_new(t, "url", json_string(c->url));
	json_object_set_new(t, "endpoint", json_string(r->endpoint));
	json_object_set_new(t, "api", json_string(sb_api_name(r->api)));
	json_object_set_new(t, "model", json_string(c->model));
	json_object_set_new(t, "server", json_string(info->kind));
	if (info->slots > 0)
		json_object_set_new(t, "slots", json_integer(info->slots));
	json_object_set_new(t, "prompt_sizing",
			    json_pack("{s:s,s:f,s:f}", "method", r->size.method, "overhead_tokens",
				      r->size.overhead, "tokens_per_word", r->size.per_word));
	json_object_set_new(t, "reuse_prompt", json_boolean(c->reuse_prompt));
	json_object_set_new(t, "cache_prompt", json_boolean(c->cache_prompt));
	json_object_set_new(t, "ignore_eos", json_boolean(c->ignore_eos));
	json_object_set_new(t, "ipv4", json_boolean(c->ipv4));
	json_object_set_new(t, "timeout_s", json_real(c->timeout_s));
	json_object_set_new(t, "api_key", json_boolean(c->api_key != NULL)); /* never the key */
	return t;
}

int sb_run_execute(const sb_run_config *c, json_t **results_out, sb_error *e)
{
	*results_out = NULL;
	if (!c->url || !*c->url)
		return sb_error_set(e, "--url is required");
	if (!c->model || !*c->model)
		return sb_error_set(e, "--model is required");
	if (!(c->timeout_s > 0))
		return sb_error_set(e, "--timeout must be positive (got %g)", c->timeout_s);
	if (sb_workload_validate(&c->workload, e) < 0)
		return -EINVAL;

	run r;
	memset(&r, 0, sizeof(r));
	r.c = c;
	int had_v1 = 0;
	if (sb_api_root(c->url, r.root, sizeof(r.root), &had_v1, e) < 0)
		return -EINVAL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return sb_error_code(e, -ENOMEM, "cannot initialise libcurl");

	struct curl_slist *hdr = NULL;
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, "Expect:");
	if (c->api_key && *c->api_key) {
		size_t n = strlen(c->api_key) + 32;
		char *h = malloc(n);
		if (h) {
			snprintf(h, n, "Authorization: Bearer %s", c->api_key);
			hdr = curl_slist_append(hdr, h);
			memset(h, 0, n);
			free(h);
		}
	}
	int ret = 0;
	json_t *results = NULL;
	sb_driver *drv = NULL;
	sb_probe_opts po = { .headers = hdr, .ipv4 = c->ipv4, .ca_file = c->ca_file,
			     .insecure = c->insecure,
			     .timeout_s = c->timeout_s < 10 ? c->timeout_s : 10 };
	sb_server_info info;
	ret = sb_probe_detect(&po, r.root, &info, e);
	if (ret < 0)
		goto out;
	r.api = c->api;
	if (r.api == SB_API_AUTO)
		r.api = sb_api_from_url(c->url);
	if (r.api == SB_API_AUTO)
		r.api = (!strcmp(info.kind, "ollama") && !had_v1) ? SB_API_OLLAMA_CHAT
								    : SB_API_OPENAI_CHAT;
	snprintf(r.endpoint, sizeof(r.endpoint), "%s%s", r.root, sb_api_path(r.api));
	po.timeout_s = c->timeout_s;
	size_prompts(&r, &po, &info);

	r.rng_prompt = sb_rng_new(c->workload.seed);
	r.rng_arrival = sb_rng_new(c->workload.seed + 1);
	r.rng_think = sb_rng_new(c->workload.seed + 2);
	if (!r.rng_prompt || !r.rng_arrival || !r.rng_think) {
		ret = sb_error_code(e, -ENOMEM, "out of memory");
		goto out;
	}
	if (c->reuse_prompt) {
		long in = sb_workload_len(&c->workload.input_len, r.rng_prompt);
		r.reused = sb_prompt_text(r.rng_prompt, sb_prompt_words(&r.size, in));
	}
	if (c->partial_path && !(r.rec = sb_recorder_open(c->partial_path, e))) {
		ret = -EIO;
		goto out;
	}
	sb_driver_opts dopt = { .url = r.endpoint, .api = r.api, .headers = hdr,
				.ipv4 = c->ipv4, .ca_file = c->ca_file, .insecure = c->insecure,
				.timeout_s = c->timeout_s,
				.max_line = c->max_line ? c->max_line : SB_RUN_MAX_LINE,
				.stop = c->stop };
	if (!(drv = sb_driver_new(&dopt, e))) {
		ret = -ENOMEM;
		goto out;
	}
	results = sb_results_new("measured", target_json(&r, &info), &c->workload);
	if (!results) {
		ret = sb_error_code(e, -ENOMEM, "out of memory");
		goto out;
	}
	for (r.li = 0; r.li < c->workload.n_levels; r.li++) {
		ret = run_level(&r, drv, results, e);
		if (ret < 0)
			break;
	}
	json_object_set_new(results, "interrupted", json_boolean(ret == -EINTR));
	if (ret < 0 && ret != -EINTR) {
		json_decref(results);
		results = NULL;
	} else if (r.rec_failed) {
		json_object_set_new(results, "partial_write_failed", json_true());
	}
out:
	*results_out = results;
	sb_driver_free(drv);
	sb_recorder_close(r.rec);
	curl_slist_free_all(hdr);
	free(r.reused);
	free(r.in_len);
	free(r.out_len);
	if (r.rng_prompt)
		gsl_rng_free(r.rng_prompt);
	if (r.rng_arrival)
		gsl_rng_free(r.rng_arrival);
	if (r.rng_think)
		gsl_rng_free(r.rng_think);
	curl_global_cleanup();
	return ret;
}
