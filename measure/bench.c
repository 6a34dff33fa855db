/* bench.c — see bench.h: the server probed once, levels measured on kept
 * connections, results documents. */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/level.h"
#include "core/results.h"
#include "conversation.h"
#include "driver.h"
#include "servers.h"
#include "serverview.h"
#include "probe.h"
#include "slotprobe.h"
#include "prompt.h"
#include "recorder.h"

/* Invariant: after sb_bench_new, api is a concrete API, endpoint is root +
 * its path, and drv (with hdr) talks to endpoint. */
struct sb_bench {
	sb_bench_config c;         /* strings borrowed */
	sb_api api;
	char root[1024];
	char endpoint[1100];
	sb_server_info info;
	sb_servers fleet;            /* every server (one without a fleet); root,
				    * endpoint, info and api are fleet.rep[0]'s */
	sb_slot_context ctx; /* the slots' context, KV bytes per token */
	sb_prompt_size size;
	struct curl_slist *hdr;    /* owned; borrowed by drv */
	sb_driver *drv;            /* owned: its connections outlive a measurement */
	int curl_ready;            /* curl_global_init done */
};

/* Everything one measurement needs while its levels are measured. */
typedef struct run {
	const sb_bench *b;
	const sb_workload *w;
	sb_bench_opts o;
	gsl_rng *rng_prompt, *rng_arrival, *rng_think;
	char *reused;              /* the prompt of reuse_prompt */
	char **prefix;             /* workload prefix_groups shared prefixes */
	sb_conversations *conv;    /* a conversation workload's (else NULL) */
	long prefix_words;         /* words in each */
	sb_recorder *rec;
	int rec_failed;
	/* the level being measured */
	int li;
	int warmup;
	sb_levelacc acc;
	json_t *requests;
	long *in_len, *out_len;    /* per request id: asked-for lengths */
	long *group_of;            /* per request id: its prefix group (prefix_len) */
	size_t cap_len;
	long total;
	sb_run_progress prog;
	/* the phase being run: finished requests, those that could not connect */
	long phase_done, phase_connect;
	char connect_msg[128];
	/* pinning (o.pin_stride > 0), per phase: the slot of each request id,
	 * and how many requests in flight hold slot i * pin_stride */
	long *slot_of;
	size_t cap_slot;
	long *held;
	size_t n_held;
	long max_held;             /* slot indices below this exist; 0: no bound */
	/* a fleet: the router, and the level's measured requests per replica */
	gsl_rng *rng_route;
	sb_route_picker router;
	long *rep_req, *rep_fail;
} run;

void sb_bench_config_init(sb_bench_config *c)
{
	memset(c, 0, sizeof(*c));
	c->api = SB_API_AUTO;
	c->ignore_eos = 1;
	c->timeout_s = 300;
	c->max_line = SB_RUN_MAX_LINE;
}

void sb_bench_config_from_run(sb_bench_config *b, const sb_run_config *c)
{
	sb_bench_config_init(b);
	b->url = c->url ? c->url : (c->n_urls ? c->urls[0] : NULL);
	b->urls = c->urls;
	b->n_urls = c->n_urls;
	b->route = c->route;
	b->model = c->model;
	b->api = c->api;
	b->ignore_eos = c->ignore_eos;
	b->ipv4 = c->ipv4;
	b->timeout_s = c->timeout_s;
	b->api_key = c->api_key;
	b->ca_file = c->ca_file;
	b->insecure = c->insecure;
	b->max_line = c->max_line;
	b->stop = c->stop;
	b->sizing_seed = c->workload.seed;
}

void sb_bench_opts_init(sb_bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cache_prompt = 1;
}

void sb_bench_opts_from_run(sb_bench_opts *o, const sb_run_config *c)
{
	sb_bench_opts_init(o);
	o->reuse_prompt = c->reuse_prompt;
	o->cache_prompt = c->cache_prompt;
	o->partial_path = c->partial_path;
	o->pin_stride = c->pin_stride;
	o->server_view_s = c->server_view_s;
	o->trace = c->trace;
	o->progress = c->progress;
	o->progress_ud = c->progress_ud;
}

/* ---- prompt sizing --------------------------------------------------------- */

static void size_prompts(sb_bench *b, const sb_probe_opts *po)
{
	const sb_bench_config *c = &b->c;
	sb_error e;
	b->size.overhead = 0;
	b->size.per_word = 1.3;
	b->size.method = "default";
	gsl_rng *g = sb_rng_new(sb_seed_derive(c->sizing_seed, 4, 0));
	if (!g)
		return;
	char *big = sb_prompt_text(g, 400), *small = sb_prompt_text(g, 24);
	long t_big = 0, t_small = 0, p_small = 0, p_big = 0;
	if (!big || !small)
		goto out;
	if (b->info.has_tokenize && sb_probe_tokenize(po, b->root, big, 0, &t_big, &e) == 0 &&
	    t_big > 0) {
		/* No generation request: the template overhead comes from the
		 * server's own template and tokenizer (probe requests would count
		 * as traffic on the server being measured). */
		b->size.per_word = (double)t_big / 400.0;
		b->size.method = "tokenize";
		char *tpl = NULL;
		if (sb_probe_tokenize(po, b->root, small, 0, &t_small, &e) == 0) {
			if (b->api == SB_API_OPENAI_CHAT || b->api == SB_API_OLLAMA_CHAT) {
				if (sb_probe_apply_template(po, b->root, small, &tpl, &e) == 0 &&
				    sb_probe_tokenize(po, b->root, tpl, 1, &p_small, &e) == 0)
					b->size.overhead = (double)(p_small - t_small);
			} else if (sb_probe_tokenize(po, b->root, small, 1, &p_small, &e) == 0) {
				b->size.overhead = (double)(p_small - t_small);
			}
		}
		free(tpl);
		goto out;
	}
	if (sb_probe_prompt_tokens(po, b->api, b->root, c->model, small, &p_small, &e) == 0 &&
	    sb_probe_prompt_tokens(po, b->api, b->root, c->model, big, &p_big, &e) == 0 &&
	    p_big > p_small) {
		b->size.per_word = (double)(p_big - p_small) / (400.0 - 24.0);
		b->size.overhead = (double)p_small - b->size.per_word * 24.0;
		b->size.method = "probe";
	}
out:
	free(big);
	free(small);
	gsl_rng_free(g);
}

/* ---- phase callbacks ------------------------------------------------------- */

static int remember_lengths(run *r, long id, long in, long out, long group)
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
		long *g = realloc(r->group_of, cap * sizeof(long));
		if (!g)
			return -ENOMEM;
		r->group_of = g;
		r->cap_len = cap;
	}
	r->in_len[id] = in;
	r->out_len[id] = out;
	r->group_of[id] = group;
	return 0;
}

/* Grows a to hold index i (cap *cap, doubled from 16); new entries zero.
 * 0 or -ENOMEM. */
static int grow(long **a, size_t *cap, size_t i)
{
	if (i < *cap)
		return 0;
	size_t n = *cap ? *cap : 16;
	while (n <= i)
		n *= 2;
	long *p = realloc(*a, n * sizeof(long));
	if (!p)
		return -ENOMEM;
	memset(p + *cap, 0, (n - *cap) * sizeof(long));
	*a = p;
	*cap = n;
	return 0;
}

/* The slot request id is pinned to (o.pin_stride > 0): the lowest slot
 * index no request in flight holds, else (every index below max_held
 * held) the least held one; -1 on allocation failure. */
static long pin_slot(run *r, long id)
{
	size_t i = 0;
	while (i < r->n_held && r->held[i] > 0)
		i++;
	if (r->max_held > 0 && i >= (size_t)r->max_held) {
		i = 0;
		for (size_t j = 1; j < (size_t)r->max_held; j++)
			if (r->held[j] < r->held[i])
				i = j;
	}
	if (grow(&r->held, &r->n_held, i) < 0 || grow(&r->slot_of, &r->cap_slot, (size_t)id) < 0)
		return -1;
	r->held[i]++;
	r->slot_of[id] = (long)i * r->o.pin_stride;
	return r->slot_of[id];
}

/* Request id's answer goes into its conversation's history (it failed or
 * lost its text: the conversation ends). */
static void conversation_answer(run *r, long id, const sb_stream *st, const char *err_class)
{
	size_t len = 0;
	char *text = st && !err_class ? sb_stream_text(st, &len) : NULL;
	sb_conversations_answer(r->conv, id, text, len, st ? st->prompt_tokens : -1,
				st ? st->completion_tokens : -1);
	free(text);
}

/* The driver's follow callback (open loop): a conversation's next turn,
 * after the user's think time. */
static double on_follow(void *ud, long id)
{
	run *r = ud;
	if (!r->conv || !sb_conversations_continues(r->conv, id))
		return -1;
	double th = sb_dist_sample(&r->w->think_s, r->rng_think);
	return th > 0 ? th : 0;
}

/* The driver's ended callback: a conversation's answer; request id's slot
 * is free again. */
static void on_ended(void *ud, long id, const sb_stream *st, const char *err_class)
{
	run *r = ud;
	if (r->conv)
		conversation_answer(r, id, st, err_class);
	if (r->o.pin_stride <= 0 || id < 0 || (size_t)id >= r->cap_slot)
		return;
	size_t i = (size_t)(r->slot_of[id] / r->o.pin_stride);
	if (i < r->n_held && r->held[i] > 0)
		r->held[i]--;
}

/* Request id's asked-for lengths: the trace's in a measured phase with a
 * trace (its request id), else drawn from the workload. */
static void body_lengths(run *r, long id, long *in, long *out)
{
	const sb_trace *t = r->o.trace;
	if (t && !r->warmup && id >= 0 && (size_t)id < t->n) {
		*in = t->r[id].in_len;
		*out = t->r[id].out_len;
		return;
	}
	*in = sb_workload_len(&r->w->input_len, r->rng_prompt);
	*out = sb_workload_len(&r->w->output_len, r->rng_prompt);
}

/* New text of the prompt of `in` tokens of its own after shared prefix
 * group g's (g < 0: no prefix): the words of prefix + in tokens, less the
 * prefix's. */
static char *prompt_text(run *r, long in, long g)
{
	if (g < 0)
		return sb_prompt_text(r->rng_prompt, sb_prompt_words(&r->b->size, in));
	long words = sb_prompt_words(&r->b->size, r->w->prefix_len + in) - r->prefix_words;
	char *own = sb_prompt_text(r->rng_prompt, words > 1 ? words : 1), *text = NULL;
	size_t n = own ? strlen(r->prefix[g]) + strlen(own) + 2 : 0;
	if (own && (text = malloc(n)))
		snprintf(text, n, "%s %s", r->prefix[g], own);
	free(own);
	return text;
}

/* Whether the API sends a conversation as messages (else as one text). */
static int is_chat(sb_api a)
{
	return a == SB_API_OPENAI_CHAT || a == SB_API_OLLAMA_CHAT;
}

/* Appends n words to text (*len bytes so far), drawn from g; -1 out of
 * memory (text freed). */
static int append_words(char **text, size_t *len, const gsl_rng *g, long n)
{
	char *w = sb_prompt_text(g, n);
	size_t k = w ? strlen(w) : 0;
	char *t = w ? realloc(*text, *len + k + 2) : NULL;
	if (!t) {
		free(w);
		free(*text);
		*text = NULL;
		return -1;
	}
	if (*len)
		t[(*len)++] = ' ';
	memcpy(t + *len, w, k + 1);
	*len += k;
	*text = t;
	free(w);
	return 0;
}

/* A trace request's prompt of `in` tokens whose leading blocks are named
 * (Mooncake hash_ids): each block's words drawn from its id alone, so
 * prompts naming the same leading ids share that text on the server; the
 * last block cut where the prompt ends, its own words after the blocks.
 * NULL when the request names no blocks (or out of memory). */
static char *blocks_text(run *r, long id, long in)
{
	const sb_trace *t = r->o.trace;
	if (!t || r->warmup || id < 0 || (size_t)id >= t->n || t->r[id].n_blocks == 0)
		return NULL;
	const sb_trace_req *q = &t->r[id];
	long left = sb_prompt_words(&r->b->size, in);
	long per = sb_prompt_inner_words(&r->b->size, SB_TRACE_BLOCK_TOKENS);
	char *text = NULL;
	size_t len = 0;
	for (long k = 0; k < q->n_blocks && left > 0; k++) {
		long n = left < per ? left : per;
		gsl_rng *g = sb_rng_new(sb_seed_derive(r->w->seed, 7,
						       (unsigned long)t->blocks[q->first_block + k]));
		int rc = g ? append_words(&text, &len, g, n) : -1;
		if (g)
			gsl_rng_free(g);
		if (rc < 0)
			return NULL;
		left -= n;
	}
	if (left > 0 && append_words(&text, &len, r->rng_prompt, left) < 0)
		return NULL;
	return text;
}

/* Request id is a turn of a conversation (prev: sb_phase.body's): the
 * history, then `in` tokens of the user's, in *t as messages (chat APIs) or
 * as one text (t->prompt, new malloc'd). -ENOMEM. */
static int conversation_turn(run *r, long id, long prev, long in, sb_conv_turn *t)
{
	char *said = prompt_text(r, in, -1);
	int chat = is_chat(r->b->api);
	if (!said || sb_conversations_turn(r->conv, id, prev, said, r->rng_prompt, !chat, t) < 0) {
		free(said);
		free(t->prompt);
		return -ENOMEM;
	}
	free(said);
	if (!chat)
		t->messages = NULL;
	return 0;
}

static char *make_body(void *ud, long id, long prev, long *group)
{
	run *r = ud;
	long in, out, g = -1;
	body_lengths(r, id, &in, &out);
	char *text = NULL;
	sb_conv_turn turn = { .messages = NULL };
	if (r->conv) {
		if (conversation_turn(r, id, prev, in, &turn) < 0)
			return NULL;
		text = turn.prompt;
		g = turn.number;
	} else if (r->reused) {
		in = -1; /* the reused prompt's own length, reported by the server */
	} else {
		if (r->prefix)
			g = (long)gsl_rng_uniform_int(r->rng_prompt,
						      (unsigned long)r->w->prefix_groups);
		if (!(text = blocks_text(r, id, in)) && !(text = prompt_text(r, in, g)))
			return NULL;
	}
	*group = g;
	if (!r->warmup && remember_lengths(r, id, in, out, g) < 0) {
		free(text);
		return NULL;
	}
	sb_api_req rq = {
		.model = r->b->c.model,
		.prompt = r->reused ? r->reused : text,
		.messages = turn.messages,
		.max_tokens = out,
		.ignore_eos = r->b->c.ignore_eos,
		.cache_prompt = r->o.cache_prompt,
		.stream = 1,
	};
	if (r->o.pin_stride > 0) {
		if ((rq.id_slot = pin_slot(r, id)) < 0) {
			free(text);
			return NULL;
		}
		rq.has_slot = 1;
	}
	char *body = sb_api_body(r->b->api, &rq);
	free(text);
	return body;
}

/* Counts a finished request of the phase, and those that found no server. */
static void count_phase(run *r, const sb_driver_done *d)
{
	r->phase_done++;
	if (d->err_class && !strcmp(d->err_class, "connect")) {
		r->phase_connect++;
		snprintf(r->connect_msg, sizeof(r->connect_msg), "%s", d->err_msg ? d->err_msg : "");
	}
}

/* Writes record j to the partial file with the level it belongs to. */
static void record_partial(run *r, json_t *j)
{
	/* the partial line says which level; the final record does not need to */
	json_object_set_new(j, "level", sb_json_number(r->w->levels[r->li]));
	json_object_set_new(j, "level_index", json_integer(r->li));
	json_object_set_new(j, "mode", json_string(sb_mode_name(r->w->mode)));
	if (sb_recorder_append(r->rec, j) < 0)
		r->rec_failed = 1;
	json_object_del(j, "level");
	json_object_del(j, "level_index");
	json_object_del(j, "mode");
}

static void on_done(void *ud, const sb_driver_done *d)
{
	run *r = ud;
	count_phase(r, d);
	if (r->warmup)
		return;
	sb_stream *st = d->st;
	double ttft = isnan(d->t_first_s) ? NAN : (d->t_first_s - d->t_scheduled_s) * 1e3;
	long out_tokens = st->completion_tokens;
	/* the slot the server says served it, else the one it was pinned to
	 * (they agree: llama.cpp serves a pinned request in its slot) */
	long slot = st->slot;
	if (slot < 0 && r->o.pin_stride > 0 && (size_t)d->id < r->cap_slot)
		slot = r->slot_of[d->id];
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
		.slot = slot,
	};
	const sb_trace *t = r->o.trace;
	if (t && d->id >= 0 && (size_t)d->id < t->n && t->r[d->id].n_blocks > 0) {
		rec.blocks = t->blocks + t->r[d->id].first_block; /* its prompt's blocks */
		rec.n_blocks = t->r[d->id].n_blocks;
	}
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
		if (r->group_of[d->id] >= 0 && !r->conv)
			json_object_set_new(j, "prefix_group", json_integer(r->group_of[d->id]));
	}
	sb_conv_turn turn;
	if (r->conv && sb_conversations_of(r->conv, d->id, &turn) == 0)
		sb_reqrec_set_sharing(j, turn.number, turn.history, turn.turn);
	json_object_set_new(j, "output_tokens_source", json_string(src));
	if (d->retries)
		json_object_set_new(j, "client_retries", json_integer(d->retries));
	if (slot >= 0)
		json_object_set_new(j, "slot", json_integer(slot));
	if (d->replica >= 0) {
		json_object_set_new(j, "replica", json_integer(d->replica));
		json_object_set_new(j, "replica_inflight", json_integer(d->replica_inflight));
		r->rep_req[d->replica]++;
		r->rep_fail[d->replica] += d->err_class != NULL;
	}
	if (r->rec)
		record_partial(r, j);
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
	if (!r->o.progress)
		return;
	sb_run_progress *p = &r->prog;
	p->sent = sent;
	p->done = done;
	p->elapsed_s = t_s;
	p->total = r->warmup ? r->w->warmup : r->total;
	p->warmup = r->warmup;
	p->eta_s = NAN;
	if (p->total > 0 && done > 0)
		p->eta_s = t_s / (double)done * (double)(p->total - done);
	else if (p->total < 0 && r->w->duration_s > 0)
		p->eta_s = fmax(0, r->w->duration_s - t_s);
	r->o.progress(r->o.progress_ud, p);
}

/* ---- levels ------------------------------------------------------------------ */

/* The trace's send times (bench.h sb_bench_opts.trace), new malloc'd. */
static double *trace_arrivals(const sb_trace *t, size_t *n)
{
	double *a = malloc((t->n ? t->n : 1) * sizeof(double));
	if (!a)
		return NULL;
	for (size_t k = 0; k < t->n; k++)
		a[k] = t->r[k].t_s;
	*n = t->n;
	return a;
}

/* Open-loop send times for one level: the first at 0, then gaps (or the
 * trace's times). */
static double *arrivals(run *r, double rate, size_t *n)
{
	const sb_workload *w = r->w;
	if (r->o.trace)
		return trace_arrivals(r->o.trace, n);
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

/* Runs phase ph. In the measurement's first phase (first: 1), every
 * request failing to connect means the server is gone: -ECONNREFUSED,
 * as sb_bench_new would say. */
static int run_phase(run *r, const sb_phase *ph, int first, sb_error *e)
{
	r->phase_done = r->phase_connect = 0;
	r->router.next = 0; /* round-robin: every phase from replica 0 */
	sb_route_picker_fini(&r->router); /* prefix-affinity: groups placed afresh, as
					     the simulator's router does each level */
	if (r->held)
		memset(r->held, 0, r->n_held * sizeof(long));
	if (r->conv)
		sb_conversations_reset(r->conv);
	int rc = sb_driver_run(r->b->drv, ph, e);
	if (rc == 0 && first && r->phase_done > 0 && r->phase_connect == r->phase_done)
		rc = sb_error_code(e, -ECONNREFUSED, "cannot reach the server at %s (%s)",
				   r->b->root, r->connect_msg);
	return rc;
}

/* The server's own view of the level (bench.h server_view_s), or NULL. */
static sb_serverview *start_view(const run *r)
{
	const sb_bench *b = r->b;
	if (!(r->o.server_view_s > 0) || b->fleet.n > 1)
		return NULL;
	sb_probe_opts po = { .headers = b->hdr, .ipv4 = b->c.ipv4, .ca_file = b->c.ca_file,
			     .insecure = b->c.insecure };
	return sb_serverview_start(&po, b->root, r->o.server_view_s);
}

/* The measured phase of level r->li: closed loop, or open loop with its
 * arrivals drawn into *arr (new malloc'd; the caller frees it). */
static int level_phase(run *r, double level, sb_phase *ph, double **arr, sb_error *e)
{
	const sb_workload *w = r->w;
	*ph = (sb_phase){ .mode = w->mode, .think = &w->think_s, .rng = r->rng_think,
			  .body = make_body, .done = on_done, .tick = on_tick,
			  .inflight = on_inflight, .ended = on_ended, .ud = r,
			  .router = &r->router, .keep_text = r->conv != NULL };
	*arr = NULL;
	if (w->mode == SB_MODE_CONCURRENCY) {
		ph->concurrency = (long)level;
		ph->count = w->duration_s > 0 ? -1 : w->requests;
		ph->duration_s = w->duration_s;
		r->total = ph->count;
		return 0;
	}
	size_t n = 0;
	if (!(*arr = arrivals(r, level, &n)))
		return sb_error_code(e, -ENOMEM, "out of memory");
	ph->arrivals = *arr;
	ph->n_arrivals = n;
	r->total = (long)n;
	if (r->conv) {
		/* conversations begin at the arrivals, the turns follow: the
		 * count caps them all */
		ph->follow = on_follow;
		ph->count = w->duration_s > 0 ? -1 : w->requests;
	}
	return 0;
}

static int run_level(run *r, json_t *results, sb_error *e)
{
	const sb_workload *w = r->w;
	double level = w->levels[r->li];
	int rc, first = r->li == 0;
	memset(&r->prog, 0, sizeof(r->prog));
	r->prog.level_index = r->li;
	r->prog.n_levels = w->n_levels;
	r->prog.level = level;
	r->prog.mode = w->mode;

	if (w->warmup > 0) {
		r->warmup = 1;
		sb_phase wp = { .mode = SB_MODE_CONCURRENCY, .concurrency = 1, .count = w->warmup,
				.body = make_body, .done = on_done, .tick = on_tick,
				.inflight = on_inflight, .ended = on_ended, .ud = r,
				.router = &r->router, .keep_text = r->conv != NULL };
		rc = run_phase(r, &wp, first, e);
		r->warmup = 0;
		if (rc < 0)
			return rc;
		first = 0;
	}

	sb_phase ph;
	double *arr = NULL;
	if ((rc = level_phase(r, level, &ph, &arr, e)) < 0)
		return rc;
	if (sb_levelacc_init(&r->acc, &w->slo) < 0) {
		free(arr);
		return sb_error_code(e, -ENOMEM, "out of memory");
	}
	r->requests = json_array();
	size_t nf = r->b->fleet.n;
	memset(r->rep_req, 0, nf * sizeof(long));
	memset(r->rep_fail, 0, nf * sizeof(long));
	sb_serverview *sv = start_view(r);
	rc = run_phase(r, &ph, first, e);
	json_t *view = sb_serverview_stop(sv);
	free(arr);
	sb_level lv;
	sb_levelacc_finish(&r->acc, level, w->mode, 0, &lv);
	sb_levelacc_fini(&r->acc);
	if (rc != -ECONNREFUSED && (rc == 0 || lv.requests_ok + lv.requests_failed > 0)) {
		sb_results_add_level(results, &lv, r->requests);
		json_t *levels = json_object_get(results, "levels");
		json_t *added = json_array_get(levels, json_array_size(levels) - 1);
		if (nf > 1) /* its share per replica */
			json_object_set_new(added, "replicas",
					    sb_servers_shares_json(r->rep_req, r->rep_fail, nf));
		if (view)
			json_object_set_new(added, "server_view", json_incref(view));
	} else
		json_decref(r->requests);
	json_decref(view);
	r->requests = NULL;
	return rc;
}

/* ---- public -------------------------------------------------------------------- */

/* What the server said about its slots' context into the target t. */
static void slot_context_json(json_t *t, const sb_slot_context *c)
{
	if (c->ctx_per_slot > 0)
		json_object_set_new(t, "ctx_per_slot", json_integer(c->ctx_per_slot));
	if (c->kv_bytes_per_token > 0)
		json_object_set_new(t, "kv_bytes_per_token", sb_json_number(c->kv_bytes_per_token));
	if (c->overflow)
		json_object_set_new(t, "context_overflow", json_string(c->overflow));
}

static json_t *target_json(const sb_bench *b, const sb_bench_opts *o)
{
	const sb_bench_config *c = &b->c;
	json_t *t = json_object();
	json_object_set_new(t, "url", json_string(c->url));
	json_object_set_new(t, "endpoint", json_string(b->endpoint));
	json_object_set_new(t, "api", json_string(sb_api_name(b->api)));
	json_object_set_new(t, "model", json_string(c->model));
	json_object_set_new(t, "server", json_string(b->info.kind));
	if (b->info.slots > 0 && b->fleet.n < 2)
		json_object_set_new(t, "slots", json_integer(b->info.slots));
	if (b->fleet.n > 1) {
		json_object_set_new(t, "replicas", sb_servers_target_json(&b->fleet));
		json_object_set_new(t, "route", json_string(sb_route_name(c->route)));
	}
	slot_context_json(t, &b->ctx);
	json_object_set_new(t, "prompt_sizing",
			    json_pack("{s:s,s:f,s:f}", "method", b->size.method, "overhead_tokens",
				      b->size.overhead, "tokens_per_word", b->size.per_word));
	json_object_set_new(t, "reuse_prompt", json_boolean(o->reuse_prompt));
	json_object_set_new(t, "cache_prompt", json_boolean(o->cache_prompt));
	if (o->pin_stride > 0)
		json_object_set_new(t, "pin_stride", json_integer(o->pin_stride));
	json_object_set_new(t, "ignore_eos", json_boolean(c->ignore_eos));
	json_object_set_new(t, "ipv4", json_boolean(c->ipv4));
	json_object_set_new(t, "timeout_s", sb_json_number(c->timeout_s));
	json_object_set_new(t, "api_key", json_boolean(c->api_key != NULL)); /* never the key */
	return t;
}

/* The request headers: JSON body, no 100-continue, the bearer key. */
static struct curl_slist *make_headers(const char *api_key)
{
	struct curl_slist *hdr = NULL;
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	hdr = curl_slist_append(hdr, "Expect:");
	if (api_key && *api_key) {
		size_t n = strlen(api_key) + 32;
		char *h = malloc(n);
		if (h) {
			snprintf(h, n, "Authorization: Bearer %s", api_key);
			hdr = curl_slist_append(hdr, h);
			memset(h, 0, n);
			free(h);
		}
	}
	return hdr;
}

int sb_bench_config_check(const sb_bench_config *c, sb_error *e)
{
	if (!c->url || !*c->url)
		return sb_error_set(e, "--url is required");
	if (!c->model || !*c->model)
		return sb_error_set(e, "--model is required");
	if (!(c->timeout_s > 0))
		return sb_error_set(e, "--timeout must be positive (got %g)", c->timeout_s);
	return 0;
}

/* Identifies the server (each of a fleet's), settles the API and the
 * endpoint, sizes prompts on the first. */
static int probe_server(sb_bench *b, sb_error *e)
{
	const sb_bench_config *c = &b->c;
	sb_probe_opts po = { .headers = b->hdr, .ipv4 = c->ipv4, .ca_file = c->ca_file,
			     .insecure = c->insecure,
			     .timeout_s = c->timeout_s < 10 ? c->timeout_s : 10 };
	int fleet = c->n_urls > 1;
	int ret = sb_servers_probe(&b->fleet, fleet ? c->urls : &c->url, fleet ? c->n_urls : 1,
				 c->api, &po, e);
	if (ret < 0)
		return ret;
	const sb_server *r0 = &b->fleet.rep[0];
	snprintf(b->root, sizeof(b->root), "%s", r0->root);
	snprintf(b->endpoint, sizeof(b->endpoint), "%s", r0->endpoint);
	b->info = r0->info;
	b->api = r0->api;
	sb_slotprobe_read(&po, b->root, b->info.kind, c->model, &b->ctx);
	po.timeout_s = c->timeout_s;
	size_prompts(b, &po);
	return 0;
}

int sb_bench_new(const sb_bench_config *c, sb_bench **out, sb_error *e)
{
	*out = NULL;
	int ret = sb_bench_config_check(c, e);
	if (ret < 0)
		return ret;
	sb_bench *b = calloc(1, sizeof(*b));
	if (!b)
		return sb_error_code(e, -ENOMEM, "out of memory");
	b->c = *c;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		ret = sb_error_code(e, -ENOMEM, "cannot initialise libcurl");
		goto fail;
	}
	b->curl_ready = 1;
	b->hdr = make_headers(c->api_key);
	if ((ret = probe_server(b, e)) < 0)
		goto fail;
	sb_driver_opts dopt = { .url = b->endpoint, .api = b->api, .headers = b->hdr,
				.urls = b->fleet.endpoints, .n_urls = b->fleet.n,
				.ipv4 = c->ipv4, .ca_file = c->ca_file, .insecure = c->insecure,
				.timeout_s = c->timeout_s,
				.max_line = c->max_line ? c->max_line : SB_RUN_MAX_LINE,
				.stop = c->stop };
	if (!(b->drv = sb_driver_new(&dopt, e))) {
		ret = -ENOMEM;
		goto fail;
	}
	*out = b;
	return 0;
fail:
	sb_bench_free(b);
	return ret;
}

void sb_bench_free(sb_bench *b)
{
	if (!b)
		return;
	sb_driver_free(b->drv);
	sb_servers_fini(&b->fleet);
	curl_slist_free_all(b->hdr);
	if (b->curl_ready)
		curl_global_cleanup();
	free(b);
}

long sb_bench_slots(const sb_bench *b)
{
	return b->info.slots;
}

/* Whether requests can be pinned (o->pin_stride) on b's server for w:
 * 0, or -ENOTSUP / -EINVAL with a message (bench.h). */
static int pin_check(const sb_bench *b, const sb_workload *w, const sb_bench_opts *o,
		     sb_error *e)
{
	long k = o->pin_stride;
	if (k == 0)
		return 0;
	if (b->fleet.n > 1)
		return sb_error_set(e, "pinning requests to slots (--pin-slots) needs one server; "
				       "this run has %zu (--url given %zu times)",
				    b->fleet.n, b->fleet.n);
	if (k < 0)
		return sb_error_set(e, "the slot stride must be at least 1 (got %ld)", k);
	if (strcmp(b->info.kind, "llama.cpp"))
		return sb_error_code(e, -ENOTSUP,
				     "pinning requests to slots (id_slot) needs a llama.cpp server; "
				     "the server at %s is %s", b->root, b->info.kind);
	if (b->info.slots <= 0 || w->mode != SB_MODE_CONCURRENCY)
		return 0;
	double c = 1; /* the warm-up's */
	for (int i = 0; i < w->n_levels; i++)
		c = fmax(c, w->levels[i]);
	double top = (c - 1) * (double)k;
	if (top >= (double)b->info.slots)
		return sb_error_set(e, "slot stride %ld at concurrency %g pins requests up to slot "
				       "%.0f, but the server has %ld slots (0..%ld)",
				    k, c, top, b->info.slots, b->info.slots - 1);
	return 0;
}

/* Whether w can carry o->trace (bench.h): 0, or -EINVAL with a message. */
static int trace_check(const sb_workload *w, const sb_bench_opts *o, sb_error *e)
{
	const sb_trace *t = o->trace;
	if (!t)
		return 0;
	if (t->n == 0)
		return sb_error_set(e, "the trace has no requests");
	if (w->mode != SB_MODE_RATE || w->n_levels != 1 || w->duration_s > 0)
		return sb_error_set(e, "a trace is sent as one open-loop level by its own times "
				       "(no levels, no duration)");
	if (o->reuse_prompt || w->prefix_len > 0)
		return sb_error_set(e, "a trace gives each request its own prompt length; "
				       "reusing one prompt or a shared prefix is not possible");
	return 0;
}

/* Whether w's conversations (if any) can be measured: 0, or -EINVAL. */
static int conversation_check(const sb_workload *w, const sb_bench_opts *o, sb_error *e)
{
	if (!sb_workload_is_conversation(w))
		return 0;
	if (o->trace || o->reuse_prompt)
		return sb_error_set(e, "conversations build each prompt from the history; a trace "
				       "or a reused prompt cannot be one");
	return 0;
}

/* The workload's shared prefixes, each of its own words (drawn from a
 * generator of their own, so the requests' draws do not move). */
static int make_prefixes(run *r, sb_error *e)
{
	const sb_workload *w = r->w;
	gsl_rng *g = sb_rng_new(sb_seed_derive(w->seed, 6, 0));
	r->prefix = calloc((size_t)w->prefix_groups, sizeof(char *));
	r->prefix_words = sb_prompt_words(&r->b->size, w->prefix_len);
	int ok = g && r->prefix;
	for (long i = 0; ok && i < w->prefix_groups; i++)
		ok = (r->prefix[i] = sb_prompt_text(g, r->prefix_words)) != NULL;
	if (g)
		gsl_rng_free(g);
	return ok ? 0 : sb_error_code(e, -ENOMEM, "out of memory");
}

/* Sets up r for a measurement of w: generators, the reused prompt or the
 * shared prefixes, the partial file. */
static int run_init(run *r, const sb_bench *b, const sb_workload *w, const sb_bench_opts *o,
		    sb_error *e)
{
	memset(r, 0, sizeof(*r));
	r->b = b;
	r->w = w;
	if (o)
		r->o = *o;
	else
		sb_bench_opts_init(&r->o);
	if (r->o.pin_stride > 0 && b->info.slots > 0)
		r->max_held = (b->info.slots - 1) / r->o.pin_stride + 1;
	r->rng_prompt = sb_rng_new(sb_seed_derive(w->seed, 1, 0));
	r->rng_arrival = sb_rng_new(sb_seed_derive(w->seed, 2, 0));
	r->rng_think = sb_rng_new(sb_seed_derive(w->seed, 3, 0));
	r->rng_route = sb_rng_new(sb_seed_derive(w->seed, 5, 0));
	size_t nf = b->fleet.n ? b->fleet.n : 1;
	r->rep_req = calloc(nf, sizeof(long));
	r->rep_fail = calloc(nf, sizeof(long));
	if (!r->rng_prompt || !r->rng_arrival || !r->rng_think || !r->rng_route || !r->rep_req ||
	    !r->rep_fail)
		return sb_error_code(e, -ENOMEM, "out of memory");
	r->router = (sb_route_picker){ .route = b->c.route, .n = nf, .slots = b->fleet.slots,
				 .rng = r->rng_route };
	if (r->o.reuse_prompt) {
		long in = sb_workload_len(&w->input_len, r->rng_prompt);
		r->reused = sb_prompt_text(r->rng_prompt, sb_prompt_words(&b->size, in));
	}
	if (w->prefix_len > 0 && make_prefixes(r, e) < 0)
		return -ENOMEM;
	if (sb_workload_is_conversation(w) && !(r->conv = sb_conversations_new(&w->turns)))
		return sb_error_code(e, -ENOMEM, "out of memory");
	if (r->o.partial_path && !(r->rec = sb_recorder_open(r->o.partial_path, e)))
		return -EIO;
	return 0;
}

static void run_fini(run *r)
{
	sb_route_picker_fini(&r->router);
	sb_recorder_close(r->rec);
	sb_conversations_free(r->conv);
	free(r->reused);
	for (long i = 0; r->prefix && i < r->w->prefix_groups; i++)
		free(r->prefix[i]);
	free(r->prefix);
	free(r->group_of);
	free(r->in_len);
	free(r->out_len);
	free(r->slot_of);
	free(r->held);
	free(r->rep_req);
	free(r->rep_fail);
	if (r->rng_route)
		gsl_rng_free(r->rng_route);
	if (r->rng_prompt)
		gsl_rng_free(r->rng_prompt);
	if (r->rng_arrival)
		gsl_rng_free(r->rng_arrival);
	if (r->rng_think)
		gsl_rng_free(r->rng_think);
}

int sb_bench_measure(sb_bench *b, const sb_workload *w, const sb_bench_opts *o,
		     json_t **results, sb_error *e)
{
	*results = NULL;
	if (sb_workload_validate(w, e) < 0)
		return -EINVAL;
	int ret;
	if (o && ((ret = pin_check(b, w, o, e)) < 0 || (ret = trace_check(w, o, e)) < 0 ||
		  (ret = conversation_check(w, o, e)) < 0))
		return ret;
	run r;
	ret = run_init(&r, b, w, o, e);
	json_t *doc = NULL;
	if (ret == 0 && !(doc = sb_results_new("measured", target_json(b, &r.o), w)))
		ret = sb_error_code(e, -ENOMEM, "out of memory");
	for (r.li = 0; ret == 0 && r.li < w->n_levels; r.li++)
		ret = run_level(&r, doc, e);
	if (doc) {
		json_object_set_new(doc, "interrupted", json_boolean(ret == -EINTR));
		if (ret < 0 && ret != -EINTR) {
			json_decref(doc);
			doc = NULL;
		} else if (r.rec_failed) {
			json_object_set_new(doc, "partial_write_failed", json_true());
		}
	}
	*results = doc;
	run_fini(&r);
	return ret;
}

int sb_bench_measure_one_client(sb_bench *b, const sb_workload *w, const sb_bench_opts *o,
				long n, long warmup, unsigned long seed, const char *what,
				json_t **doc, json_t **level, sb_error *e)
{
	sb_workload pw = *w;
	pw.mode = SB_MODE_CONCURRENCY;
	pw.levels[0] = 1;
	pw.n_levels = 1;
	pw.requests = n;
	pw.duration_s = 0;
	pw.warmup = warmup;
	pw.seed = seed;
	pw.prefix_len = pw.prefix_groups = 0; /* the server's speed, not its cache */
	pw.turns = (sb_dist){ SB_DIST_DET, 0, 0 }; /* nor a conversation's */
	pw.think_s = (sb_dist){ SB_DIST_DET, 0, 0 };
	sb_bench_opts po = *o;
	po.progress = NULL;
	po.partial_path = NULL;
	*doc = NULL;
	int r = sb_bench_measure(b, &pw, &po, doc, e);
	*level = json_array_get(json_object_get(*doc, "levels"), 0);
	if (r == 0 && json_integer_value(json_object_get(*level, "requests_ok")) < 1)
		r = sb_error_set(e, "no request of the %s succeeded", what);
	if (r < 0) {
		json_decref(*doc);
		*doc = *level = NULL;
	}
	return r < 0 ? r : 0;
}
