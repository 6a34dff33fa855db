/* sim.c — discrete-event simulation of the engine model and of M/G/c
 * (see sim.h for the model and its approximations). */
#include "sim.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "event_heap.h"
#include "whist.h"

enum { EV_GEN = 1, EV_ARRIVE, EV_RUN_END, EV_READY, EV_DEPART };
enum { SL_FREE = 0, SL_JOIN, SL_PREFILL, SL_DECODE, SL_SERVE };
enum { SRC_OPEN = 0, SRC_CLOSED, SRC_REPLAY_OPEN, SRC_REPLAY_CLOSED };

/* A request in flight (in transit, queued or in a slot). */
typedef struct req {
	long id;        /* issue order */
	long idx;       /* replay: index in the caller's list; else -1 */
	int client;     /* closed loop: client; -1 open loop */
	int counted;
	long in_len, out_len;
	double t_sched, t_arr, t_join, t_first;
	double jit;     /* jitter of the first token's arrival at the client, s */
	long pos;       /* prompt tokens prefilled */
	long gen;       /* output tokens produced */
	int slot;       /* its slot (-1: none yet) */
	int want_slot;  /* replay: the slot it had on the server (-1: unknown) */
} req;

/* Invariant: state == SL_FREE <=> r == -1. JOIN slots wait until `ready`
 * to enter the batch; chunk is the prompt tokens planned in the current
 * prefill step. */
typedef struct slot {
	long r;
	int state;
	double ready;
	long chunk;
	int joiner; /* reached an idle engine in the instant another did first */
	double released; /* when it was last freed (-1: never); kv_cache per-slot */
} slot;

typedef struct sim {
	/* configuration */
	const sb_model *m;
	int S;
	int per_slot;   /* model.server.kv_cache == per-slot */
	int pin_stride; /* opts.pin_stride */
	long max_queue, batch_tokens;
	int service_mode;
	sb_dist service;
	double noise_cv, prefill_cv;
	sb_noise_kind noise_kind;
	double ovh_ms, ovh_tok_ms, ovh_sd_ms, admit_s;
	double split_prob;  /* model.scheduler.split_prob (0 without noise) */
	double split_crowded; /* .split_prob_crowded (0 without noise) */
	double idle_join_t; /* when the idle engine last took a request */
	double idle_t0;     /* when the engine last started from idle */
	int no_noise;
	long queue_cap;
	int src;
	const sb_workload *w;
	double level;
	double warmup_s;
	long warmup, to_count;
	double duration_s;
	double pct;
	/* replay */
	const sb_replay_req *rq;
	size_t rn;
	size_t *order;
	sb_replay_pred *pred;
	double think_s;
	/* randomness: load (arrivals, lengths, think) and server (noise,
	 * overhead, service) streams are separate, so two configurations run
	 * with one seed see the same offered load (common random numbers). */
	gsl_rng *rl, *rs;
	/* state */
	sb_heap *heap;
	req *reqs;
	long nreqs, capreqs;
	long *freereq;
	long nfreereq;
	long *q;        /* FIFO ring of request indices */
	size_t qcap, qhead, qlen;
	slot *slots;
	int *freeslot;
	int nfreeslot;
	int nbusy;
	int running, run_prefill, run_B, run_Bc, in_run_end;
	uint32_t run_gen;
	double run_t0, run_f, run_a, run_b, run_end;
	long run_k;
	/* the next open-loop arrival is kept outside the heap (one heap push
	 * and pop fewer per request): its time and argument, INFINITY if none */
	double next_gen_t;
	long next_gen_arg;
	long generated, counted_generated;
	int stop;
	int t0_set;
	double t0, t_end, now;
	/* statistics */
	sb_levelacc acc;
	int acc_ok;
	sb_whist *itl;
	double busy_area, busy_t, busy_area_t0, busy_area_end;
	long rejected, max_waiting;
	int diverged;
	sb_sim_rec *recs;
	size_t nrecs, caprecs;
	int keep_records;
	int oom;
} sim;

/* ---- helpers -------------------------------------------------------- */

void sb_sim_opts_init(sb_sim_opts *o)
{
	memset(o, 0, sizeof *o);
	o->queue_cap = 200000;
	o->service.kind = SB_DIST_EXP;
	o->service.a = 1.0;
}

void sb_sim_level_fini(sb_sim_level *l)
{
	if (!l)
		return;
	free(l->recs);
	l->recs = NULL;
	l->n_recs = 0;
}

/* Noise factor of mean 1 and coefficient of variation cv. */
static double noise_factor(sim *s, double cv)
{
	if (s->no_noise || !(cv > 0))
		return 1.0;
	switch (s->noise_kind) {
	case SB_NOISE_LOGNORMAL: {
		double s2 = log1p(cv * cv);
		return exp(gsl_ran_gaussian(s->rs, sqrt(s2)) - s2 / 2);
	}
	case SB_NOISE_GAMMA:
		return gsl_ran_gamma(s->rs, 1.0 / (cv * cv), cv * cv);
	default:
		return 1.0;
	}
}

/* Sum of k steps a, a+b, ..., a+(k-1)b (ms). */
static inline double series(double a, double b, long k)
{
	double kd = (double)k;
	return kd * a + b * kd * (kd - 1) / 2;
}

static void busy_change(sim *s, double t, int delta)
{
	s->busy_area += (double)s->nbusy * (t - s->busy_t);
	s->busy_t = t;
	s->nbusy += delta;
}

static long req_alloc(sim *s)
{
	if (s->nfreereq > 0)
		return s->freereq[--s->nfreereq];
	if (s->nreqs == s->capreqs) {
		long ncap = s->capreqs ? s->capreqs * 2 : 64;
		req *nr = realloc(s->reqs, (size_t)ncap * sizeof *nr);
		if (!nr)
			return -1;
		s->reqs = nr;
		long *nf = realloc(s->freereq, (size_t)ncap * sizeof *nf);
		if (!nf)
			return -1;
		s->freereq = nf;
		s->capreqs = ncap;
	}
	return s->nreqs++;
}

static void req_release(sim *s, long r)
{
	s->freereq[s->nfreereq++] = r;
}

static int q_push(sim *s, long r)
{
	if (s->qlen == s->qcap) {
		size_t ncap = s->qcap ? s->qcap * 2 : 64;
		long *nq = malloc(ncap * sizeof *nq);
		if (!nq)
			return -ENOMEM;
		for (size_t i = 0; i < s->qlen; i++)
			nq[i] = s->q[(s->qhead + i) % s->qcap];
		free(s->q);
		s->q = nq;
		s->qcap = ncap;
		s->qhead = 0;
	}
	s->q[(s->qhead + s->qlen) % s->qcap] = r;
	s->qlen++;
	return 0;
}

static long q_pop(sim *s)
{
	long r = s->q[s->qhead];
	s->qhead = (s->qhead + 1) % s->qcap;
	s->qlen--;
	return r;
}

static void push(sim *s, double t, int type, uint32_t gen, long arg)
{
	if (sb_heap_push(s->heap, t, type, gen, arg) < 0)
		s->oom = 1;
}

/* ---- engine runs ---------------------------------------------------- */

static void start_run(sim *s, double T);

/* Cuts the current decode run at the first step boundary at or after
 * `ready` (so a request ready then joins at that boundary). */
static void run_cut(sim *s, double ready)
{
	if (!s->running || !(ready < s->run_end))
		return;
	if (ready <= s->run_t0) {
		/* joins at the very start of the run: no step has happened
		 * yet, so plan the run again with it in the batch */
		s->run_gen++;
		s->running = 0;
		start_run(s, s->run_t0);
		return;
	}
	if (s->run_prefill || s->run_k <= 1)
		return;
	double a = s->run_a, b = s->run_b, f = s->run_f;
	double x = (ready - s->run_t0) * 1000.0 / f;
	double jd;
	if (b > 0) {
		double p = a - b / 2;
		jd = (-p + sqrt(p * p + 2 * b * x)) / b;
	} else {
		jd = x / a;
	}
	long j = (long)ceil(jd);
	if (j < 1)
		j = 1;
	if (j > s->run_k)
		j = s->run_k;
	/* fix rounding so that j is the first boundary >= ready */
	while (j > 1 && s->run_t0 + f * series(a, b, j - 1) / 1000.0 >= ready)
		j--;
	while (j < s->run_k && s->run_t0 + f * series(a, b, j) / 1000.0 < ready)
		j++;
	if (j >= s->run_k)
		return;
	s->run_k = j;
	s->run_end = s->run_t0 + f * series(a, b, j) / 1000.0;
	s->run_gen++;
	push(s, s->run_end, EV_RUN_END, s->run_gen, 0);
}

/* The decode part of a step with the current slots: *a its cost at the
 * first step (ms), *b what each further step adds (the contexts grow by a
 * token per decoding slot). Unified: one pass of decode_ms(B) plus
 * decode_kv(B) per token of the B contexts. Per-slot: the same for each run
 * of consecutive decoding slots, plus prefill_base_ms for each run of
 * consecutive slots whose prompt is in the step (*prompt_passes). */
static void decode_cost(const sim *s, int B, double sum_ctx, double *a, double *b,
			int *prompt_passes)
{
	const sb_model *m = s->m;
	*a = *b = 0;
	*prompt_passes = 0;
	if (!s->per_slot) {
		if (B > 0) {
			double kv = sb_model_decode_kv(m, B);
			*a = sb_model_decode_ms(m, B) + kv * sum_ctx;
			*b = kv * (double)B;
		}
		return;
	}
	for (int i = 0; i < s->S;) {
		int st = s->slots[i].state, j = i;
		int prompt = st == SL_PREFILL && s->slots[i].chunk > 0;
		if (st != SL_DECODE && !prompt) {
			i++;
			continue;
		}
		double ctx = 0;
		while (j < s->S && s->slots[j].state == st && (!prompt || s->slots[j].chunk > 0)) {
			const req *r = &s->reqs[s->slots[j].r];
			ctx += (double)(r->in_len + r->gen);
			j++;
		}
		if (prompt) {
			(*prompt_passes)++;
		} else {
			double kv = sb_model_decode_kv(m, j - i);
			*a += sb_model_decode_ms(m, j - i) + kv * ctx;
			*b += kv * (double)(j - i);
		}
		i = j;
	}
}

static void start_run(sim *s, double T)
{
	const sb_model *m = s->m;
	int B = 0, Bc = 0;
	double sum_ctx = 0, attn = 0, next_ready = INFINITY;
	long minrem = LONG_MAX, P = 0;
	int prompts = 0;
	for (int i = 0; i < s->S; i++) {
		slot *sl = &s->slots[i];
		if (sl->state == SL_JOIN && sl->ready <= T) {
			sl->state = SL_PREFILL;
			s->reqs[sl->r].t_join = T;
		}
		if (sl->state == SL_DECODE) {
			req *r = &s->reqs[sl->r];
			B++;
			Bc += r->counted;
			sum_ctx += (double)(r->in_len + r->gen);
			long rem = r->out_len - r->gen;
			if (rem < minrem)
				minrem = rem;
		} else if (sl->state == SL_JOIN) {
			if (sl->ready < next_ready)
				next_ready = sl->ready;
		}
	}
	for (int i = 0; i < s->S; i++) {
		slot *sl = &s->slots[i];
		if (sl->state != SL_PREFILL)
			continue;
		req *r = &s->reqs[sl->r];
		long budget = s->batch_tokens > 0 ? s->batch_tokens - P : LONG_MAX;
		long c = r->in_len - r->pos;
		if (c > budget)
			c = budget;
		sl->chunk = c;
		P += c;
		prompts += c > 0;
		attn += (double)c * (double)r->pos + (double)c * (double)(c - 1) / 2;
	}
	if (B == 0 && P == 0) {
		s->running = 0;
		if (next_ready < INFINITY)
			push(s, next_ready, EV_READY, 0, 0);
		return;
	}
	double a, b = 0, f;
	long k;
	double dec_a, dec_b;
	int prompt_passes;
	decode_cost(s, B, sum_ctx, &dec_a, &dec_b, &prompt_passes);
	if (P > 0) {
		double base = s->per_slot ? dec_a + prompt_passes * m->prefill_base_ms
			      : B > 0	  ? dec_a
					  : m->prefill_base_ms;
		/* prompts beyond the first of each prefill pass (unified: one) */
		int passes = s->per_slot ? prompt_passes : 1;
		a = base + m->per_prefill_token_ms * (double)P + m->per_prefill_attn_ms * attn +
		    m->prefill_per_prompt_ms * (double)(prompts - passes);
		k = 1;
		f = noise_factor(s, s->prefill_cv);
		s->run_prefill = 1;
	} else {
		a = dec_a;
		b = dec_b;
		k = minrem;
		f = noise_factor(s, s->noise_cv / sqrt((double)k));
		s->run_prefill = 0;
	}
	s->running = 1;
	s->run_B = B;
	s->run_Bc = Bc;
	s->run_t0 = T;
	s->run_a = a;
	s->run_b = b;
	s->run_f = f;
	s->run_k = k;
	s->run_end = T + f * series(a, b, k) / 1000.0;
	s->run_gen++;
	push(s, s->run_end, EV_RUN_END, s->run_gen, 0);
	if (next_ready < s->run_end)
		run_cut(s, next_ready);
}

/* ---- request lifecycle ---------------------------------------------- */

/* When the client sees the first token: the server's time plus the
 * request's jitter, never after the last token (t). */
static double first_seen(const req *r, double t)
{
	double f = r->t_first + r->jit;
	return f < t ? f : t;
}

static void finish_req(sim *s, long ri, double t, int rejected)
{
	req *r = &s->reqs[ri];
	if (r->counted) {
		double ttft = rejected ? NAN : (first_seen(r, t) - r->t_sched) * 1000.0;
		double e2e = (t - r->t_sched) * 1000.0;
		double wait = rejected ? NAN : (r->t_join - r->t_arr) * 1000.0;
		long outt = s->service_mode ? 1 : r->out_len;
		sb_reqrec rec = {
			.id = r->id,
			.t_scheduled_s = r->t_sched - s->t0,
			.t_sent_s = r->t_sched - s->t0,
			.t_done_s = t - s->t0,
			.ttft_ms = ttft,
			.e2e_ms = e2e,
			.wait_ms = wait,
			.itl_ms = NULL,
			.n_itl = 0,
			.prompt_tokens = s->service_mode ? -1 : r->in_len,
			.output_tokens = rejected ? 0 : outt,
			.err_class = rejected ? "rejected" : NULL,
			.err_msg = rejected ? "queue full (max_queue reached)" : NULL,
		};
		sb_levelacc_add(&s->acc, &rec);
		sb_levelacc_inflight(&s->acc, t - s->t0, -1);
		busy_change(s, t, 0);
		s->busy_area_end = s->busy_area;
		if (t > s->t_end)
			s->t_end = t;
		if (s->keep_records) {
			if (s->nrecs == s->caprecs) {
				size_t nc = s->caprecs ? s->caprecs * 2 : 256;
				sb_sim_rec *nr = realloc(s->recs, nc * sizeof *nr);
				if (!nr) {
					s->oom = 1;
				} else {
					s->recs = nr;
					s->caprecs = nc;
				}
			}
			if (s->nrecs < s->caprecs) {
				sb_sim_rec *o = &s->recs[s->nrecs++];
				o->id = r->id;
				o->t_sched_s = r->t_sched - s->t0;
				o->t_done_s = t - s->t0;
				o->ttft_ms = ttft;
				o->e2e_ms = e2e;
				o->wait_ms = wait;
				o->tpot_ms = (!rejected && outt >= 2)
						     ? (e2e - ttft) / (double)(outt - 1) : NAN;
				o->prompt_tokens = rec.prompt_tokens;
				o->output_tokens = rec.output_tokens;
				o->rejected = rejected;
				o->slot = r->slot;
			}
		}
	}
	if (s->pred && r->idx >= 0) {
		sb_replay_pred *p = &s->pred[r->idx];
		p->t_sent_s = r->t_sched;
		p->t_done_s = t;
		p->ttft_ms = rejected ? NAN : (first_seen(r, t) - r->t_sched) * 1000.0;
		p->e2e_ms = (t - r->t_sched) * 1000.0;
		p->wait_ms = rejected ? NAN : (r->t_join - r->t_arr) * 1000.0;
		p->tpot_ms = (!rejected && r->out_len >= 2)
				     ? (p->e2e_ms - p->ttft_ms) / (double)(r->out_len - 1) : NAN;
		p->rejected = rejected;
	}
	if (r->client >= 0 && !s->stop) {
		double think = 0;
		if (s->src == SRC_CLOSED)
			think = sb_dist_sample(&s->w->think_s, s->rl);
		else
			think = s->think_s;
		if (!(think > 0))
			think = 0;
		push(s, t + think, EV_GEN, 0, r->client);
	}
	req_release(s, ri);
}

/* Whether a request arriving with others at an idle engine misses their
 * first step: model.scheduler.split_prob, or split_prob_crowded when the
 * group left requests waiting in the queue. */
static int misses_first_step(sim *s)
{
	double p = s->qlen > 0 ? s->split_crowded : s->split_prob;
	return p > 0 && gsl_rng_uniform(s->rs) < p;
}

/* The idle engine starts at t on the requests that reached it at t: each
 * one after the first misses that step with misses_first_step's chance
 * (drawn now, when the whole group has arrived and the queue holds those
 * left over): ready a nanosecond late, it waits for the step to end. */
static void draw_joiners(sim *s, double t)
{
	for (int i = 0; i < s->S; i++) {
		slot *sl = &s->slots[i];
		if (sl->state == SL_JOIN && sl->joiner && misses_first_step(s))
			sl->ready = t + 1e-9;
		sl->joiner = 0;
	}
}

/* Gives slot si to request ri at t; it enters the batch at `ready`. from_net:
 * it just arrived (so it may miss an idle engine's first step, see
 * split_prob), rather than being launched from the queue. */
static void assign(sim *s, int si, long ri, double t, double ready, int from_net)
{
	slot *sl = &s->slots[si];
	req *r = &s->reqs[ri];
	sl->r = ri;
	r->slot = si;
	busy_change(s, t, +1);
	if (s->service_mode) {
		sl->state = SL_SERVE;
		r->t_join = t;
		double svc = sb_dist_sample(&s->service, s->rs);
		if (!(svc > 0))
			svc = 0;
		push(s, t + svc, EV_DEPART, 0, si);
		return;
	}
	sl->state = SL_JOIN;
	sl->ready = ready;
	sl->chunk = 0;
	sl->joiner = 0;
	r->pos = 0;
	r->gen = 0;
	if (s->in_run_end)
		return; /* the next run is planned right after */
	if (s->running) {
		/* sent with the requests an idle engine just started on, a
		 * moment later (a longer prompt's overhead): it joins their
		 * first step, unless it is one of the split_prob that miss it */
		if (from_net && s->run_prefill && s->run_t0 == s->idle_t0 &&
		    ready - s->run_t0 <= SB_MODEL_JOIN_WINDOW_S && !misses_first_step(s))
			sl->ready = ready = s->run_t0;
		run_cut(s, ready);
	} else {
		/* an idle engine starts after every event of this instant, so
		 * requests that arrive together are prefilled together (as
		 * llama.cpp batches them) — but each one after the first may
		 * miss that step (draw_joiners, when the engine starts) */
		sl->joiner = from_net && s->idle_join_t == t;
		s->idle_join_t = t;
		push(s, ready > t ? ready : t, EV_READY, 0, 0);
	}
}

/* Takes a free slot (nfreeslot > 0): unified, the top of the stack (the
 * lowest-numbered at the start); pinned, the lowest of 0, k, 2k...;
 * per-slot, llama.cpp's choice: the one released longest ago, ties to the
 * highest id. A replayed request whose measured slot is free gets that one. */
static int take_free_slot(sim *s, int want)
{
	int top = s->nfreeslot - 1, best = top;
	for (int i = 0; want >= 0 && i <= top; i++) {
		if (s->freeslot[i] == want) {
			s->freeslot[i] = s->freeslot[top];
			s->nfreeslot--;
			return want;
		}
	}
	if (s->pin_stride > 0) {
		/* pinned: the lowest free slot among 0, k, 2k... (any free one
		 * when none of those is) */
		int k = s->pin_stride;
		for (int i = 0; i <= top; i++) {
			int a = s->freeslot[i], b = s->freeslot[best];
			if ((a % k == 0) != (b % k == 0) ? a % k == 0 : a < b)
				best = i;
		}
	} else if (s->per_slot) {
		for (int k = 0; k < top; k++) {
			const slot *a = &s->slots[s->freeslot[k]], *b = &s->slots[s->freeslot[best]];
			if (a->released < b->released ||
			    (a->released == b->released && s->freeslot[k] > s->freeslot[best]))
				best = k;
		}
	}
	int si = s->freeslot[best];
	s->freeslot[best] = s->freeslot[top];
	s->nfreeslot--;
	return si;
}

static void free_slot(sim *s, int si, double t)
{
	slot *sl = &s->slots[si];
	sl->r = -1;
	sl->state = SL_FREE;
	sl->released = t;
	busy_change(s, t, -1);
	if (s->qlen > 0 && !s->per_slot && !s->pin_stride) {
		long ri = q_pop(s);
		assign(s, si, ri, t, t + s->admit_s, 0);
		return;
	}
	s->freeslot[s->nfreeslot++] = si;
	if (s->qlen > 0) {
		long ri = q_pop(s);
		assign(s, take_free_slot(s, s->reqs[ri].want_slot), ri, t, t + s->admit_s, 0);
	}
}

static void arrive(sim *s, long ri, double t)
{
	req *r = &s->reqs[ri];
	r->t_arr = t;
	if (s->nfreeslot > 0) {
		assign(s, take_free_slot(s, r->want_slot), ri, t, t, 1);
		return;
	}
	if (s->max_queue >= 0 && (long)s->qlen >= s->max_queue) {
		s->rejected += r->counted;
		finish_req(s, ri, t, 1);
		return;
	}
	if (q_push(s, ri) < 0) {
		s->oom = 1;
		return;
	}
	if ((long)s->qlen > s->max_waiting)
		s->max_waiting = (long)s->qlen;
}

static void complete(sim *s, int si, double t)
{
	long ri = s->slots[si].r;
	finish_req(s, ri, t, 0);
	free_slot(s, si, t);
}

static void on_run_end(sim *s, double T)
{
	long k = s->run_k;
	double dur = s->run_f * series(s->run_a, s->run_b, k);
	s->running = 0;
	s->in_run_end = 1;
	/* ITL: the run's k*B gaps as one weighted value (counted requests) */
	if (s->run_Bc > 0)
		sb_whist_add(s->itl, dur / (double)k, (double)k * (double)s->run_Bc);
	for (int i = 0; i < s->S; i++) {
		slot *sl = &s->slots[i];
		if (sl->state != SL_DECODE)
			continue;
		req *r = &s->reqs[sl->r];
		r->gen += k;
		if (r->gen >= r->out_len)
			complete(s, i, T);
	}
	if (s->run_prefill) {
		for (int i = 0; i < s->S; i++) {
			slot *sl = &s->slots[i];
			if (sl->state != SL_PREFILL)
				continue;
			req *r = &s->reqs[sl->r];
			r->pos += sl->chunk;
			sl->chunk = 0;
			if (r->pos >= r->in_len) {
				r->t_first = T;
				r->gen = 1;
				sl->state = SL_DECODE;
				if (r->gen >= r->out_len)
					complete(s, i, T);
			}
		}
	}
	s->in_run_end = 0;
	start_run(s, T);
}

/* The next request of the source, for on_gen(s, ., arg): *idx its index in
 * the replayed list (-1 when drawn), *in_len and *out_len its lengths (drawn
 * from s->rl, input first, for a generated workload). Returns 0, or -1 with
 * s->stop set when a closed replay has issued them all. */
static inline int gen_pick(sim *s, long arg, long *idx, long *in_len, long *out_len)
{
	*idx = -1;
	if (s->src == SRC_REPLAY_OPEN) {
		*idx = (long)s->order[arg];
	} else if (s->src == SRC_REPLAY_CLOSED) {
		if ((size_t)s->generated >= s->rn) {
			s->stop = 1;
			return -1;
		}
		*idx = s->generated;
	}
	if (*idx >= 0) {
		*in_len = s->rq[*idx].prompt_tokens;
		*out_len = s->rq[*idx].output_tokens;
	} else if (s->service_mode) {
		*in_len = *out_len = 1; /* M/G/c: no tokens */
	} else {
		*in_len = sb_workload_len(&s->w->input_len, s->rl);
		*out_len = sb_workload_len(&s->w->output_len, s->rl);
	}
	return 0;
}

/* Counts a measured request issued at t: the first one starts the measured
 * window (s->t0); the last one to count stops the run. */
static inline void gen_count(sim *s, double t)
{
	if (!s->t0_set) {
		s->t0_set = 1;
		s->t0 = t;
		busy_change(s, t, 0);
		s->busy_area_t0 = s->busy_area;
		s->busy_area_end = s->busy_area;
		s->t_end = t;
	}
	s->counted_generated++;
	sb_levelacc_inflight(&s->acc, t - s->t0, +1);
	if (s->duration_s <= 0 && s->counted_generated >= s->to_count)
		s->stop = 1;
}

/* Open loop, after the arrival at t (at position pos of a replay's order):
 * sets the next arrival, or stops a generated workload that diverged. */
static inline void gen_schedule_next(sim *s, double t, long pos)
{
	/* divergence bound: requests waiting, counting those still on
	 * their way to the server (at huge rates most are in transit) */
	long outstanding = s->nreqs - s->nfreereq;
	if (s->src == SRC_OPEN && outstanding - s->S >= s->queue_cap) {
		s->diverged = 1;
		s->stop = 1;
	} else if (s->src == SRC_OPEN) {
		s->next_gen_t = t + sb_workload_gap_s(s->w, s->level, s->rl);
		s->next_gen_arg = -1;
	} else if ((size_t)pos + 1 < s->rn) {
		long nx = pos + 1;
		s->next_gen_t = s->rq[s->order[nx]].t_sched_s;
		s->next_gen_arg = nx;
	}
}

/* Sends request ri, issued at t, on its way to the server: it arrives after
 * the mean overhead, its first token's jitter drawn from s->rs. */
static inline void gen_send(sim *s, long ri, double t)
{
	/* The request path takes the mean overhead; its scatter (what
	 * calibration measures: sd of TTFT - server prompt time) is
	 * jitter of the first token's arrival at the client and does not
	 * move the server's schedule: requests sent together reach the
	 * server together (in the measurements, pairs sent within
	 * 0.3 ms share their prefill step). */
	req *r = &s->reqs[ri];
	double ovh = s->ovh_ms + s->ovh_tok_ms * (double)r->in_len, jit = 0;
	if (!(ovh > 0))
		ovh = 0;
	if (!s->no_noise && s->ovh_sd_ms > 0)
		jit = gsl_ran_gaussian(s->rs, s->ovh_sd_ms);
	if (jit < -ovh)
		jit = -ovh;
	r->jit = jit / 1000.0;
	push(s, t + ovh / 1000.0, EV_ARRIVE, 0, ri);
}

/* Issues a new request at time t (open loop arrival or a client's send);
 * arg: the client (closed loop), the position in s->order (open replay), or
 * -1 (open loop). */
static void on_gen(sim *s, double t, long arg)
{
	if (s->stop)
		return;
	long idx, in_len, out_len;
	if (gen_pick(s, arg, &idx, &in_len, &out_len) < 0)
		return;
	long id = s->generated;
	int counted = id >= s->warmup && t >= s->warmup_s;
	if (counted && s->duration_s > 0 && s->t0_set && t >= s->t0 + s->duration_s) {
		s->stop = 1;
		return;
	}
	long ri = req_alloc(s);
	if (ri < 0) {
		s->oom = 1;
		return;
	}
	s->generated++;
	req *r = &s->reqs[ri];
	r->id = id;
	r->idx = idx;
	r->client = (s->src == SRC_CLOSED || s->src == SRC_REPLAY_CLOSED) ? (int)arg : -1;
	r->counted = counted;
	r->in_len = in_len;
	r->out_len = out_len;
	r->t_sched = t;
	r->t_arr = r->t_join = r->t_first = t;
	r->pos = r->gen = 0;
	r->jit = 0;
	r->slot = -1;
	r->want_slot = idx >= 0 && s->rq[idx].slot < s->S ? s->rq[idx].slot : -1;
	if (counted)
		gen_count(s, t);
	if (s->src == SRC_REPLAY_CLOSED && (size_t)s->generated >= s->rn)
		s->stop = 1;
	if (!s->stop && (s->src == SRC_OPEN || s->src == SRC_REPLAY_OPEN))
		gen_schedule_next(s, t, arg);
	if (s->service_mode)
		arrive(s, ri, t);
	else
		gen_send(s, ri, t);
}

/* ---- driver ------------------------------------------------------------ */

static void sim_free(sim *s)
{
	sb_heap_free(s->heap);
	free(s->reqs);
	free(s->freereq);
	free(s->q);
	free(s->slots);
	free(s->freeslot);
	sb_whist_free(s->itl);
	if (s->acc_ok)
		sb_levelacc_fini(&s->acc);
	if (s->rl)
		gsl_rng_free(s->rl);
	if (s->rs)
		gsl_rng_free(s->rs);
	free(s->recs);
	free(s->order);
}

/* Sets up everything common; the caller fills the source fields. */
static int sim_init(sim *s, const sb_model *m, int service_mode,
		    const sb_dist *service, int no_noise, unsigned long seed,
		    const sb_slo *slo, sb_error *e)
{
	memset(s, 0, sizeof *s);
	s->m = m;
	s->S = m->slots;
	s->max_queue = m->max_queue;
	s->batch_tokens = m->batch_tokens;
	s->service_mode = service_mode;
	if (service)
		s->service = *service;
	s->noise_cv = m->noise_cv;
	s->prefill_cv = m->noise_prefill_cv;
	s->noise_kind = m->noise_kind;
	s->ovh_ms = m->overhead_ms;
	s->ovh_sd_ms = m->overhead_sd_ms;
	s->ovh_tok_ms = m->overhead_per_token_ms;
	s->admit_s = m->admit_delay_ms / 1000.0;
	s->no_noise = no_noise;
	s->split_prob = no_noise ? 0 : m->split_prob;
	s->split_crowded = no_noise ? 0 : m->split_prob_crowded;
	s->idle_join_t = -INFINITY;
	s->idle_t0 = -INFINITY;
	s->queue_cap = LONG_MAX;
	s->next_gen_t = INFINITY;
	s->pct = (slo && slo->percentile > 0 && slo->percentile < 100) ? slo->percentile : 99;
	s->heap = sb_heap_new();
	s->slots = calloc((size_t)s->S, sizeof *s->slots);
	s->freeslot = calloc((size_t)s->S, sizeof *s->freeslot);
	s->itl = sb_whist_new();
	s->rl = sb_rng_new((unsigned long)sb_seed_mix((uint64_t)seed ^ 0x1111));
	s->rs = sb_rng_new((unsigned long)sb_seed_mix((uint64_t)seed ^ 0x2222));
	if (!s->heap || !s->slots || !s->freeslot || !s->itl || !s->rl || !s->rs)
		return sb_error_code(e, -ENOMEM, "out of memory");
	if (sb_levelacc_init(&s->acc, slo) < 0)
		return sb_error_code(e, -ENOMEM, "out of memory");
	s->acc_ok = 1;
	s->per_slot = !service_mode && m->kv_cache == SB_KV_PER_SLOT;
	for (int i = 0; i < s->S; i++) {
		s->slots[i].r = -1;
		/* per-slot: which slot was released longest ago is not known
		 * at a level's start (the server's history decides it), so
		 * the order is drawn; it sets which slots requests share */
		s->slots[i].released = s->per_slot ? -1 - gsl_rng_uniform(s->rs) : -1;
		/* pushed in reverse so slot 0 is taken first */
		s->freeslot[s->nfreeslot++] = s->S - 1 - i;
	}
	return 0;
}

static int sim_loop(sim *s, sb_error *e)
{
	sb_event ev;
	for (;;) {
		/* an open-loop arrival due no later than the earliest event goes
		 * first (a fixed rule, so ties are deterministic) */
		const sb_event *top = sb_heap_peek(s->heap);
		if (s->next_gen_t < INFINITY && (!top || s->next_gen_t <= top->t)) {
			double t = s->next_gen_t;
			s->next_gen_t = INFINITY;
			s->now = t;
			on_gen(s, t, s->next_gen_arg);
			if (s->oom)
				return sb_error_code(e, -ENOMEM, "out of memory during simulation");
			continue;
		}
		if (!sb_heap_pop(s->heap, &ev))
			break;
		s->now = ev.t;
		switch (ev.type) {
		case EV_GEN:
			on_gen(s, ev.t, ev.arg);
			break;
		case EV_ARRIVE:
			arrive(s, ev.arg, ev.t);
			break;
		case EV_RUN_END:
			if (s->running && ev.gen == s->run_gen)
				on_run_end(s, ev.t);
			break;
		case EV_READY:
			if (!s->running) {
				if (ev.t == s->idle_join_t)
					draw_joiners(s, ev.t);
				s->idle_t0 = ev.t;
				start_run(s, ev.t);
			}
			break;
		case EV_DEPART:
			/* M/G/c: the whole response arrives at once */
			s->reqs[s->slots[ev.arg].r].t_first = ev.t;
			complete(s, (int)ev.arg, ev.t);
			break;
		default:
			assert(0);
		}
		if (s->oom)
			return sb_error_code(e, -ENOMEM, "out of memory during simulation");
	}
	return 0;
}

/* Fills the level summary from the accumulators. */
static void sim_finish(sim *s, double level, sb_mode mode, sb_sim_level *out)
{
	double window = s->t0_set ? s->t_end - s->t0 : 0;
	out->ttft_pct_ms = sb_hist_quantile(&s->acc.ttft, s->pct / 100.0);
	out->tpot_pct_ms = sb_hist_quantile(&s->acc.tpot, s->pct / 100.0);
	sb_levelacc_finish(&s->acc, level, mode, window > 0 ? window : -1, &out->sum);
	if (!s->service_mode)
		sb_whist_summary(s->itl, &out->sum.itl_ms);
	out->utilization = window > 0
		? (s->busy_area_end - s->busy_area_t0) / ((double)s->S * window) : NAN;
	out->rejected = s->rejected;
	out->generated = s->generated;
	out->max_waiting = s->max_waiting;
	out->diverged = s->diverged;
	out->sim_end_s = s->now;
}

int sb_sim_run_level(const sb_model *m, const sb_sim_opts *o,
		     const sb_workload *w, double level, unsigned long seed,
		     sb_sim_level *out, sb_error *e)
{
	memset(out, 0, sizeof *out);
	if (sb_model_validate(m, e) < 0)
		return -EINVAL;
	if (!(level > 0) || !isfinite(level))
		return sb_error_set(e, "level %g must be a positive number", level);
	if (w->mode == SB_MODE_CONCURRENCY && level > 1e6)
		return sb_error_set(e, "concurrency %g is too large (at most 1000000)", level);
	if (w->requests < 1 && !(w->duration_s > 0))
		return sb_error_set(e, "requests %ld must be at least 1", w->requests);
	if (o->service_mode && !(sb_dist_mean(&o->service) > 0))
		return sb_error_set(e, "service time distribution must have a positive mean");
	sim s;
	int rc = sim_init(&s, m, o->service_mode, &o->service, o->no_noise, seed,
			  &w->slo, e);
	if (rc < 0)
		goto out;
	s.w = w;
	s.level = level;
	s.pin_stride = o->service_mode ? 0 : o->pin_stride;
	s.warmup = w->warmup > 0 ? w->warmup : 0;
	s.warmup_s = o->warmup_s > 0 ? o->warmup_s : 0;
	s.to_count = w->requests;
	s.duration_s = w->duration_s;
	s.keep_records = o->keep_records;
	s.queue_cap = o->queue_cap > 0 ? o->queue_cap : 200000;
	if (w->mode == SB_MODE_RATE) {
		s.src = SRC_OPEN;
		s.next_gen_t = 0.0;
		s.next_gen_arg = -1;
	} else {
		s.src = SRC_CLOSED;
		long c = (long)level;
		if ((double)c != level) {
			rc = sb_error_set(e, "concurrency %g must be a whole number", level);
			goto out;
		}
		for (long i = 0; i < c; i++)
			push(&s, 0.0, EV_GEN, 0, i);
	}
	rc = sim_loop(&s, e);
	if (rc < 0)
		goto out;
	sim_finish(&s, level, w->mode, out);
	out->seed = seed;
	out->recs = s.recs;
	out->n_recs = s.nrecs;
	s.recs = NULL;
out:
	sim_free(&s);
	return rc;
}

int sb_sim_capacity(const sb_model *m, const sb_sim_opts *o,
		    const sb_workload *w, double *mu, sb_error *e)
{
	if (o->service_mode) {
		double mean = sb_dist_mean(&o->service);
		if (!(mean > 0))
			return sb_error_set(e, "service time distribution must have a positive mean");
		*mu = m->slots / mean;
		return 0;
	}
	sb_model mc = *m;
	mc.fit = NULL;
	mc.max_queue = -1;
	sb_workload wc = *w;
	wc.mode = SB_MODE_CONCURRENCY;
	wc.think_s.kind = SB_DIST_DET;
	wc.think_s.a = 0;
	wc.duration_s = 0;
	wc.requests = 400L * m->slots < 4000 ? 4000 : 400L * m->slots;
	wc.warmup = 4L * m->slots;
	wc.slo.ttft_ms = wc.slo.tpot_ms = 0;
	sb_sim_opts oc = *o;
	oc.keep_records = 0;
	oc.warmup_s = 0;
	sb_sim_level lv;
	int rc = sb_sim_run_level(&mc, &oc, &wc, 2.0 * m->slots, w->seed ^ 0x5a5aUL, &lv, e);
	if (rc < 0)
		return rc;
	*mu = lv.sum.req_s;
	sb_sim_level_fini(&lv);
	return 0;
}

/* ---- replay ------------------------------------------------------------ */

static const sb_replay_req *sort_base;

static int cmp_sched(const void *x, const void *y)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	double a = sort_base[i].t_sched_s, b = sort_base[j].t_sched_s;
	if (a < b)
		return -1;
	if (a > b)
		return 1;
	return i < j ? -1 : (i > j);
}

int sb_sim_replay(const sb_model *m, const sb_replay_opts *ro,
		  const sb_replay_req *reqs, size_t n, sb_replay_pred *pred,
		  sb_level *lv, sb_error *e)
{
	if (sb_model_validate(m, e) < 0)
		return -EINVAL;
	if (n == 0)
		return sb_error_set(e, "replay: no requests");
	for (size_t i = 0; i < n; i++) {
		if (reqs[i].prompt_tokens < 1 || reqs[i].output_tokens < 1)
			return sb_error_set(e, "replay: request %zu has %ld prompt / %ld output tokens (need >= 1)",
					    i, reqs[i].prompt_tokens, reqs[i].output_tokens);
		if (ro->mode == SB_MODE_RATE && (!isfinite(reqs[i].t_sched_s) || reqs[i].t_sched_s < 0))
			return sb_error_set(e, "replay: request %zu has send time %g (need a finite value >= 0)",
					    i, reqs[i].t_sched_s);
	}
	if (ro->mode == SB_MODE_CONCURRENCY && ro->concurrency < 1)
		return sb_error_set(e, "replay: concurrency %d must be at least 1", ro->concurrency);
	sim s;
	int rc = sim_init(&s, m, 0, NULL, ro->no_noise, ro->seed, NULL, e);
	if (rc < 0)
		goto out;
	s.rq = reqs;
	s.rn = n;
	s.pred = pred;
	s.to_count = (long)n;
	s.think_s = ro->think_s > 0 ? ro->think_s : 0;
	for (size_t i = 0; i < n; i++) {
		pred[i].t_sent_s = pred[i].t_done_s = NAN;
		pred[i].ttft_ms = pred[i].e2e_ms = pred[i].tpot_ms = pred[i].wait_ms = NAN;
		pred[i].rejected = 0;
	}
	double level;
	if (ro->mode == SB_MODE_RATE) {
		s.src = SRC_REPLAY_OPEN;
		s.order = malloc(n * sizeof *s.order);
		if (!s.order) {
			rc = sb_error_code(e, -ENOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			s.order[i] = i;
		sort_base = reqs;
		qsort(s.order, n, sizeof *s.order, cmp_sched);
		sort_base = NULL;
		s.next_gen_t = reqs[s.order[0]].t_sched_s;
		s.next_gen_arg = 0;
		double span = reqs[s.order[n - 1]].t_sched_s - reqs[s.order[0]].t_sched_s;
		level = span > 0 ? (double)(n - 1) / span : 0;
	} else {
		s.src = SRC_REPLAY_CLOSED;
		for (int i = 0; i < ro->concurrency; i++)
			push(&s, 0.0, EV_GEN, 0, i);
		level = ro->concurrency;
	}
	rc = sim_loop(&s, e);
	if (rc < 0)
		goto out;
	/* pred times are absolute (the caller's clock for open loop) */
	if (lv) {
		sb_sim_level tmp;
		memset(&tmp, 0, sizeof tmp);
		sim_finish(&s, level, ro->mode, &tmp);
		*lv = tmp.sum;
	}
out:
	sim_free(&s);
	return rc;
}
