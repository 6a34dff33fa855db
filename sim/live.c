/* live.c — the engine of sim.c on a caller's clock (live.h): requests are
 * submitted from outside, the event loop runs up to the time given, and a
 * decode run's tokens are read off its step ends as the time passes them. */
#include "live.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

struct sb_live {
	sim s;
	double now;            /* the last time given */
	sb_live_done_fn on_done;
	void *ctx;
};

/* sim's reasons pass through as live.h's */
_Static_assert(SB_LIVE_QUEUE_FULL == SB_SIM_REJECT_QUEUE && SB_LIVE_TOO_LONG == SB_SIM_REJECT_TOO_LONG &&
		       SB_LIVE_CANCELLED == SIM_CANCELLED,
	       "live.h's reasons are sim's");

/* sim's end-of-request hook: the request's story, to the caller. */
static void live_done(sim *s, long ri, double t, int rejected)
{
	sb_live *l = (sb_live *)s->done_ctx;
	const req *r = &s->reqs[ri];
	sb_live_done d = {
		.handle = ri,
		.cookie = r->cookie,
		.why = rejected,
		.prompt_tokens = r->in_len,
		.output_tokens = rejected ? 0 : r->out_len,
		.slot = r->slot,
		.t_submit = r->t_sched,
		.t_arrive = r->t_arr,
		.t_join = r->t_join,
		.t_first = rejected ? NAN : r->t_first,
		.t_done = t,
	};
	l->on_done(l->ctx, &d);
}

sb_live *sb_live_new(const sb_model *m, unsigned long seed, int no_noise,
		     sb_live_done_fn on_done, void *ctx, sb_error *e)
{
	if (sb_model_validate(m, e) < 0)
		return NULL;
	sb_live *l = calloc(1, sizeof *l);
	if (!l) {
		sb_error_set(e, "out of memory");
		return NULL;
	}
	if (sim_init(&l->s, m, NULL, 0, NULL, no_noise, seed, NULL, e) < 0) {
		sim_free(&l->s);
		free(l);
		return NULL;
	}
	l->s.src = SRC_LIVE;
	l->s.on_done = live_done;
	l->s.done_ctx = l;
	l->on_done = on_done;
	l->ctx = ctx;
	return l;
}

void sb_live_free(sb_live *l)
{
	if (!l)
		return;
	sim_free(&l->s);
	free(l);
}

long sb_live_submit(sb_live *l, double t, long prompt, long output, int want_slot,
		    void *cookie)
{
	if (t > l->now)
		l->now = t;
	long ri = sim_submit(&l->s, l->now, prompt, output);
	if (ri < 0)
		return -ENOMEM;
	l->s.reqs[ri].cookie = cookie;
	l->s.reqs[ri].want_slot = want_slot < l->s.srv[0].S ? want_slot : -1;
	return ri;
}

int sb_live_advance(sb_live *l, double t)
{
	if (t > l->now)
		l->now = t;
	sb_error e;
	return sim_loop_until(&l->s, l->now, &e);
}

/* Steps of v's current decode run that have ended by t (0 for a prefill
 * step, which ends as an event). */
static long steps_done(const server *v, double t)
{
	if (!v->running || v->run_prefill || t <= v->run_t0)
		return 0;
	long j = sim_run_first_boundary(v, t);
	return sim_run_boundary(v, j) <= t ? j : j - 1;
}

double sb_live_next(const sb_live *l)
{
	double t = sim_next_event(&l->s);
	const server *v = &l->s.srv[0];
	long j = steps_done(v, l->now);
	if (v->running && !v->run_prefill && j + 1 < v->run_k) {
		double b = sim_run_boundary(v, j + 1);
		if (b < t)
			t = b;
	}
	return t;
}

/* Request h's slot, or NULL when it holds none. */
static const slot *slot_of(const sb_live *l, long h)
{
	const req *r = &l->s.reqs[h];
	const server *v = &l->s.srv[r->srv];
	if (r->slot < 0 || v->slots[r->slot].r != h)
		return NULL;
	return &v->slots[r->slot];
}

long sb_live_tokens(const sb_live *l, long h, double t, double *t_last)
{
	const slot *sl = slot_of(l, h);
	const server *v = &l->s.srv[0];
	if (t_last)
		*t_last = NAN;
	if (!sl || sl->state != SL_DECODE)
		return 0;
	long j = steps_done(v, t);
	/* a run starts where the step that made the last token ended */
	if (t_last)
		*t_last = j > 0 ? sim_run_boundary(v, j) : v->run_t0;
	return sl->gen + j;
}

double sb_live_token_time(const sb_live *l, long h, long i)
{
	const slot *sl = slot_of(l, h);
	const server *v = &l->s.srv[0];
	if (!sl || sl->state != SL_DECODE)
		return NAN;
	if (i > sl->gen && v->running && !v->run_prefill)
		return sim_run_boundary(v, i - sl->gen);
	return v->run_t0;
}

void sb_live_cancel(sb_live *l, long h, double t)
{
	sim *s = &l->s;
	req *r = &s->reqs[h];
	server *v = &s->srv[r->srv];
	if (t > l->now)
		l->now = t;
	slot *sl = (slot *)slot_of(l, h);
	if (!sl) {
		if (sim_queue_remove(v, h))
			sim_finish_req(s, h, l->now, SIM_CANCELLED);
		else
			r->cancelled = 1; /* on its way: it ends when it arrives */
		return;
	}
	if (sl->state == SL_RELEASE)
		return;
	if (sl->state != SL_DECODE) {
		/* its prompt ends with the step in progress (or, not yet in
		 * one, with a token), which makes its one token */
		long upto = sl->state == SL_PREFILL ? sl->pos + sl->chunk : 1;
		sl->in_len = r->in_len = sl->pre_len = upto > 0 ? upto : 1;
		sl->out_len = r->out_len = 1;
		return;
	}
	/* it stops after the step in progress: one token more than it has */
	long now_gen = sl->gen + steps_done(v, l->now);
	if (now_gen + 1 < sl->out_len) {
		sl->out_len = r->out_len = now_gen + 1;
		sim_run_cut(s, v, l->now);
	}
}

void sb_live_get_state(const sb_live *l, sb_live_state *st)
{
	const server *v = &l->s.srv[0];
	memset(st, 0, sizeof *st);
	st->slots = v->S;
	for (int i = 0; i < v->S; i++) {
		const slot *sl = &v->slots[i];
		if (sl->state == SL_FREE || sl->state == SL_RELEASE)
			continue;
		st->busy++;
		st->kv_tokens += sl->pos + sl->gen;
	}
	long outstanding = l->s.nreqs - l->s.nfreereq;
	st->waiting = outstanding - st->busy;
}

long sb_live_slot(const sb_live *l, int i, double t, long *prompt, long *generated)
{
	const server *v = &l->s.srv[0];
	*prompt = *generated = 0;
	if (i < 0 || i >= v->S)
		return -1;
	const slot *sl = &v->slots[i];
	if (sl->state == SL_FREE || sl->state == SL_RELEASE)
		return -1;
	*prompt = sl->in_len;
	*generated = sl->state == SL_DECODE ? sl->gen + steps_done(v, t) : 0;
	return sl->r;
}
