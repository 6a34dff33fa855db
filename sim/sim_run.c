/* sim_run.c — one simulated level: setting the simulator up, running it,
 * its summary; capacity; the replay of given requests (sim.h). */
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

/* ---- driver ------------------------------------------------------------ */

void sim_free(sim *s)
{
	sb_heap_free(s->heap);
	free(s->reqs);
	free(s->freereq);
	for (int i = 0; s->srv && i < s->n_srv; i++) {
		free(s->srv[i].q);
		free(s->srv[i].slots);
		free(s->srv[i].held);
		sb_idset_fini(&s->srv[i].blocks);
		free(s->srv[i].freeslot);
	}
	free(s->srv);
	conv_free(s);
	sb_router_free(s->router);
	sb_timers_free(s->timers);
	sb_whist_free(s->itl);
	if (s->acc_ok)
		sb_levelacc_fini(&s->acc);
	if (s->rl)
		gsl_rng_free(s->rl);
	if (s->rs)
		gsl_rng_free(s->rs);
	if (s->rr)
		gsl_rng_free(s->rr);
	free(s->recs);
	free(s->order);
}

/* Sets up server v on model m: its settings, all slots free (per-slot
 * caches: their release order drawn from s->rs). Returns 0 or -ENOMEM. */
static int server_init(sim *s, server *v, const sb_model *m, int group)
{
	v->m = m;
	v->group = group;
	v->S = m->slots;
	v->max_queue = m->max_queue;
	v->batch_tokens = m->batch_tokens;
	v->noise_cv = m->noise_cv;
	v->prefill_cv = m->noise_prefill_cv;
	v->noise_kind = m->noise_kind;
	v->ovh_ms = m->overhead_ms;
	v->ovh_sd_ms = m->overhead_sd_ms;
	v->ovh_tok_ms = m->overhead_per_token_ms;
	v->admit_s = m->admit_delay_ms / 1000.0;
	v->release_s = s->service_mode ? 0 : sb_model_release_ms(m, m->slots) / 1000.0;
	/* vllm: decode_ms is its fitted line everywhere (no table to leave) */
	v->dec_last = s->service_mode || m->engine == SB_ENGINE_VLLM ? INT_MAX : sb_model_decode_last(m);
	v->split_prob = s->no_noise ? 0 : m->split_prob;
	v->split_crowded = s->no_noise ? 0 : m->split_prob_crowded;
	v->idle_join_t = -INFINITY;
	v->idle_t0 = -INFINITY;
	v->slots = calloc((size_t)v->S, sizeof *v->slots);
	v->freeslot = calloc((size_t)v->S, sizeof *v->freeslot);
	if (!v->slots || !v->freeslot)
		return -ENOMEM;
	v->per_slot = !s->service_mode && m->kv_cache == SB_KV_PER_SLOT;
	v->vllm = !s->service_mode && m->engine == SB_ENGINE_VLLM;
	v->block_size = m->block_size;
	v->gpu_blocks = m->gpu_blocks;
	v->pcache = s->service_mode ? SB_PCACHE_NONE : (int)m->prompt_cache;
	if (v->vllm)
		v->split_prob = v->split_crowded = 0;
	for (int i = 0; i < v->S; i++) {
		v->slots[i].r = -1;
		v->slots[i].cache_group = -1;
		v->slots[i].cache_len = 0;
		v->slots[i].cache_blocks = NULL;
		v->slots[i].n_cache_blocks = 0;
		/* per-slot: which slot was released longest ago is not known
		 * at a level's start (the server's history decides it), so
		 * the order is drawn; it sets which slots requests share */
		v->slots[i].released = v->per_slot ? -1 - gsl_rng_uniform(s->rs) : -1;
		/* pushed in reverse so slot 0 is taken first */
		v->freeslot[v->nfreeslot++] = v->S - 1 - i;
	}
	s->S += v->S;
	return 0;
}

/* Sets up everything common; the caller fills the source fields. The
 * servers: fleet f's replicas (m for groups without a model), or m alone
 * when f is NULL or of one replica. */
int sim_init(sim *s, const sb_model *m, const sb_fleet *f, int service_mode,
	     const sb_dist *service, int no_noise, unsigned long seed,
	     const sb_slo *slo, sb_error *e)
{
	memset(s, 0, sizeof *s);
	s->follow_idx = -1;
	s->service_mode = service_mode;
	if (service)
		s->service = *service;
	s->no_noise = no_noise;
	s->queue_cap = LONG_MAX;
	s->next_gen_t = INFINITY;
	sb_stepnoise_init(&s->noise);
	s->pct = (slo && slo->percentile > 0 && slo->percentile < 100) ? slo->percentile : 99;
	s->n_srv = f ? sb_fleet_size(f) : 1;
	s->srv = calloc((size_t)s->n_srv, sizeof *s->srv);
	s->heap = sb_heap_new();
	s->itl = sb_whist_new();
	s->timers = sb_timers_new(s->n_srv);
	s->rl = sb_rng_new((unsigned long)sb_seed_mix((uint64_t)seed ^ 0x1111));
	s->rs = sb_rng_new((unsigned long)sb_seed_mix((uint64_t)seed ^ 0x2222));
	if (!s->srv || !s->heap || !s->itl || !s->timers || !s->rl || !s->rs)
		return sb_error_code(e, -ENOMEM, "out of memory");
	if (s->n_srv > 1) {
		s->rr = sb_rng_new((unsigned long)sb_seed_mix((uint64_t)seed ^ 0x3333));
		s->router = sb_router_new(f->route, s->n_srv);
		if (!s->rr || !s->router)
			return sb_error_code(e, -ENOMEM, "out of memory");
	}
	if (sb_levelacc_init(&s->acc, slo) < 0)
		return sb_error_code(e, -ENOMEM, "out of memory");
	s->acc_ok = 1;
	for (int i = 0; i < s->n_srv; i++) {
		int g = 0;
		const sb_model *mi = s->n_srv > 1 ? sb_fleet_model(f, m, i, &g) : m;
		if (server_init(s, &s->srv[i], mi, g) < 0)
			return sb_error_code(e, -ENOMEM, "out of memory");
	}
	return 0;
}

/* Server v's busy slot-time over the window [s->t0, s->t_end]. */
static double server_busy(const sim *s, const server *v)
{
	double end;
	if (v->end_t == s->t_end)
		end = v->busy_area_end;
	else if (v->busy_t <= s->t_end)
		end = v->busy_area + (double)v->nbusy * (s->t_end - v->busy_t);
	else
		end = v->x_t == s->t_end ? v->busy_area_x : NAN;
	return end - v->busy_area_t0;
}

/* A fleet's per-replica figures and how uneven they were, into out
 * (window > 0). Returns 0 or -ENOMEM. */
static int fleet_finish(const sim *s, double window, sb_sim_level *out)
{
	out->replicas = calloc((size_t)s->n_srv, sizeof *out->replicas);
	if (!out->replicas)
		return -ENOMEM;
	out->n_replicas = s->n_srv;
	long all = 0;
	double busy = 0, smin = INFINITY, smax = 0, u1 = 0, u2 = 0;
	for (int i = 0; i < s->n_srv; i++)
		all += s->srv[i].n_routed;
	for (int i = 0; i < s->n_srv; i++) {
		const server *v = &s->srv[i];
		sb_sim_replica *p = &out->replicas[i];
		double b = server_busy(s, v);
		double area = v->infl_area + (double)v->infl * (s->t_end - v->infl_t);
		busy += b;
		p->group = v->group;
		p->slots = v->S;
		p->requests = v->n_routed;
		p->share = all ? (double)v->n_routed / (double)all : NAN;
		p->utilization = b / ((double)v->S * window);
		p->req_s = (double)v->n_done / window;
		p->mean_inflight = area / window;
		p->l_law = v->n_done ? p->req_s * v->sojourn_s / (double)v->n_done : 0;
		smin = p->share < smin ? p->share : smin;
		smax = p->share > smax ? p->share : smax;
		u1 += p->utilization;
		u2 += p->utilization * p->utilization;
	}
	double n = (double)s->n_srv, um = u1 / n, uv = u2 / n - um * um;
	out->share_ratio = smin > 0 ? smax / smin : INFINITY;
	out->util_cv = um > 0 ? sqrt(uv > 0 ? uv * n / (n - 1) : 0) / um : NAN;
	out->utilization = busy / ((double)s->S * window);
	return 0;
}

/* Fills the level summary from the accumulators. Returns 0 or -ENOMEM. */
static int sim_finish(sim *s, double level, sb_mode mode, sb_sim_level *out)
{
	double window = s->t0_set ? s->t_end - s->t0 : 0;
	const server *v = &s->srv[0];
	out->ttft_pct_ms = sb_hist_quantile(&s->acc.ttft, s->pct / 100.0);
	out->tpot_pct_ms = sb_hist_quantile(&s->acc.tpot, s->pct / 100.0);
	sb_levelacc_finish(&s->acc, level, mode, window > 0 ? window : -1, &out->sum);
	if (!s->service_mode)
		sb_whist_summary(s->itl, &out->sum.itl_ms);
	out->utilization = window > 0
		? (v->busy_area_end - v->busy_area_t0) / ((double)v->S * window) : NAN;
	out->rejected = s->rejected;
	out->too_long = s->too_long;
	out->preempted = s->preempted;
	out->cached_tokens = s->cached_tokens;
	out->prompt_tokens = s->prompt_tokens;
	out->truncated = s->truncated;
	out->output_cut = s->output_cut;
	out->extrap_lo = s->xlo;
	out->extrap_hi = s->xhi;
	out->generated = s->generated;
	out->max_waiting = s->max_waiting;
	out->diverged = s->diverged;
	out->sim_end_s = s->now;
	out->share_ratio = out->util_cv = NAN;
	if (s->n_srv > 1 && window > 0)
		return fleet_finish(s, window, out);
	return 0;
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
	if (sb_fleet_validate(&o->fleet, e) < 0)
		return -EINVAL;
	sim s;
	int rc = sim_init(&s, m, &o->fleet, o->service_mode, &o->service, o->no_noise, seed,
			  &w->slo, e);
	if (rc < 0)
		goto out;
	s.w = w;
	s.n_groups = w->prefix_len > 0 ? w->prefix_groups : 0;
	s.level = level;
	s.pin_stride = o->service_mode ? 0 : o->pin_stride;
	s.warmup = w->warmup > 0 ? w->warmup : 0;
	s.warmup_s = o->warmup_s > 0 ? o->warmup_s : 0;
	s.to_count = w->requests;
	s.duration_s = w->duration_s;
	s.keep_records = o->keep_records;
	s.queue_cap = o->queue_cap > 0 ? o->queue_cap : 200000;
	s.conversations = !o->service_mode && sb_workload_is_conversation(w);
	if (s.conversations &&
	    conv_setup(&s, w->mode == SB_MODE_CONCURRENCY ? (long)level : 0) < 0) {
		rc = sb_error_code(e, -ENOMEM, "out of memory");
		goto out;
	}
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
	if (sim_finish(&s, level, w->mode, out) < 0) {
		rc = sb_error_code(e, -ENOMEM, "out of memory");
		goto out;
	}
	out->seed = seed;
	out->recs = s.recs;
	out->n_recs = s.nrecs;
	s.recs = NULL;
out:
	sim_free(&s);
	return rc;
}

static int server_capacity(const sb_model *m, const sb_sim_opts *o,
			   const sb_workload *w, double *mu, sb_error *e);

int sb_sim_capacity(const sb_model *m, const sb_sim_opts *o,
		    const sb_workload *w, double *mu, sb_error *e)
{
	int n = sb_fleet_size(&o->fleet);
	if (n == 1)
		return server_capacity(m, o, w, mu, e);
	/* a fleet: the sum of its replicas' capacities, one per group */
	const sb_fleet *f = &o->fleet;
	int groups = f->n_groups ? f->n_groups : 1;
	*mu = 0;
	for (int g = 0; g < groups; g++) {
		const sb_model *mg = f->n_groups && f->groups[g].model ? f->groups[g].model : m;
		int count = f->n_groups ? f->groups[g].count : f->replicas;
		double mug;
		int rc = server_capacity(mg, o, w, &mug, e);
		if (rc < 0)
			return rc;
		*mu += count * mug;
	}
	return 0;
}

/* The capacity of one server of model m (see sb_sim_capacity). */
static int server_capacity(const sb_model *m, const sb_sim_opts *o,
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
	sb_fleet_init(&oc.fleet);
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

static _Thread_local const sb_replay_req *sort_base; /* qsort has no context */

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
		if (reqs[i].prefix_tokens < 0 || reqs[i].prefix_tokens > reqs[i].prompt_tokens ||
		    (reqs[i].prefix_tokens > 0 &&
		     (reqs[i].prefix_group < 0 || reqs[i].prefix_group >= 1000000)))
			return sb_error_set(e, "replay: request %zu has a prefix of %ld tokens (group %ld) "
					       "in a prompt of %ld (need 0..prompt tokens, group 0..999999)",
					    i, reqs[i].prefix_tokens, reqs[i].prefix_group,
					    reqs[i].prompt_tokens);
	}
	for (size_t i = 0; i < n; i++)
		if (reqs[i].n_blocks < 0 || (reqs[i].n_blocks > 0 &&
					     (!reqs[i].blocks || reqs[i].block_tokens < 1)))
			return sb_error_set(e, "replay: request %zu names %ld prompt blocks of %ld "
					       "tokens (need their ids and at least 1 token each)",
					    i, reqs[i].n_blocks, reqs[i].block_tokens);
	if (ro->mode == SB_MODE_CONCURRENCY && ro->concurrency < 1)
		return sb_error_set(e, "replay: concurrency %d must be at least 1", ro->concurrency);
	if (ro->fleet && sb_fleet_validate(ro->fleet, e) < 0)
		return -EINVAL;
	sim s;
	int rc = sim_init(&s, m, ro->fleet, 0, NULL, ro->no_noise, ro->seed, NULL, e);
	if (rc < 0)
		goto out;
	s.rq = reqs;
	s.rn = n;
	for (size_t i = 0; i < n; i++)
		if (reqs[i].prefix_tokens > 0 && reqs[i].prefix_group >= s.n_groups)
			s.n_groups = reqs[i].prefix_group + 1;
	s.pred = pred;
	s.to_count = (long)n;
	s.think_s = ro->think_s > 0 ? ro->think_s : 0;
	for (size_t i = 0; i < n; i++) {
		pred[i].t_sent_s = pred[i].t_done_s = NAN;
		pred[i].ttft_ms = pred[i].e2e_ms = pred[i].tpot_ms = pred[i].wait_ms = NAN;
		pred[i].rejected = 0;
		pred[i].replica = 0;
	}
	double level;
	if (ro->mode == SB_MODE_RATE) {
		s.src = SRC_REPLAY_OPEN;
		s.order = malloc(n * sizeof *s.order);
		if (!s.order) {
			rc = sb_error_code(e, -ENOMEM, "out of memory");
			goto out;
		}
		if (conv_replay_follows(&s) < 0) {
			rc = sb_error_code(e, -ENOMEM, "out of memory");
			goto out;
		}
		/* a conversation's later turns follow their turn before */
		for (size_t i = 0; i < n; i++)
			if (!s.follows || !s.follows[i])
				s.order[s.n_order++] = i;
		size_t k = s.n_order;
		sort_base = reqs;
		qsort(s.order, k, sizeof *s.order, cmp_sched);
		sort_base = NULL;
		s.next_gen_t = reqs[s.order[0]].t_sched_s;
		s.next_gen_arg = 0;
		double span = reqs[s.order[k - 1]].t_sched_s - reqs[s.order[0]].t_sched_s;
		level = span > 0 ? (double)(k - 1) / span : 0;
	} else {
		s.src = SRC_REPLAY_CLOSED;
		if (conv_replay_setup(&s, ro->concurrency) < 0) {
			rc = sb_error_code(e, -ENOMEM, "out of memory");
			goto out;
		}
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
		if (sim_finish(&s, level, ro->mode, &tmp) < 0) /* fleets allocate */
			rc = sb_error_code(e, -ENOMEM, "out of memory");
		*lv = tmp.sum;
		sb_sim_level_fini(&tmp);
	}
out:
	sim_free(&s);
	return rc;
}
