/* compare_replay.c — the replay of measured levels through the simulator, and the
 * routed comparison of a fleet (compare.h). */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "sim/sim.h"
#include "compare_internal.h"
#include "core/trace.h"

/* ---- replay ------------------------------------------------------------ */

/* One level's replay: the measured records it replays and what the
 * replications predict for each. Arrays hold n entries (k used). */
typedef struct replay {
	const sb_rlevel *rl;
	size_t n, k;            /* records; successful ones, replayed */
	idx_time *ord;          /* replayed records in send order */
	sb_replay_req *rq;      /* what the simulator is given, by send order */
	sb_replay_pred *pd;     /* what it predicts */
	unsigned char *counted; /* in the statistics (not warm-up) */
	sb_reqrec *recs;        /* counted records, measured or predicted */
	welford *wt, *we;       /* predicted TTFT, E2E per counted request */
	long n_counted, warm, lmin_in, lmax_in, lmin_out, lmax_out;
	/* a fleet (n_rep >= 2): each replayed request's replica, one replica's
	 * requests and predictions gathered, the per-replica predicted
	 * statistics over replications (n_rep x SB_MET_N), scratch records */
	size_t n_rep;
	long *rep_of;
	size_t *sub_idx;
	sb_replay_req *sub_rq;
	sb_replay_pred *sub_pd;
	welford *rwm;
	sb_reqrec *sub_recs;
	double think_s;   /* closed loop: the clients' pause between requests */
} replay;

static void replay_free(replay *rp)
{
	free(rp->ord);
	free(rp->rq);
	free(rp->pd);
	free(rp->counted);
	free(rp->recs);
	free(rp->wt);
	free(rp->we);
	free(rp->rep_of);
	free(rp->sub_idx);
	free(rp->sub_rq);
	free(rp->sub_pd);
	free(rp->rwm);
	free(rp->sub_recs);
}

/* A fleet's scratch space for n_rep replicas (rp->n records). */
static int replay_alloc_fleet(replay *rp, size_t n_rep)
{
	size_t n = rp->n ? rp->n : 1;
	rp->n_rep = n_rep;
	rp->rep_of = calloc(n, sizeof(*rp->rep_of));
	rp->sub_idx = malloc(n * sizeof(*rp->sub_idx));
	rp->sub_rq = malloc(n * sizeof(*rp->sub_rq));
	rp->sub_pd = malloc(n * sizeof(*rp->sub_pd));
	rp->rwm = calloc(n_rep * SB_MET_N, sizeof(*rp->rwm));
	rp->sub_recs = malloc(n * sizeof(*rp->sub_recs));
	if (!rp->rep_of || !rp->sub_idx || !rp->sub_rq || !rp->sub_pd || !rp->rwm ||
	    !rp->sub_recs)
		return -ENOMEM;
	return 0;
}

static int replay_alloc(replay *rp, const sb_rlevel *rl)
{
	memset(rp, 0, sizeof(*rp));
	rp->rl = rl;
	rp->n = rl->n_reqs;
	size_t n = rp->n ? rp->n : 1;
	rp->ord = malloc(n * sizeof(*rp->ord));
	rp->rq = malloc(n * sizeof(*rp->rq));
	rp->pd = malloc(n * sizeof(*rp->pd));
	rp->counted = calloc(n, 1);
	rp->recs = malloc(n * sizeof(*rp->recs));
	rp->wt = calloc(n, sizeof(*rp->wt));
	rp->we = calloc(n, sizeof(*rp->we));
	rp->lmin_in = rp->lmax_in = rp->lmin_out = rp->lmax_out = -1;
	if (!rp->ord || !rp->rq || !rp->pd || !rp->counted || !rp->recs || !rp->wt || !rp->we)
		return -ENOMEM;
	return 0;
}

/* The closed-loop clients' pause between requests: the caller's, else the
 * measured workload's (its mean: a drawn think time is replayed as that). */
static double replay_think(const sb_compare_opts *o, const sb_results *meas)
{
	return o->think_s > 0 ? o->think_s : sb_dist_mean(&meas->workload.think_s);
}

/* The successful records in send order (open loop: scheduled send). */
static void replay_order(replay *rp, sb_mode mode)
{
	for (size_t i = 0; i < rp->n; i++) {
		const sb_reqrec *q = &rp->rl->reqs[i];
		if (q->err_class)
			continue;
		double t = mode == SB_MODE_RATE ? q->t_scheduled_s : q->t_sent_s;
		if (!isfinite(t))
			t = isfinite(q->t_sent_s) ? q->t_sent_s : (double)i;
		rp->ord[rp->k++] = (idx_time){ i, t, q->id };
	}
	qsort(rp->ord, rp->k, sizeof(*rp->ord), cmp_idx_time);
}

/* Replayed request j: its lengths and (open loop) send time, and whether
 * it is counted. */
static void replay_request(replay *rp, const sb_results *meas, size_t li, sb_mode mode, size_t j)
{
	const sb_reqrec *q = &rp->rl->reqs[rp->ord[j].i];
	long pin = q->prompt_tokens >= 1 ? q->prompt_tokens : dist_len(&meas->workload.input_len);
	/* a prompt that began with a shared prefix (or a conversation's
	 * history: its record's prefix_tokens; or a trace's blocks): all its
	 * tokens, the
	 * model's prompt cache deciding what was computed before; else the
	 * tokens the server actually prefilled (prompt-cache hits excluded),
	 * as the calibration counts them */
	long prefix = 0;
	if (q->prefix_group >= 0 && pin > 1)
		prefix = q->prefix_tokens > 0 ? q->prefix_tokens : meas->workload.prefix_len;
	double pn = rp->rl->timing[rp->ord[j].i].prompt_n;
	if (pn >= 1 && !prefix && !q->n_blocks)
		pin = (long)pn;
	long pout = q->output_tokens >= 1 ? q->output_tokens : dist_len(&meas->workload.output_len);
	/* open loop (and a fleet's replicas): the level's clock starts at its
	 * first send */
	double t = mode == SB_MODE_RATE || rp->n_rep ? rp->ord[j].t - rp->ord[0].t : 0.0;
	rp->rq[j] = (sb_replay_req){ t, pin, pout, q->slot, prefix < pin ? prefix : pin - 1,
				     q->prefix_group, 0, 0, q->blocks, q->n_blocks,
				     SB_TRACE_BLOCK_TOKENS };
	if (rp->n_rep)
		rp->rep_of[j] = q->replica > 0 ? q->replica : 0;
	rp->counted[j] = !q->warmup;
	if (!rp->counted[j]) {
		rp->warm++;
		return;
	}
	rp->n_counted++;
	if (rp->lmin_in < 0 || pin < rp->lmin_in)
		rp->lmin_in = pin;
	if (pin > rp->lmax_in)
		rp->lmax_in = pin;
	if (rp->lmin_out < 0 || pout < rp->lmin_out)
		rp->lmin_out = pout;
	if (pout > rp->lmax_out)
		rp->lmax_out = pout;
}

typedef struct {
	long group, turn;
	size_t j;
} turn_ref;

static int cmp_turn(const void *a, const void *b)
{
	const turn_ref *x = a, *y = b;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->turn != y->turn)
		return x->turn < y->turn ? -1 : 1;
	return x->j < y->j ? -1 : x->j > y->j;
}

/* Conversations: each replayed turn names the same conversation's next one
 * (its record's prefix_group and turn), so that the replay sends it after
 * this one's answer, as the measured client did (closed loop: the same
 * client; open loop: whenever that answer comes), and as long after it as
 * the measured client paused (its think time and its own delay). Returns 0
 * or -ENOMEM. */
static int link_turns(replay *rp)
{
	turn_ref *t = malloc((rp->k ? rp->k : 1) * sizeof *t);
	if (!t)
		return -ENOMEM;
	size_t n = 0;
	for (size_t j = 0; j < rp->k; j++) {
		const sb_reqrec *q = &rp->rl->reqs[rp->ord[j].i];
		if (q->prefix_group >= 0 && q->turn >= 1)
			t[n++] = (turn_ref){ q->prefix_group, q->turn, j };
	}
	qsort(t, n, sizeof *t, cmp_turn);
	for (size_t a = 0; a + 1 < n; a++) {
		if (t[a + 1].group != t[a].group || t[a + 1].turn != t[a].turn + 1)
			continue;
		rp->rq[t[a].j].next_turn = t[a + 1].j + 1;
		const sb_reqrec *x = &rp->rl->reqs[rp->ord[t[a].j].i];
		const sb_reqrec *y = &rp->rl->reqs[rp->ord[t[a + 1].j].i];
		double pause = y->t_scheduled_s - x->t_done_s;
		rp->rq[t[a + 1].j].pause_s = pause > 0 ? pause : 0;
	}
	free(t);
	return 0;
}

/* The summary of replica g's records among rp->recs[0..c) (*n_out of
 * them). 0 or -ENOMEM. */
static int replica_summary(replay *rp, size_t c, size_t g, const sb_cmp_level *cl,
			   sb_level *out, size_t *n_out)
{
	size_t k = 0;
	for (size_t i = 0; i < c; i++)
		if (rp->recs[i].replica == (long)g)
			rp->sub_recs[k++] = rp->recs[i];
	*n_out = k;
	return sb_level_of_records(rp->sub_recs, k, cl->level, cl->mode, out);
}

/* Replays a fleet's requests replica by replica, each open loop at its
 * measured send times on a server of its own, into rp->pd. */
static int replay_fleet(replay *rp, const sb_model *m, const sb_replay_opts *ro, sb_error *e)
{
	sb_replay_opts one = *ro;
	one.mode = SB_MODE_RATE;
	for (size_t g = 0; g < rp->n_rep; g++) {
		size_t k = 0;
		for (size_t j = 0; j < rp->k; j++) {
			if ((size_t)rp->rep_of[j] != g)
				continue;
			rp->sub_idx[k] = j;
			rp->sub_rq[k++] = rp->rq[j];
		}
		if (k == 0)
			continue;
		one.seed = sb_seed_derive(ro->seed, FLEET_STREAM, g);
		int r = sb_sim_replay(m, &one, rp->sub_rq, k, rp->sub_pd, NULL, e);
		if (r < 0) {
			sb_error_prefix(e, "replica %zu", g);
			return r;
		}
		for (size_t i = 0; i < k; i++)
			rp->pd[rp->sub_idx[i]] = rp->sub_pd[i];
	}
	return 0;
}

/* A fleet's per-replica prediction of one replication (rp->recs[0..c)
 * predicted) added to rp->rwm. 0 or -ENOMEM. */
static int replica_predicted(replay *rp, size_t c, const sb_cmp_level *cl)
{
	for (size_t g = 0; g < rp->n_rep; g++) {
		sb_level ps;
		size_t k;
		if (replica_summary(rp, c, g, cl, &ps, &k) < 0)
			return -ENOMEM;
		for (size_t i = 0; i < SB_COMPARE_N_METRICS; i++) {
			sb_metric mk = sb_compare_metrics[i];
			welford_add(&rp->rwm[g * SB_MET_N + mk], sb_metric_get(&ps, mk));
		}
	}
	return 0;
}

/* A fleet's per-replica predictions (mean, sd over replications) and errors. */
static void replica_finish(const replay *rp, sb_cmp_level *cl)
{
	for (size_t g = 0; g < rp->n_rep; g++) {
		sb_cmp_level *rl = &cl->replicas[g];
		for (size_t i = 0; i < SB_COMPARE_N_METRICS; i++) {
			sb_metric k = sb_compare_metrics[i];
			rl->pred[k] = welford_mean(&rp->rwm[g * SB_MET_N + k]);
			rl->pred_sd[k] = welford_sd(&rp->rwm[g * SB_MET_N + k]);
			rl->err_pct[k] = sb_compare_err_pct(rl->meas[k], rl->pred[k]);
		}
	}
}

/* The measured side, recomputed from the counted records, into cl->meas. */
static int replay_measured(replay *rp, sb_cmp_level *cl)
{
	size_t c = 0;
	for (size_t j = 0; j < rp->k; j++) {
		if (!rp->counted[j])
			continue;
		sb_reqrec *q = &rp->recs[c++];
		*q = rp->rl->reqs[rp->ord[j].i];
		q->prompt_tokens = rp->rq[j].prompt_tokens;
		q->output_tokens = rp->rq[j].output_tokens;
		q->itl_ms = NULL;
		q->n_itl = 0;
		q->replica = rp->n_rep ? rp->rep_of[j] : -1;
		if (!isfinite(q->t_done_s))
			q->t_done_s = q->t_scheduled_s + q->e2e_ms / 1e3;
	}
	sb_level ms;
	if (sb_level_of_records(rp->recs, c, cl->level, cl->mode, &ms) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < SB_COMPARE_N_METRICS; i++)
		cl->meas[sb_compare_metrics[i]] = sb_metric_get(&ms, sb_compare_metrics[i]);
	for (size_t g = 0; g < rp->n_rep; g++) {
		size_t k;
		if (replica_summary(rp, c, g, cl, &ms, &k) < 0)
			return -ENOMEM;
		cl->replicas[g].n_counted = (long)k;
		for (size_t i = 0; i < SB_COMPARE_N_METRICS; i++)
			cl->replicas[g].meas[sb_compare_metrics[i]] =
				sb_metric_get(&ms, sb_compare_metrics[i]);
	}
	return 0;
}

/* rp->recs: the counted requests as predicted (rp->pd); adds their TTFT
 * and E2E to the per-request means. Returns how many. */
static size_t replay_predicted(replay *rp)
{
	size_t c = 0;
	for (size_t j = 0; j < rp->k; j++) {
		if (!rp->counted[j])
			continue;
		const sb_replay_pred *p = &rp->pd[j];
		sb_reqrec *q = &rp->recs[c];
		memset(q, 0, sizeof(*q));
		q->id = rp->rl->reqs[rp->ord[j].i].id;
		q->replica = rp->n_rep ? rp->rep_of[j] : -1;
		q->t_scheduled_s = q->t_sent_s = p->t_sent_s;
		q->t_done_s = p->t_done_s;
		q->ttft_ms = p->ttft_ms;
		q->e2e_ms = p->e2e_ms;
		q->wait_ms = p->wait_ms;
		q->prompt_tokens = rp->rq[j].prompt_tokens;
		q->output_tokens = rp->rq[j].output_tokens;
		q->err_class = p->rejected ? "rejected" : NULL;
		q->err_msg = p->rejected ? "turned away by max_queue (simulated)" : NULL;
		if (!p->rejected) {
			welford_add(&rp->wt[c], p->ttft_ms);
			welford_add(&rp->we[c], p->e2e_ms);
		}
		c++;
	}
	return c;
}

/* Replication `rep` of the replay: adds its level summary to wm; with rep
 * 0 also *sum0 and the records appended to sim_reqs. */
static int replay_once(replay *rp, const sb_model *m, const sb_replay_opts *ro,
		       sb_cmp_level *cl, int rep, welford *wm, json_t *sim_reqs, sb_level *sum0,
		       sb_error *e)
{
	int r = rp->n_rep ? replay_fleet(rp, m, ro, e)
			  : sb_sim_replay(m, ro, rp->rq, rp->k, rp->pd, NULL, e);
	if (r < 0) {
		sb_error_prefix(e, "replay of level %g", cl->level);
		return r;
	}
	size_t c = replay_predicted(rp);
	sb_level ps;
	if (sb_level_of_records(rp->recs, c, cl->level, cl->mode, &ps) < 0 ||
	    replica_predicted(rp, c, cl) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < SB_COMPARE_N_METRICS; i++)
		welford_add(&wm[sb_compare_metrics[i]], sb_metric_get(&ps, sb_compare_metrics[i]));
	if (rep != 0)
		return 0;
	*sum0 = ps;
	for (size_t j = 0; j < c; j++) {
		json_t *jr = sb_reqrec_to_json(&rp->recs[j], NULL);
		if (jr && rp->n_rep)
			json_object_set_new(jr, "replica", json_integer(rp->recs[j].replica));
		if (!jr || json_array_append_new(sim_reqs, jr))
			return -ENOMEM;
	}
	return 0;
}

/* The replications of the replay: cl->pred and pred_sd. */
static int replay_all(replay *rp, const sb_model *m, const sb_compare_opts *o, size_t li,
		      sb_cmp_level *cl, json_t *sim_reqs, sb_level *sum0, sb_error *e)
{
	int reps = o->no_noise ? 1 : (o->replications > 0 ? o->replications : 1);
	sb_replay_opts ro;
	memset(&ro, 0, sizeof(ro));
	ro.mode = cl->mode;
	ro.concurrency = (int)lround(cl->level);
	if (ro.concurrency < 1)
		ro.concurrency = 1;
	ro.think_s = rp->think_s;
	ro.no_noise = o->no_noise;
	welford wm[SB_MET_N];
	memset(wm, 0, sizeof(wm));
	for (int rep = 0; rep < reps; rep++) {
		ro.seed = sb_seed_derive(o->seed, li, (unsigned long)rep);
		int r = replay_once(rp, m, &ro, cl, rep, wm, sim_reqs, sum0, e);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < SB_COMPARE_N_METRICS; i++) {
		sb_metric k = sb_compare_metrics[i];
		cl->pred[k] = welford_mean(&wm[k]);
		cl->pred_sd[k] = welford_sd(&wm[k]);
	}
	replica_finish(rp, cl);
	return 0;
}

/* Per counted request: measured and predicted (mean over replications)
 * TTFT and E2E into cl->reqs, and their median |error|. */
static int replay_per_request(const replay *rp, sb_cmp_level *cl)
{
	size_t n = (size_t)rp->n_counted;
	cl->reqs = calloc(n, sizeof(*cl->reqs));
	double *et = malloc(n * sizeof(double)), *ee = malloc(n * sizeof(double));
	int ret = -ENOMEM;
	if (!cl->reqs || !et || !ee)
		goto out;
	size_t c = 0;
	for (size_t j = 0; j < rp->k; j++) {
		if (!rp->counted[j])
			continue;
		const sb_reqrec *q = &rp->rl->reqs[rp->ord[j].i];
		sb_cmp_req *cr = &cl->reqs[c];
		cr->id = q->id;
		cr->prompt_tokens = rp->rq[j].prompt_tokens;
		cr->output_tokens = rp->rq[j].output_tokens;
		cr->meas_ttft_ms = q->ttft_ms;
		cr->meas_e2e_ms = q->e2e_ms;
		cr->pred_ttft_ms = welford_mean(&rp->wt[c]);
		cr->pred_e2e_ms = welford_mean(&rp->we[c]);
		et[c] = sb_compare_err_pct(cr->meas_ttft_ms, cr->pred_ttft_ms);
		ee[c] = sb_compare_err_pct(cr->meas_e2e_ms, cr->pred_e2e_ms);
		c++;
	}
	cl->n_reqs = c;
	cl->req_ttft_mdape = sb_compare_median_abs(et, c);
	cl->req_e2e_mdape = sb_compare_median_abs(ee, c);
	ret = 0;
out:
	free(et);
	free(ee);
	return ret;
}

/* A fleet of n replicas: rp's scratch space and cl's per-replica levels. */
static int replay_fleet_levels(replay *rp, sb_cmp_level *cl, size_t n)
{
	if (replay_alloc_fleet(rp, n) < 0 || !(cl->replicas = calloc(n, sizeof(*cl->replicas))))
		return -ENOMEM;
	cl->n_replicas = n;
	cl->open_loop_replay = cl->mode == SB_MODE_CONCURRENCY;
	for (size_t g = 0; g < n; g++) {
		sb_cmp_level *rl = &cl->replicas[g];
		rl->level = cl->level;
		rl->mode = cl->mode;
		rl->replayed = 1;
		rl->req_ttft_mdape = rl->req_e2e_mdape = NAN;
		for (int k = 0; k < SB_MET_N; k++) {
			rl->meas[k] = rl->pred[k] = rl->pred_sd[k] = rl->err_pct[k] = NAN;
			rl->fc_lo[k] = rl->fc_hi[k] = NAN;
			rl->fc_inside[k] = -1;
		}
	}
	return 0;
}

/* Replays level li of meas. Fills cl (meas, pred, per request) and appends
 * replication 0's records to sim_reqs (a JSON array); *sum0 receives the
 * summary of replication 0. *warmup_out: the warm-up records replayed;
 * *len_in_out, *len_out_out: the counted requests' lengths when they are
 * all alike, else -1. */
int sb_cmp_replay_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
				size_t li, sb_cmp_level *cl, json_t *sim_reqs, sb_level *sum0,
				long *warmup_out, long *len_in_out, long *len_out_out, sb_error *e)
{
	replay rp;
	int ret = replay_alloc(&rp, &meas->levels[li]);
	rp.think_s = replay_think(o, meas);
	if (ret == 0 && meas->target.n_replicas > 1)
		ret = replay_fleet_levels(&rp, cl, meas->target.n_replicas);
	if (ret < 0)
		goto out;
	replay_order(&rp, cl->mode);
	if (rp.k == 0) {
		ret = sb_error_set(e, "level %g: no successful requests to replay", cl->level);
		goto out;
	}
	for (size_t j = 0; j < rp.k; j++)
		replay_request(&rp, meas, li, cl->mode, j);
	if (link_turns(&rp) < 0) {
		ret = sb_error_code(e, -ENOMEM, "out of memory");
		goto out;
	}
	if (rp.n_counted == 0) {
		ret = sb_error_set(e, "level %g: every successful request is marked warmup", cl->level);
		goto out;
	}
	*warmup_out = rp.warm;
	*len_in_out = rp.lmin_in == rp.lmax_in ? rp.lmin_in : -1;
	*len_out_out = rp.lmin_out == rp.lmax_out ? rp.lmin_out : -1;
	cl->n_counted = rp.n_counted;
	ret = replay_measured(&rp, cl);
	if (ret == 0)
		ret = replay_all(&rp, m, o, li, cl, sim_reqs, sum0, e);
	if (ret == 0)
		ret = replay_per_request(&rp, cl);
	if (ret == 0)
		cl->replayed = 1;
out:
	replay_free(&rp);
	return ret;
}

/* ---- the routed comparison of a fleet --------------------------------- */

/* The simulated fleet of fleet file meas: target.replicas[i] a server of
 * model m with its own slots when known (consecutive replicas of one slot
 * count form a group, *models[g] its model: new, f->n_groups of them, for
 * routed_models_free), behind target.route. Returns 1 with *f set, 0 when
 * the file names no route, -EINVAL (a bad route, too many groups) or
 * -ENOMEM. */
static int routed_fleet(const sb_model *m, const sb_results *meas, sb_fleet *f,
			sb_model **models, sb_error *e)
{
	const sb_target_info *t = &meas->target;
	const json_t *jr = json_object_get(json_object_get(meas->root, "target"), "route");
	sb_fleet_init(f);
	*models = NULL;
	if (!jr)
		return 0;
	if (!json_is_string(jr))
		return sb_error_set(e, "target.route: expected a string (%s)", SB_ROUTE_CHOICES);
	if (sb_route_parse(json_string_value(jr), &f->route, e) < 0) {
		sb_error_prefix(e, "target.route");
		return -EINVAL;
	}
	if (!(*models = calloc(SB_FLEET_MAX_GROUPS, sizeof(**models))))
		return -ENOMEM;
	for (size_t i = 0; i < t->n_replicas; i++) {
		int slots = t->replica_slots[i] > 0 ? (int)t->replica_slots[i] : m->slots;
		if (f->n_groups > 0 && (*models)[f->n_groups - 1].slots == slots) {
			f->groups[f->n_groups - 1].count++;
			continue;
		}
		if (f->n_groups == SB_FLEET_MAX_GROUPS)
			return sb_error_set(e, "target.replicas: more than %d runs of replicas with "
					       "equal slot counts (replica %zu has %d)",
					    SB_FLEET_MAX_GROUPS, i, slots);
		sb_model *g = &(*models)[f->n_groups];
		sb_model_copy(g, m);
		g->slots = slots;
		f->groups[f->n_groups++] = (sb_fleet_group){ .model = g, .count = 1 };
	}
	return sb_fleet_validate(f, e) < 0 ? -EINVAL : 1;
}

static void routed_models_free(sb_model *models, const sb_fleet *f)
{
	for (int g = 0; models && g < f->n_groups; g++)
		sb_model_fini(&models[g]);
	free(models);
}

/* Level li of meas replayed through fleet f (the measured arrivals, open
 * loop at their send times; closed loop the level's clients sending them in
 * their measured order) into rl: base's measured figures, the replications'
 * mean and sd, the errors. */
static int routed_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			size_t li, const sb_fleet *f, const sb_cmp_level *base, sb_cmp_level *rl,
			sb_error *e)
{
	replay rp;
	int ret = replay_alloc(&rp, &meas->levels[li]);
	if (ret < 0)
		goto out;
	replay_order(&rp, base->mode);
	for (size_t j = 0; j < rp.k; j++)
		replay_request(&rp, meas, li, base->mode, j);
	sb_replay_opts ro = { .mode = base->mode, .concurrency = (int)lround(base->level),
			      .think_s = replay_think(o, meas), .no_noise = o->no_noise,
			      .fleet = f };
	if (ro.concurrency < 1)
		ro.concurrency = 1;
	welford wm[SB_MET_N];
	memset(wm, 0, sizeof(wm));
	int reps = o->no_noise ? 1 : (o->replications > 0 ? o->replications : 1);
	for (int r = 0; r < reps && ret == 0; r++) {
		ro.seed = sb_seed_derive(o->seed, li | ROUTED_STREAM, (unsigned long)r);
		ret = sb_sim_replay(m, &ro, rp.rq, rp.k, rp.pd, NULL, e);
		if (ret < 0) {
			sb_error_prefix(e, "routed replay of level %g", base->level);
			break;
		}
		sb_level ps;
		if ((ret = sb_level_of_records(rp.recs, replay_predicted(&rp), base->level, base->mode, &ps)) < 0)
			break;
		for (size_t i = 0; i < SB_COMPARE_N_METRICS; i++)
			welford_add(&wm[sb_compare_metrics[i]], sb_metric_get(&ps, sb_compare_metrics[i]));
	}
	for (size_t i = 0; ret == 0 && i < SB_COMPARE_N_METRICS; i++) {
		sb_metric k = sb_compare_metrics[i];
		rl->pred[k] = welford_mean(&wm[k]);
		rl->pred_sd[k] = welford_sd(&wm[k]);
		rl->err_pct[k] = sb_compare_err_pct(rl->meas[k], rl->pred[k]);
	}
out:
	replay_free(&rp);
	return ret;
}

/* out->routed for a fleet file whose target names its route (compare.h);
 * left NULL otherwise. */
int sb_cmp_routed_compare(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			  sb_comparison *out, sb_error *e)
{
	sb_fleet f;
	sb_model *models = NULL;
	sb_fleet_init(&f);
	int ret = meas->target.n_replicas > 1 ? routed_fleet(m, meas, &f, &models, e) : 0;
	sb_comparison *rc = ret > 0 ? calloc(1, sizeof(*rc)) : NULL;
	if (ret > 0 && (!rc || !(rc->levels = calloc(out->n_levels, sizeof(*rc->levels)))))
		ret = -ENOMEM;
	if (ret <= 0)
		goto out;
	out->routed = rc;
	rc->n_levels = out->n_levels;
	rc->seed = out->seed;
	rc->replications = out->replications;
	rc->model_slots = out->model_slots;
	rc->measured_slots = out->measured_slots;
	out->routed_route = (int)f.route;
	out->routed_replicas = sb_fleet_size(&f);
	for (size_t li = 0; li < out->n_levels && ret >= 0; li++) {
		const sb_cmp_level *b = &out->levels[li];
		sb_cmp_level *rl = &rc->levels[li];
		*rl = *b;
		rl->reqs = NULL;
		rl->n_reqs = 0;
		rl->replicas = NULL;
		rl->n_replicas = 0;
		rl->open_loop_replay = 0;
		rl->has_forecast = 0;
		rl->req_ttft_mdape = rl->req_e2e_mdape = NAN;
		for (int k = 0; k < SB_MET_N; k++)
			rl->pred[k] = rl->pred_sd[k] = rl->err_pct[k] = NAN;
		if (b->replayed)
			ret = routed_level(m, meas, o, li, &f, b, rl, e);
	}
	if (ret >= 0)
		sb_compare_summarize(rc, o->knee_min_ratio);
out:
	routed_models_free(models, &f);
	return ret < 0 ? ret : 0;
}

