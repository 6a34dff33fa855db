/* sim.c — discrete-event simulation of the engine model and of M/G/c
 * (see sim.h for the model and its approximations): the events (engine
 * runs, the request lifecycle) and their loop. sim_run.c sets a run up,
 * sums it, and replays given requests. */
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

#include "core/slotctx.h"
#include "event_heap.h"
#include "router.h"
#include "stepnoise.h"
#include "timers.h"
#include "whist.h"
#include "sim_internal.h"

/* ---- helpers -------------------------------------------------------- */

void sb_sim_opts_init(sb_sim_opts *o)
{
	memset(o, 0, sizeof *o);
	o->queue_cap = 200000;
	o->service.kind = SB_DIST_EXP;
	o->service.a = 1.0;
	sb_fleet_init(&o->fleet);
}

const char *sb_sim_reject_msg(int why)
{
	return why == SB_SIM_REJECT_TOO_LONG ? "prompt exceeds the slot's context"
					     : "queue full (max_queue reached)";
}

void sb_sim_level_fini(sb_sim_level *l)
{
	if (!l)
		return;
	free(l->recs);
	l->recs = NULL;
	l->n_recs = 0;
	free(l->replicas);
	l->replicas = NULL;
	l->n_replicas = 0;
}

/* Noise factor of a run of k steps of coefficient of variation cv each:
 * mean 1, cv/sqrt(k) (stepnoise.h). */
static double noise_factor(sim *s, const server *v, double cv, long k)
{
	if (s->no_noise)
		return 1.0;
	return sb_stepnoise_draw(&s->noise, v->noise_kind, cv, k, s->rs);
}

/* Sum of k steps a, a+b, ..., a+(k-1)b (ms). */
static inline double series(double a, double b, long k)
{
	double kd = (double)k;
	return kd * a + b * kd * (kd - 1) / 2;
}

/* Server v's busy slot count changes by delta at t. The first change at or
 * after the window's end so far (s->t_end) keeps the busy time up to it. */
static void busy_change(const sim *s, server *v, double t, int delta)
{
	if (v->busy_t <= s->t_end && s->t_end <= t) {
		v->busy_area_x = v->busy_area + (double)v->nbusy * (s->t_end - v->busy_t);
		v->x_t = s->t_end;
	}
	v->busy_area += (double)v->nbusy * (t - v->busy_t);
	v->busy_t = t;
	v->nbusy += delta;
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

static int q_push(server *v, long r)
{
	if (v->qlen == v->qcap) {
		size_t ncap = v->qcap ? v->qcap * 2 : 64;
		long *nq = malloc(ncap * sizeof *nq);
		if (!nq)
			return -ENOMEM;
		for (size_t i = 0; i < v->qlen; i++)
			nq[i] = v->q[(v->qhead + i) % v->qcap];
		free(v->q);
		v->q = nq;
		v->qcap = ncap;
		v->qhead = 0;
	}
	v->q[(v->qhead + v->qlen) % v->qcap] = r;
	v->qlen++;
	return 0;
}

/* Puts r at the head of the queue (a preempted request). */
static int q_push_front(server *v, long r)
{
	if (q_push(v, r) < 0)
		return -ENOMEM;
	for (size_t k = v->qlen - 1; k > 0; k--)
		v->q[(v->qhead + k) % v->qcap] = v->q[(v->qhead + k - 1) % v->qcap];
	v->q[v->qhead] = r;
	return 0;
}

static long q_pop(server *v)
{
	long r = v->q[v->qhead];
	v->qhead = (v->qhead + 1) % v->qcap;
	v->qlen--;
	return r;
}

/* Removes the queue's i-th request (0: the head) and returns it. */
static long q_remove_at(server *v, size_t i)
{
	long r = v->q[(v->qhead + i) % v->qcap];
	for (size_t k = i; k + 1 < v->qlen; k++)
		v->q[(v->qhead + k) % v->qcap] = v->q[(v->qhead + k + 1) % v->qcap];
	v->qlen--;
	return r;
}

int sim_queue_remove(server *v, long ri)
{
	for (size_t i = 0; i < v->qlen; i++) {
		if (v->q[(v->qhead + i) % v->qcap] == ri) {
			q_remove_at(v, i);
			return 1;
		}
	}
	return 0;
}

/* Live (llama.cpp's id_slot): a request that asked for a slot waits for
 * that one while it is held. */
static int waits_for_its_slot(const sim *s, const server *v, const req *r)
{
	return s->src == SRC_LIVE && r->want_slot >= 0 && v->slots[r->want_slot].state != SL_FREE;
}

/* The queued request that takes slot si as it frees: the head; live, the
 * first that asked for si or for no slot (llama.cpp defers a task whose
 * slot is busy and goes on with the others). -1: none. */
static long q_take(const sim *s, server *v, int si)
{
	if (s->src != SRC_LIVE)
		return v->qlen ? q_pop(v) : -1;
	for (size_t i = 0; i < v->qlen; i++) {
		int want = s->reqs[v->q[(v->qhead + i) % v->qcap]].want_slot;
		if (want < 0 || want == si)
			return q_remove_at(v, i);
	}
	return -1;
}

/* ---- engine runs ---------------------------------------------------- */

static void assign(sim *s, server *v, int si, long ri, double t, double ready, int from_net);
static int take_free_slot(server *v, int want, int pin_stride, long group);
static void complete(sim *s, server *v, int si, double t);

static void start_run(sim *s, server *v, double T);

double sim_run_boundary(const server *v, long j)
{
	return v->run_t0 + v->run_f * series(v->run_a, v->run_b, j) / 1000.0;
}

long sim_run_first_boundary(const server *v, double t)
{
	double a = v->run_a, b = v->run_b;
	double x = (t - v->run_t0) * 1000.0 / v->run_f;
	double jd;
	if (b > 0) {
		double p = a - b / 2;
		jd = (-p + sqrt(p * p + 2 * b * x)) / b;
	} else {
		jd = x / a;
	}
	long j = !(jd < (double)v->run_k) ? v->run_k : jd < 1 ? 1 : (long)ceil(jd);
	/* fix rounding so that j is the first boundary >= t */
	while (j > 1 && sim_run_boundary(v, j - 1) >= t)
		j--;
	while (j < v->run_k && sim_run_boundary(v, j) < t)
		j++;
	return j;
}

void sim_run_cut(sim *s, server *v, double ready)
{
	if (!v->running || !(ready < v->run_end))
		return;
	if (ready <= v->run_t0) {
		/* joins at the very start of the run: no step has happened
		 * yet, so plan the run again with it in the batch */
		v->running = 0;
		start_run(s, v, v->run_t0);
		return;
	}
	if (v->run_prefill || v->run_k <= 1)
		return;
	long j = sim_run_first_boundary(v, ready);
	if (j >= v->run_k)
		return;
	v->run_k = j;
	v->run_end = sim_run_boundary(v, j);
	sb_timers_set(s->timers, (int)(v - s->srv), v->run_end, sb_heap_take_seq(s->heap));
}

/* The decode part of a step with the current slots: *a its cost at the
 * first step (ms), *b what each further step adds (the contexts grow by a
 * token per decoding slot). Unified: one pass of decode_ms(B) plus
 * decode_kv(B) per token of the B contexts. Per-slot: the same for each run
 * of consecutive decoding slots, plus prefill_base_ms for each run of
 * consecutive slots whose prompt is in the step (*prompt_passes). */
/* decode_ms(n) of a pass of n slots on v; notes n when it lies beyond the
 * table. */
static double pass_ms(sim *s, const server *v, int n)
{
	if (n > v->dec_last) {
		if (!s->xlo || n < s->xlo)
			s->xlo = n;
		if (n > s->xhi)
			s->xhi = n;
	}
	return sb_model_decode_ms(v->m, n);
}

static void decode_cost(sim *s, const server *v, int B, double sum_ctx, double *a, double *b,
			int *prompt_passes)
{
	const sb_model *m = v->m;
	*a = *b = 0;
	*prompt_passes = 0;
	if (!v->per_slot) {
		if (B > 0) {
			double kv = sb_model_decode_kv(m, B);
			*a = pass_ms(s, v, B) + kv * sum_ctx;
			*b = kv * (double)B;
		}
		return;
	}
	for (int i = 0; i < v->S;) {
		int st = v->slots[i].state, j = i;
		int prompt = st == SL_PREFILL && v->slots[i].chunk > 0;
		if (st != SL_DECODE && !prompt) {
			i++;
			continue;
		}
		double ctx = 0;
		while (j < v->S && v->slots[j].state == st && (!prompt || v->slots[j].chunk > 0)) {
			ctx += (double)(v->slots[j].in_len + v->slots[j].gen);
			j++;
		}
		if (prompt) {
			(*prompt_passes)++;
		} else {
			double kv = sb_model_decode_kv(m, j - i);
			*a += pass_ms(s, v, j - i) + kv * ctx;
			*b += kv * (double)(j - i);
		}
		i = j;
	}
}

/* vllm: takes queued requests into free slots, in FIFO order, while the
 * head's prompt fits in the free KV blocks. */
static void vllm_admit(sim *s, server *v, double t)
{
	while (v->nfreeslot > 0 && v->qlen > 0) {
		long ri = v->q[v->qhead];
		const req *r = &s->reqs[ri];
		if (!paged_fits(v, r->in_len + r->gen_done))
			return;
		q_pop(v);
		assign(s, v, take_free_slot(v, -1, 0, -1), ri, t, t, 0);
	}
}

/* vllm: the sequence in slot si gives its blocks back and returns to the
 * head of the queue, to be recomputed (core/model.h). */
static void vllm_preempt(sim *s, server *v, int si, double t)
{
	slot *sl = &v->slots[si];
	req *r = &s->reqs[sl->r];
	if (sl->state == SL_DECODE)
		r->gen_done = sl->gen;
	r->preempts++;
	s->preempted += r->counted;
	r->slot = -1;
	if (q_push_front(v, sl->r) < 0)
		s->oom = 1;
	if (s->router && sb_router_note(s->router, r->srv, 0, +1) < 0)
		s->oom = 1;
	sl->r = -1;
	sl->state = SL_FREE;
	sl->chunk = 0;
	busy_change(s, v, t, -1);
	v->freeslot[v->nfreeslot++] = si;
}

/* vllm, before a step at T: preempt the sequences admitted last until the
 * step's blocks fit; when none was, admit queued prompts. */
static void vllm_schedule(sim *s, server *v, double T)
{
	int preempted = 0, was = v->in_run_end;
	v->in_run_end = 1; /* admitted requests join this step (planned next) */
	while (v->gpu_blocks > 0 && paged_need(v, 1) > v->gpu_blocks) {
		int si = paged_victim(v);
		if (si < 0)
			break;
		if (v->nbusy == 1) {
			/* alone and still too long for the whole cache: its
			 * output stops here (as at a slot's context) */
			s->output_cut += v->slots[si].counted;
			complete(s, v, si, T);
			break;
		}
		vllm_preempt(s, v, si, T);
		preempted = 1;
	}
	if (!preempted)
		vllm_admit(s, v, T);
	v->in_run_end = was;
}

static void start_run(sim *s, server *v, double T)
{
	const sb_model *m = v->m;
	if (v->vllm)
		vllm_schedule(s, v, T);
	int B = 0, Bc = 0;
	double sum_ctx = 0, attn = 0, next_ready = INFINITY;
	long minrem = LONG_MAX, P = 0;
	double restore_ms = 0;
	int prompts = 0;
	for (int i = 0; i < v->S; i++) {
		slot *sl = &v->slots[i];
		if (sl->state == SL_JOIN && sl->ready <= T) {
			sl->state = SL_PREFILL;
			if (!s->reqs[sl->r].preempts)
				s->reqs[sl->r].t_join = T;
		}
		if (sl->state == SL_DECODE) {
			B++;
			Bc += sl->counted;
			sum_ctx += (double)(sl->in_len + sl->gen);
			long rem = sl->out_len - sl->gen;
			if (rem < minrem)
				minrem = rem;
		} else if (sl->state == SL_JOIN) {
			if (sl->ready < next_ready)
				next_ready = sl->ready;
		}
	}
	for (int i = 0; i < v->S; i++) {
		slot *sl = &v->slots[i];
		if (sl->state != SL_PREFILL)
			continue;
		/* vllm: each decoding sequence takes a token of the budget */
		long budget = v->batch_tokens > 0 ? v->batch_tokens - P - (v->vllm ? B : 0) : LONG_MAX;
		long c = sl->pre_len - sl->pos;
		if (c > budget)
			c = budget > 0 ? budget : 0;
		sl->chunk = c;
		P += c;
		prompts += c > 0;
		restore_ms += c > 0 ? sl->restore_ms : 0;
		attn += (double)c * (double)sl->pos + (double)c * (double)(c - 1) / 2;
	}
	if (B == 0 && P == 0) {
		v->running = 0;
		sb_timers_clear(s->timers, (int)(v - s->srv));
		if (next_ready < INFINITY)
			push(s, next_ready, EV_READY, 0, v - s->srv);
		return;
	}
	double a, b = 0, f;
	long k;
	double dec_a, dec_b;
	int prompt_passes;
	decode_cost(s, v, B, sum_ctx, &dec_a, &dec_b, &prompt_passes);
	if (P > 0) {
		double base = v->per_slot ? dec_a + prompt_passes * m->prefill_base_ms
			      : B > 0	  ? dec_a
					  : sb_model_step_base_ms(m);
		/* prompts beyond the first of each prefill pass (unified: one) */
		int passes = v->per_slot ? prompt_passes : 1;
		a = base + m->per_prefill_token_ms * (double)P + m->per_prefill_attn_ms * attn +
		    m->prefill_per_prompt_ms * (double)(prompts - passes) + restore_ms;
		k = 1;
		f = noise_factor(s, v, v->prefill_cv, 1);
		v->run_prefill = 1;
		/* nothing left decoding (a closed loop's round just ended
		 * together): the engine starts as from idle, so the clients
		 * that round released join this step (SB_MODEL_JOIN_WINDOW_S) */
		if (B == 0)
			v->idle_t0 = T;
	} else {
		a = dec_a;
		b = dec_b;
		k = v->vllm ? paged_steps(v, minrem) : minrem;
		f = noise_factor(s, v, v->noise_cv, k);
		v->run_prefill = 0;
	}
	v->running = 1;
	v->run_B = B;
	v->run_Bc = Bc;
	v->run_t0 = T;
	v->run_a = a;
	v->run_b = b;
	v->run_f = f;
	v->run_k = k;
	v->run_end = T + f * series(a, b, k) / 1000.0;
	sb_timers_set(s->timers, (int)(v - s->srv), v->run_end, sb_heap_take_seq(s->heap));
	if (next_ready < v->run_end)
		sim_run_cut(s, v, next_ready);
}

/* ---- request lifecycle ---------------------------------------------- */

/* When the client sees the first token: the server's time plus the
 * request's jitter, never after the last token (t). */
static double first_seen(const req *r, double t)
{
	double f = r->t_first + r->jit;
	return f < t ? f : t;
}

/* Fleet statistics: a counted request routed to v at t. */
static void fleet_sent(server *v, double t)
{
	v->n_routed++;
	v->infl_area += (double)v->infl * (t - v->infl_t);
	v->infl_t = t;
	v->infl++;
}

/* Fleet statistics: a counted request sent at t_sched finished at v at t. */
static void fleet_done(server *v, double t_sched, double t)
{
	v->n_done++;
	v->sojourn_s += t - t_sched;
	v->infl_area += (double)v->infl * (t - v->infl_t);
	v->infl_t = t;
	v->infl--;
}

/* A counted request's record kept (keep_records): its figures, what it
 * found in the prompt cache and where it ran. */
static void keep_record(sim *s, const req *r, double t, int rejected, const sb_reqrec *rec)
{
	if (s->nrecs == s->caprecs) {
		size_t nc = s->caprecs ? s->caprecs * 2 : 256;
		sb_sim_rec *nr = realloc(s->recs, nc * sizeof *nr);
		if (!nr) {
			s->oom = 1;
			return;
		}
		s->recs = nr;
		s->caprecs = nc;
	}
	long outt = rec->output_tokens;
	sb_sim_rec *o = &s->recs[s->nrecs++];
	o->id = r->id;
	o->t_sched_s = r->t_sched - s->t0;
	o->t_done_s = t - s->t0;
	o->ttft_ms = rec->ttft_ms;
	o->e2e_ms = rec->e2e_ms;
	o->wait_ms = rec->wait_ms;
	o->tpot_ms = (!rejected && outt >= 2) ? (rec->e2e_ms - rec->ttft_ms) / (double)(outt - 1)
					      : NAN;
	o->prompt_tokens = rec->prompt_tokens;
	o->output_tokens = outt;
	o->rejected = rejected;
	o->slot = r->slot;
	o->replica = r->srv;
	o->prefix_group = r->group;
	o->prefix_tokens = r->prefix;
	o->turn = r->conv >= 0 ? s->convs[r->conv].turn : -1;
	o->cached_tokens = r->cached;
	o->prompt_ms = (r->t_first - r->t_join) * 1000.0;
}

/* A counted request ended at t on v: the level's figures, v's statistics,
 * the record. */
static void count_done(sim *s, const req *r, server *v, double t, int rejected)
{
	long outt = s->service_mode ? 1 : r->out_len;
	sb_reqrec rec = {
		.id = r->id,
		.t_scheduled_s = r->t_sched - s->t0,
		.t_sent_s = r->t_sched - s->t0,
		.t_done_s = t - s->t0,
		.ttft_ms = rejected ? NAN : (first_seen(r, t) - r->t_sched) * 1000.0,
		.e2e_ms = (t - r->t_sched) * 1000.0,
		.wait_ms = rejected ? NAN : (r->t_join - r->t_arr) * 1000.0,
		.itl_ms = NULL,
		.n_itl = 0,
		.prompt_tokens = s->service_mode ? -1 : r->in_len,
		.output_tokens = rejected ? 0 : outt,
		.err_class = rejected ? "rejected" : NULL,
		.err_msg = rejected ? sb_sim_reject_msg(rejected) : NULL,
	};
	sb_levelacc_add(&s->acc, &rec);
	sb_levelacc_inflight(&s->acc, t - s->t0, -1);
	busy_change(s, v, t, 0);
	v->busy_area_end = v->busy_area;
	v->end_t = t;
	if (t > s->t_end)
		s->t_end = t;
	if (s->router)
		fleet_done(v, r->t_sched, t);
	if (s->keep_records)
		keep_record(s, r, t, rejected, &rec);
}

/* A replayed request's prediction. */
static void predict_done(sim *s, const req *r, double t, int rejected)
{
	sb_replay_pred *p = &s->pred[r->idx];
	p->t_sent_s = r->t_sched;
	p->t_done_s = t;
	p->ttft_ms = rejected ? NAN : (first_seen(r, t) - r->t_sched) * 1000.0;
	p->e2e_ms = (t - r->t_sched) * 1000.0;
	p->wait_ms = rejected ? NAN : (r->t_join - r->t_arr) * 1000.0;
	p->tpot_ms = (!rejected && r->out_len >= 2)
			     ? (p->e2e_ms - p->ttft_ms) / (double)(r->out_len - 1) : NAN;
	p->rejected = rejected;
	p->replica = r->srv;
}

/* What r's end at t sends next: an open replay's next turn of its
 * conversation, an open loop conversation's next turn, or a closed-loop
 * client's next request, each after its pause. */
static void send_next(sim *s, req *r, const server *v, double t, int rejected)
{
	if (s->src == SRC_REPLAY_OPEN && s->follows && r->idx >= 0 && !rejected && !s->stop &&
	    s->rq[r->idx].next_turn > 0) {
		size_t nx = s->rq[r->idx].next_turn - 1;
		push(s, t + s->rq[nx].pause_s + v->release_s, EV_FOLLOW, 0, (long)nx);
	}
	if (r->conv >= 0 && conv_after(s, r->conv, r, rejected) && s->src == SRC_OPEN &&
	    !s->stop) {
		double think = sb_dist_sample(&s->w->think_s, s->rl);
		push(s, t + (think > 0 ? think : 0) + (rejected ? 0 : v->release_s), EV_TURN, 0,
		     r->conv);
	}
	if (r->client >= 0 && !s->stop) {
		double think = 0;
		size_t nx = s->client_next ? s->client_next[r->client] : 0;
		if (s->src == SRC_CLOSED)
			think = sb_dist_sample(&s->w->think_s, s->rl);
		else if (nx > 0 && nx <= s->rn)
			think = s->rq[nx - 1].pause_s; /* a conversation's measured pause */
		else
			think = s->think_s;
		if (!(think > 0))
			think = 0;
		push(s, t + think + (rejected ? 0 : v->release_s), EV_GEN, 0, r->client);
	}
}

void sim_finish_req(sim *s, long ri, double t, int rejected)
{
	req *r = &s->reqs[ri];
	server *v = &s->srv[r->srv];
	if (s->router && sb_router_note(s->router, r->srv, -1, rejected ? -1 : 0) < 0)
		s->oom = 1;
	if (r->counted)
		count_done(s, r, v, t, rejected);
	if (s->pred && r->idx >= 0)
		predict_done(s, r, t, rejected);
	if (s->on_done)
		s->on_done(s, ri, t, rejected);
	send_next(s, r, v, t, rejected);
	req_release(s, ri);
}

/* Whether a request arriving with others at an idle engine misses their
 * first step: model.scheduler.split_prob, or split_prob_crowded when the
 * group left requests waiting in the queue. */
static int misses_first_step(sim *s, const server *v)
{
	double p = v->qlen > 0 ? v->split_crowded : v->split_prob;
	return p > 0 && gsl_rng_uniform(s->rs) < p;
}

/* The idle engine starts at t on the requests that reached it at t: each
 * one after the first misses that step with misses_first_step's chance
 * (drawn now, when the whole group has arrived and the queue holds those
 * left over): ready a nanosecond late, it waits for the step to end. */
static void draw_joiners(sim *s, server *v, double t)
{
	for (int i = 0; i < v->S; i++) {
		slot *sl = &v->slots[i];
		if (sl->state == SL_JOIN && sl->joiner && misses_first_step(s, v))
			sl->ready = t + 1e-9;
		sl->joiner = 0;
	}
}

/* Tokens of prefix group g that v's shared prompt cache holds: the
 * longest of its prompts prefilled whole there (and answered: shared_note),
 * not merely sent: two prompts of one new prefix sent together both
 * prefill it (seen live). */
static long shared_held(const server *v, long g)
{
	return v->held && g >= 0 && g < v->n_held ? v->held[g] : 0;
}

/* v's shared prompt cache holds `len` tokens of group g from now on (if it
 * held fewer); s->oom on failure. */
static void shared_note(sim *s, server *v, long g, long len)
{
	if (g < 0)
		return;
	if (g >= v->n_held) {
		long n = g + 1 > 2 * v->n_held ? g + 1 : 2 * v->n_held;
		if (n < s->n_groups)
			n = s->n_groups;
		long *nh = realloc(v->held, (size_t)n * sizeof *nh);
		if (!nh) {
			s->oom = 1;
			return;
		}
		for (long i = v->n_held; i < n; i++)
			nh[i] = 0;
		v->held = nh;
		v->n_held = n;
	}
	if (len > v->held[g])
		v->held[g] = len;
}

/* llama.cpp's --slot-prompt-similarity: a free slot whose last prompt
 * shares at least this share of a new prompt is taken for it (and its own
 * cache used), before the one released longest ago. */
#define SLOT_SIMILARITY 0.10

/* What slot sl holds of r's prompt (*own) and what v keeps of it
 * elsewhere (*kept: shared, a shared cache's; ram, the prompts that left a
 * slot), in tokens: a trace's leading blocks or a prefix group's. */
static void cache_holds(const server *v, const slot *sl, const req *r, long *own, long *kept)
{
	*own = *kept = 0;
	if (r->blocks) {
		long k = 0;
		while (k < r->n_blocks && sb_idset_has(&v->blocks, r->blocks[k]))
			k++;
		*own = r->block_tokens * sb_blocks_common(sl->cache_blocks, sl->n_cache_blocks,
							  r->blocks, r->n_blocks);
		*kept = k * r->block_tokens;
	} else if (r->group >= 0) {
		*own = sl->cache_group == r->group ? sl->cache_len : 0;
		*kept = shared_held(v, r->group);
	}
}

/* v's cache holds these blocks from now on (shared: prefilled; ram: they
 * left a slot); s->oom on failure. */
static void blocks_note(sim *s, server *v, const long *blocks, long n)
{
	for (long i = 0; i < n; i++)
		if (sb_idset_add(&v->blocks, blocks[i]) < 0)
			s->oom = 1;
}

/* A ram cache: the prompt slot sl held leaves it, for r's, saved into v's
 * store. */
static void ram_save(sim *s, server *v, const slot *sl, const req *r)
{
	if (sl->cache_blocks && sl->cache_blocks != r->blocks)
		blocks_note(s, v, sl->cache_blocks, sl->n_cache_blocks);
	if (sl->cache_group >= 0 && sl->cache_group != r->group)
		shared_note(s, v, sl->cache_group, sl->cache_len);
}

/* Prompt tokens of r that slot sl of v finds already computed (model
 * prompt_cache: the part of its shared prefix the cache holds, whole blocks
 * for a vllm engine, never the whole prompt); *ram: 1 when a ram cache
 * restored them (a prompt that had left its slot). The slot holds r's
 * prompt from now on. */
static long prompt_cached(sim *s, server *v, slot *sl, const req *r, int *ram)
{
	long own, kept, held;
	cache_holds(v, sl, r, &own, &kept);
	*ram = 0;
	if (v->pcache == SB_PCACHE_SLOT ||
	    (v->pcache == SB_PCACHE_RAM && own >= SLOT_SIMILARITY * (double)r->in_len)) {
		held = own; /* the slot's own (ram: the slot taken for its prompt) */
	} else {
		/* ram: llama.cpp saves the slot's prompt and restores the best
		 * saved one; shared: whatever was prefilled */
		if (v->pcache == SB_PCACHE_RAM)
			ram_save(s, v, sl, r);
		held = own > kept ? own : kept;
		*ram = v->pcache == SB_PCACHE_RAM && kept > own;
	}
	long prefix = r->blocks ? held : r->prefix;
	sl->cache_group = r->group;
	sl->cache_len = r->in_len;
	sl->cache_blocks = r->blocks;
	sl->n_cache_blocks = r->n_blocks;
	long c = prefix < held ? prefix : held;
	if (c > r->in_len - 1)
		c = r->in_len - 1;
	if (v->vllm)
		c -= c % v->block_size;
	return c > 0 ? c : 0;
}

/* The prefix group whose slot r prefers (llama.cpp's slot choice by prompt
 * similarity: a free slot holding its prefix, when the prefix is at least a
 * tenth of the prompt), or -1. */
static long preferred_group(const server *v, const req *r)
{
	if ((v->pcache != SB_PCACHE_SLOT && v->pcache != SB_PCACHE_RAM) || r->group < 0 ||
	    (double)r->prefix < SLOT_SIMILARITY * (double)r->in_len)
		return -1;
	return r->group;
}

/* Gives slot si to request ri at t; it enters the batch at `ready`. from_net:
 * it just arrived (so it may miss an idle engine's first step, see
 * split_prob), rather than being launched from the queue. */
static void assign(sim *s, server *v, int si, long ri, double t, double ready, int from_net)
{
	slot *sl = &v->slots[si];
	req *r = &s->reqs[ri];
	sl->r = ri;
	sl->in_len = r->in_len;
	sl->out_len = r->out_len;
	sl->counted = r->counted;
	sl->pre_len = r->in_len + r->gen_done;
	sl->seq = ++v->seq;
	int ram = 0;
	sl->pos = v->pcache ? prompt_cached(s, v, sl, r, &ram) : 0;
	sl->gen = 0;
	if (!r->preempts)
		r->cached = sl->pos;
	if (r->counted && !r->preempts) {
		s->cached_tokens += sl->pos;
		s->prompt_tokens += r->in_len;
	}
	sl->restore_ms = (double)sl->pos *
			 (ram ? v->m->per_restored_token_ms : v->m->per_cached_token_ms);
	r->slot = si;
	busy_change(s, v, t, +1);
	if (s->router && sb_router_note(s->router, r->srv, 0, -1) < 0)
		s->oom = 1;
	if (s->service_mode) {
		sl->state = SL_SERVE;
		r->t_join = t;
		double svc = sb_dist_sample(&s->service, s->rs);
		if (!(svc > 0))
			svc = 0;
		push(s, t + svc, EV_DEPART, (uint32_t)(v - s->srv), si);
		return;
	}
	sl->state = SL_JOIN;
	sl->ready = ready;
	sl->chunk = 0;
	sl->joiner = 0;
	if (v->in_run_end)
		return; /* the next run is planned right after */
	if (v->running) {
		/* sent with the requests an idle engine just started on, a
		 * moment later (a longer prompt's overhead): it joins their
		 * first step, unless it is one of the split_prob that miss it */
		if (from_net && !v->vllm && v->run_prefill && v->run_t0 == v->idle_t0 &&
		    ready - v->run_t0 <= SB_MODEL_JOIN_WINDOW_S && !misses_first_step(s, v))
			sl->ready = ready = v->run_t0;
		sim_run_cut(s, v, ready);
	} else {
		/* an idle engine starts after every event of this instant, so
		 * requests that arrive together are prefilled together (as
		 * llama.cpp batches them) — but each one after the first may
		 * miss that step (draw_joiners, when the engine starts) */
		sl->joiner = from_net && v->idle_join_t == t;
		v->idle_join_t = t;
		push(s, ready > t ? ready : t, EV_READY, 0, v - s->srv);
	}
}

/* Takes a free slot (nfreeslot > 0): unified, the top of the stack (the
 * lowest-numbered at the start); pinned, the lowest of 0, k, 2k...;
 * per-slot, or with a slot prompt cache, llama.cpp's choice: one holding
 * prefix group `group` (>= 0: preferred_group), else the one released
 * longest ago, ties to the highest id. A replayed request whose measured
 * slot is free gets that one. */
static int take_free_slot(server *v, int want, int pin_stride, long group)
{
	int top = v->nfreeslot - 1, best = top, found = 0;
	for (int i = 0; want >= 0 && i <= top; i++) {
		if (v->freeslot[i] == want) {
			v->freeslot[i] = v->freeslot[top];
			v->nfreeslot--;
			return want;
		}
	}
	if (pin_stride > 0) {
		/* pinned: the lowest free slot among 0, k, 2k... (any free one
		 * when none of those is) */
		int k = pin_stride;
		for (int i = 0; i <= top; i++) {
			int a = v->freeslot[i], b = v->freeslot[best];
			if ((a % k == 0) != (b % k == 0) ? a % k == 0 : a < b)
				best = i;
		}
	} else if (group >= 0) {
		for (int i = top; i >= 0 && !found; i--) {
			found = v->slots[v->freeslot[i]].cache_group == group;
			best = found ? i : best;
		}
	}
	if (!pin_stride && !found &&
	    (v->per_slot || v->pcache == SB_PCACHE_SLOT || v->pcache == SB_PCACHE_RAM)) {
		for (int k = 0; k < top; k++) {
			const slot *a = &v->slots[v->freeslot[k]], *b = &v->slots[v->freeslot[best]];
			if (a->released < b->released ||
			    (a->released == b->released && v->freeslot[k] > v->freeslot[best]))
				best = k;
		}
	}
	int si = v->freeslot[best];
	v->freeslot[best] = v->freeslot[top];
	v->nfreeslot--;
	return si;
}

static void free_slot(sim *s, server *v, int si, double t)
{
	slot *sl = &v->slots[si];
	sl->r = -1;
	sl->state = SL_FREE;
	sl->released = t;
	busy_change(s, v, t, -1);
	if (v->vllm) {
		v->freeslot[v->nfreeslot++] = si;
		if (!v->in_run_end)
			vllm_admit(s, v, t);
		return;
	}
	long ri = v->qlen > 0 ? q_take(s, v, si) : -1;
	if (ri >= 0 && !v->per_slot && !s->pin_stride) {
		assign(s, v, si, ri, t, t + v->admit_s, 0);
		return;
	}
	v->freeslot[v->nfreeslot++] = si;
	if (ri >= 0)
		assign(s, v,
		       take_free_slot(v, s->reqs[ri].want_slot, s->pin_stride,
				      preferred_group(v, &s->reqs[ri])),
		       ri, t, t + v->admit_s, 0);
}

/* The slot's context on v against request r (core/slotctx.h): its lengths
 * as the server changes them, counted. Returns 1 when the server refuses it. */
static int context_refuses(sim *s, const server *v, req *r)
{
	if (s->service_mode || v->m->ctx_per_slot <= 0)
		return 0;
	sb_ctx_outcome c = sb_slotctx_fit(v->m->ctx_per_slot, v->m->context_overflow,
					  &r->in_len, &r->out_len);
	s->too_long += r->counted && c == SB_CTX_TOO_LONG;
	s->truncated += r->counted && c == SB_CTX_TRUNCATED;
	s->output_cut += r->counted && c == SB_CTX_OUTPUT_CUT;
	return c == SB_CTX_TOO_LONG;
}

static void arrive(sim *s, long ri, double t)
{
	req *r = &s->reqs[ri];
	server *v = &s->srv[r->srv];
	r->t_arr = t;
	if (r->cancelled) {
		sim_finish_req(s, ri, t, SIM_CANCELLED);
		return;
	}
	if (context_refuses(s, v, r)) {
		/* llama.cpp answers when a slot would start it; taken here
		 * as on arrival (docs/context.md) */
		s->rejected += r->counted;
		sim_finish_req(s, ri, t, SB_SIM_REJECT_TOO_LONG);
		return;
	}
	if (v->vllm && v->gpu_blocks > 0 && paged_blocks(v, r->in_len) > v->gpu_blocks) {
		s->rejected += r->counted;
		s->too_long += r->counted;
		sim_finish_req(s, ri, t, SB_SIM_REJECT_TOO_LONG);
		return;
	}
	if (v->nfreeslot > 0 && !waits_for_its_slot(s, v, r) &&
	    (!v->vllm || (v->qlen == 0 && paged_fits(v, r->in_len)))) {
		assign(s, v, take_free_slot(v, r->want_slot, s->pin_stride, preferred_group(v, r)),
		       ri, t, t, 1);
		return;
	}
	if (v->max_queue >= 0 && (long)v->qlen >= v->max_queue) {
		s->rejected += r->counted;
		sim_finish_req(s, ri, t, SB_SIM_REJECT_QUEUE);
		return;
	}
	if (q_push(v, ri) < 0) {
		s->oom = 1;
		return;
	}
	if ((long)v->qlen > s->max_waiting)
		s->max_waiting = (long)v->qlen;
}

static void complete(sim *s, server *v, int si, double t)
{
	long ri = v->slots[si].r;
	const req *r = &s->reqs[ri];
	if (r->group >= 0) {
		/* the answer is computed too: a conversation's next turn has it */
		v->slots[si].cache_len = r->in_len + v->slots[si].gen;
		if (v->pcache == SB_PCACHE_SHARED)
			shared_note(s, v, r->group, r->in_len + v->slots[si].gen);
	}
	sim_finish_req(s, ri, t, 0);
	if (v->release_s > 0 && (v->qlen == 0 || v->m->release_holds_queue)) {
		/* the end-of-request cost: the slot stays held (state only);
		 * a request already queued takes it at once unless the model
		 * says otherwise (core/model.h, release_holds_queue) */
		v->slots[si].state = SL_RELEASE;
		push(s, t + v->release_s, EV_RELEASE, (uint32_t)(v - s->srv), si);
		return;
	}
	free_slot(s, v, si, t);
}

static void on_run_end(sim *s, server *v, double T)
{
	long k = v->run_k;
	double dur = v->run_f * series(v->run_a, v->run_b, k);
	v->running = 0;
	v->in_run_end = 1;
	/* ITL: the run's k*B gaps as one weighted value (counted requests) */
	if (v->run_Bc > 0)
		sb_whist_add(s->itl, dur / (double)k, (double)k * (double)v->run_Bc);
	for (int i = 0; i < v->S; i++) {
		slot *sl = &v->slots[i];
		if (sl->state != SL_DECODE)
			continue;
		sl->gen += k;
		if (sl->gen >= sl->out_len)
			complete(s, v, i, T);
	}
	if (v->run_prefill) {
		for (int i = 0; i < v->S; i++) {
			slot *sl = &v->slots[i];
			if (sl->state != SL_PREFILL)
				continue;
			if (sl->chunk > 0)
				sl->restore_ms = 0;
			sl->pos += sl->chunk;
			sl->chunk = 0;
			if (sl->pos >= sl->pre_len) {
				req *r = &s->reqs[sl->r];
				/* a recomputed sequence goes on where it was */
				if (!r->gen_done)
					r->t_first = T;
				if (v->pcache == SB_PCACHE_SHARED && r->group >= 0)
					shared_note(s, v, r->group, r->in_len);
				if (v->pcache == SB_PCACHE_SHARED && r->blocks)
					blocks_note(s, v, r->blocks, r->n_blocks);
				sl->gen = r->gen_done + 1;
				sl->state = SL_DECODE;
				if (sl->gen >= sl->out_len)
					complete(s, v, i, T);
			}
		}
	}
	v->in_run_end = 0;
	start_run(s, v, T);
}

/* The next request of the source, for on_gen(s, ., arg): *idx its index in
 * the replayed list (-1 when drawn), *in_len and *out_len its lengths (drawn
 * from s->rl, input first, for a generated workload). Returns 0, or -1 with
 * s->stop set when a closed replay has issued them all. */
static inline int gen_pick(sim *s, long arg, long *idx, long *in_len, long *out_len)
{
	*idx = -1;
	if (s->src == SRC_REPLAY_OPEN && s->follow_idx >= 0) {
		*idx = s->follow_idx; /* a conversation's turn after the one before */
		s->follow_idx = -1;
	} else if (s->src == SRC_REPLAY_OPEN) {
		*idx = (long)s->order[arg];
	} else if (s->src == SRC_REPLAY_CLOSED) {
		if ((size_t)s->generated >= s->rn) {
			s->stop = 1;
			return -1;
		}
		*idx = s->client_next ? conv_replay_pick(s, arg) : s->generated;
		if (*idx < 0)
			return -1; /* this client's conversations are over */
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
static inline void gen_count(sim *s, double t, int srv)
{
	if (!s->t0_set) {
		s->t0_set = 1;
		s->t0 = t;
		for (int i = 0; i < s->n_srv; i++) {
			server *v = &s->srv[i];
			busy_change(s, v, t, 0);
			v->busy_area_t0 = v->busy_area;
			v->busy_area_end = v->busy_area;
			v->end_t = t;
		}
		s->t_end = t;
	}
	s->counted_generated++;
	sb_levelacc_inflight(&s->acc, t - s->t0, +1);
	if (s->router)
		fleet_sent(&s->srv[srv], t);
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
	} else if ((size_t)pos + 1 < s->n_order) {
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
	const server *v = &s->srv[r->srv];
	double ovh = v->ovh_ms + v->ovh_tok_ms * (double)r->in_len, jit = 0;
	if (!(ovh > 0))
		ovh = 0;
	if (!s->no_noise && v->ovh_sd_ms > 0)
		jit = gsl_ran_gaussian(s->rs, v->ovh_sd_ms);
	if (jit < -ovh)
		jit = -ovh;
	r->jit = jit / 1000.0;
	push(s, t + ovh / 1000.0, EV_ARRIVE, 0, ri);
}

/* Issues a new request at time t (open loop arrival or a client's send);
 * arg: the client (closed loop), the position in s->order (open replay), or
 * -1 (open loop). c: an open-loop conversation's entry whose next turn this
 * is (EV_TURN), else -1. */
static void on_gen(sim *s, double t, long arg, long c)
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
	r->jit = 0;
	r->slot = -1;
	r->srv = 0;
	r->cancelled = 0;
	r->cookie = NULL;
	r->gen_done = 0;
	r->preempts = 0;
	r->group = -1;
	r->prefix = r->cached = 0;
	r->conv = -1;
	r->blocks = idx >= 0 && s->rq[idx].n_blocks > 0 ? s->rq[idx].blocks : NULL;
	r->n_blocks = r->blocks ? s->rq[idx].n_blocks : 0;
	r->block_tokens = r->blocks ? s->rq[idx].block_tokens : 0;
	if (idx < 0 && !s->service_mode && s->conversations) {
		if (s->src == SRC_CLOSED)
			c = arg;
		else if (c < 0 && (c = conv_open(s)) < 0)
			s->oom = 1;
		if (c >= 0)
			conv_turn(s, c, r);
	} else if (idx < 0 && !s->service_mode && s->w->prefix_len > 0) {
		/* its prompt: one of the shared prefixes, then its own tokens */
		r->group = (long)gsl_rng_uniform_int(s->rl, (unsigned long)s->w->prefix_groups);
		r->prefix = s->w->prefix_len;
		r->in_len += s->w->prefix_len;
	} else if (idx >= 0 && s->rq[idx].prefix_group >= 0) {
		/* a measured prompt with its shared prefix (its length counts
		 * it), or a conversation's turn (its first: no prefix yet) */
		r->group = s->rq[idx].prefix_group;
		r->prefix = s->rq[idx].prefix_tokens;
	}
	if (s->router) {
		r->srv = sb_router_pick(s->router, s->rr, r->group);
		if (r->srv < 0) {
			s->oom = 1;
			r->srv = 0;
		}
		if (sb_router_note(s->router, r->srv, +1, +1) < 0)
			s->oom = 1;
	}
	/* a recorded slot names a slot of the one measured server */
	r->want_slot = idx >= 0 && !s->router && s->rq[idx].slot < s->srv[r->srv].S
			       ? s->rq[idx].slot : -1;
	if (counted)
		gen_count(s, t, r->srv);
	if (s->src == SRC_REPLAY_CLOSED && (size_t)s->generated >= s->rn)
		s->stop = 1;
	if (!s->stop && (s->src == SRC_OPEN || s->src == SRC_REPLAY_OPEN) && r->conv < 0 &&
	    !(idx >= 0 && s->follows && s->follows[idx]))
		gen_schedule_next(s, t, arg);
	else if (!s->stop && s->src == SRC_OPEN && c >= 0 && s->convs[c].turn == 1)
		gen_schedule_next(s, t, arg); /* the next conversation's start */
	if (s->service_mode)
		arrive(s, ri, t);
	else
		gen_send(s, ri, t);
}

/* Handles one event from the heap. */
static void sim_event(sim *s, const sb_event *ev)
{
	switch (ev->type) {
	case EV_GEN:
		on_gen(s, ev->t, ev->arg, -1);
		break;
	case EV_TURN:
		on_gen(s, ev->t, -1, ev->arg);
		break;
	case EV_FOLLOW:
		s->follow_idx = ev->arg;
		on_gen(s, ev->t, -1, -1);
		break;
	case EV_ARRIVE:
		arrive(s, ev->arg, ev->t);
		break;
	case EV_READY: {
		server *v = &s->srv[ev->arg];
		if (!v->running) {
			if (ev->t == v->idle_join_t)
				draw_joiners(s, v, ev->t);
			v->idle_t0 = ev->t;
			start_run(s, v, ev->t);
		}
		break;
	}
	case EV_RELEASE:
		free_slot(s, &s->srv[ev->gen], (int)ev->arg, ev->t);
		break;
	case EV_DEPART: {
		/* M/G/c: the whole response arrives at once */
		server *v = &s->srv[ev->gen];
		s->reqs[v->slots[ev->arg].r].t_first = ev->t;
		complete(s, v, (int)ev->arg, ev->t);
		break;
	}
	default:
		assert(0);
	}
}

/* The server whose run ends first, when that comes before the event heap's
 * top (by time, then sequence number: the order of their pushes); else
 * NULL. *t: when it ends. */
static server *timer_first(const sim *s, const sb_event *top, double *t)
{
	uint64_t seq;
	int id = sb_timers_peek(s->timers, t, &seq);
	if (id < 0 || (top && (top->t < *t || (top->t == *t && top->seq < seq))))
		return NULL;
	return &s->srv[id];
}

int sim_loop_until(sim *s, double until, sb_error *e)
{
	sb_event ev;
	for (;;) {
		/* an open-loop arrival due no later than the earliest event goes
		 * first (a fixed rule, so ties are deterministic) */
		const sb_event *top = sb_heap_peek(s->heap);
		double tt;
		server *tv = timer_first(s, top, &tt);
		double first = tv ? tt : top ? top->t : INFINITY;
		if (s->next_gen_t < INFINITY && s->next_gen_t <= first) {
			double t = s->next_gen_t;
			if (t > until)
				break;
			s->next_gen_t = INFINITY;
			s->now = t;
			on_gen(s, t, s->next_gen_arg, -1);
		} else if (first > until) {
			break;
		} else if (tv) {
			/* its timer stays armed: on_run_end ends in start_run,
			 * which moves it to the next run's end or disarms it */
			s->now = tt;
			on_run_end(s, tv, tt);
		} else if (sb_heap_pop(s->heap, &ev)) {
			s->now = ev.t;
			sim_event(s, &ev);
		} else {
			break;
		}
		if (s->oom)
			return sb_error_code(e, -ENOMEM, "out of memory during simulation");
	}
	return 0;
}

int sim_loop(sim *s, sb_error *e)
{
	return sim_loop_until(s, INFINITY, e);
}

double sim_next_event(const sim *s)
{
	const sb_event *top = sb_heap_peek(s->heap);
	double tt, t = top ? top->t : INFINITY;
	if (timer_first(s, top, &tt))
		t = tt;
	return s->next_gen_t < t ? s->next_gen_t : t;
}

long sim_submit(sim *s, double t, long in_len, long out_len)
{
	long ri = req_alloc(s);
	if (ri < 0)
		return -1;
	req *r = &s->reqs[ri];
	memset(r, 0, sizeof *r);
	r->id = s->generated++;
	r->idx = -1;
	r->client = -1;
	r->in_len = in_len;
	r->out_len = out_len;
	r->t_sched = r->t_arr = r->t_join = t;
	r->t_first = NAN;
	r->slot = r->want_slot = -1;
	r->group = -1;
	r->conv = -1;
	r->blocks = NULL;
	r->n_blocks = r->block_tokens = 0;
	gen_send(s, ri, t);
	return s->oom ? -1 : ri;
}
