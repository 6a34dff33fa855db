/* compare.c — measured results against the simulator's replay (compare.h). */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dist.h"
#include "core/jsonfile.h"
#include "core/knee.h"
#include "sim/sim.h"

/* The forecast's simulator seeds are sb_seed_derive(seed, level index |
 * FORECAST_STREAM, replication): a stream apart from the replay's (level
 * index, replication). */
#define FORECAST_STREAM 0x80000000UL
/* A fleet's replica g of a replay replication with seed s is simulated
 * with seed sb_seed_derive(s, FLEET_STREAM, g). */
#define FLEET_STREAM 0x40000000UL
/* The routed replay of level li, replication r: sb_seed_derive(seed, li |
 * ROUTED_STREAM, r). */
#define ROUTED_STREAM 0x20000000UL

/* ---- the metrics compared ------------------------------------------ */

const sb_metric sb_compare_metrics[SB_COMPARE_N_METRICS] = {
	SB_MET_TTFT_MEAN, SB_MET_TTFT_P50, SB_MET_TTFT_P90, SB_MET_TTFT_P99,
	SB_MET_TPOT_MEAN, SB_MET_TPOT_P50, SB_MET_TPOT_P90, SB_MET_TPOT_P99,
	SB_MET_E2E_MEAN,  SB_MET_E2E_P50,  SB_MET_E2E_P90,  SB_MET_E2E_P99,
	SB_MET_OUT_TOK_S, SB_MET_REQ_S,
};

int sb_compare_metric_class(sb_metric k)
{
	switch (sb_metric_stat(k)) {
	case SB_STAT_MEAN:
	case SB_STAT_P50: return SB_CMP_CENTRAL;
	case SB_STAT_P90:
	case SB_STAT_P99: return SB_CMP_TAIL;
	case SB_STAT_NONE: break;
	}
	return SB_CMP_THROUGHPUT;
}

/* ---- maths ----------------------------------------------------------- */

double sb_compare_err_pct(double meas, double pred)
{
	if (!isfinite(meas) || !isfinite(pred) || !(meas > 0))
		return NAN;
	return 100.0 * (pred - meas) / meas;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Quantile q of sorted v[0..n) with linear interpolation; NaN when n = 0. */
static double sorted_quantile(const double *v, size_t n, double q)
{
	if (n == 0)
		return NAN;
	double pos = q * (double)(n - 1);
	size_t i = (size_t)floor(pos);
	if (i + 1 >= n)
		return v[n - 1];
	double f = pos - (double)i;
	return v[i] + f * (v[i + 1] - v[i]);
}

double sb_compare_median_abs(const double *x, size_t n)
{
	double *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return NAN;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (isfinite(x[i]))
			v[k++] = fabs(x[i]);
	}
	qsort(v, k, sizeof(*v), cmp_double);
	double m = sorted_quantile(v, k, 0.5);
	free(v);
	return m;
}

/* ---- options, goals -------------------------------------------------- */

void sb_compare_opts_init(sb_compare_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->replications = 20;
	o->seed = 1;
	o->forecast_reps = 200;
	o->knee_min_ratio = SB_KNEE_MIN_RATIO;
}

void sb_compare_goals_init(sb_compare_goals *g)
{
	g->central_pct = 5;
	g->tail_pct = 10;
	g->require_knee = 1;
}

/* ---- per-level summaries from records -------------------------------- */

typedef struct ev {
	double t;
	int d;
} ev;

static int cmp_ev(const void *a, const void *b)
{
	const ev *x = a, *y = b;
	if (x->t != y->t)
		return (x->t > y->t) - (x->t < y->t);
	return x->d - y->d; /* completions before arrivals at equal times */
}

/* Summary of the records r[0..n) (times absolute in the level) over the
 * window [first send, last completion]. The records' times are shifted to
 * the window start. Returns 0 or -ENOMEM. */
static int summarize(const sb_reqrec *r, size_t n, double level, sb_mode mode,
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
	ev *evs = malloc((2 * n + 1) * sizeof(*evs));
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
		evs[2 * i] = (ev){ q.t_scheduled_s, +1 };
		evs[2 * i + 1] = (ev){ q.t_done_s, -1 };
	}
	qsort(evs, 2 * n, sizeof(*evs), cmp_ev);
	for (size_t i = 0; i < 2 * n; i++)
		sb_levelacc_inflight(&a, evs[i].t, evs[i].d);
	free(evs);
	double d = n ? t1 - t0 : 0;
	sb_levelacc_finish(&a, level, mode, d > 0 ? d : 0, out);
	sb_levelacc_fini(&a);
	return 0;
}

/* ---- helpers over the measured document ------------------------------ */

static long dist_len(const sb_dist *d)
{
	double m = sb_dist_mean(d);
	long v = isfinite(m) ? lround(m) : 1;
	return v < 1 ? 1 : v;
}

/* A record: its index, send time and id (ties of send time go by id, the
 * issue order: records are written as requests finish). */
typedef struct idx_time {
	size_t i;
	double t;
	long id;
} idx_time;

static int cmp_idx_time(const void *a, const void *b)
{
	const idx_time *x = a, *y = b;
	if (x->t != y->t)
		return (x->t > y->t) - (x->t < y->t);
	if (x->id != y->id)
		return (x->id > y->id) - (x->id < y->id);
	return (x->i > y->i) - (x->i < y->i);
}

/* Running mean and variance (Welford). */
typedef struct welford {
	long n;
	double mean, m2;
} welford;

static void welford_add(welford *w, double x)
{
	if (!isfinite(x))
		return;
	w->n++;
	double d = x - w->mean;
	w->mean += d / (double)w->n;
	w->m2 += d * (x - w->mean);
}

static double welford_mean(const welford *w)
{
	return w->n ? w->mean : NAN;
}

static double welford_sd(const welford *w)
{
	return w->n > 1 ? sqrt(w->m2 / (double)(w->n - 1)) : (w->n ? 0.0 : NAN);
}

/* ---- forecast -------------------------------------------------------- */

/* Fresh-traffic replications of a run of n_req counted requests (after
 * warmup) at this level. Fills pred/pred_sd (when fill_pred) and the
 * interval. sum0 receives replication 0's summary (may be NULL). */
static int forecast_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			  size_t li, long n_req, long warmup, long len_in, long len_out,
			  sb_cmp_level *cl, int fill_pred, sb_level *sum0, sb_error *e)
{
	int reps = o->forecast_reps > 0 ? o->forecast_reps : 200;
	if (o->no_noise && fill_pred && !o->forecast)
		reps = 1;
	sb_workload w = meas->workload;
	w.mode = cl->mode;
	w.n_levels = 1;
	w.levels[0] = cl->level;
	w.requests = n_req > 0 ? n_req : 1;
	w.duration_s = 0;
	w.warmup = warmup >= 0 ? warmup : 0;
	if (len_in > 0)
		w.input_len = (sb_dist){ SB_DIST_DET, (double)len_in, 0 };
	if (len_out > 0)
		w.output_len = (sb_dist){ SB_DIST_DET, (double)len_out, 0 };
	if (cl->mode == SB_MODE_CONCURRENCY && o->think_s > 0)
		w.think_s = (sb_dist){ SB_DIST_DET, o->think_s, 0 };
	sb_sim_opts so;
	sb_sim_opts_init(&so);
	so.no_noise = o->no_noise;
	double *vals = malloc((size_t)reps * SB_COMPARE_N_METRICS * sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (int rep = 0; rep < reps; rep++) {
		sb_sim_level sl;
		memset(&sl, 0, sizeof(sl));
		unsigned long seed = sb_seed_derive(o->seed, li | FORECAST_STREAM, (unsigned long)rep);
		int r = sb_sim_run_level(m, &so, &w, cl->level, seed, &sl, e);
		if (r < 0) {
			free(vals);
			sb_error_prefix(e, "forecast of level %g", cl->level);
			return r;
		}
		for (size_t i = 0; i < SB_COMPARE_N_METRICS; i++)
			vals[i * (size_t)reps + (size_t)rep] =
				sb_metric_get(&sl.sum, sb_compare_metrics[i]);
		if (rep == 0 && sum0)
			*sum0 = sl.sum;
		sb_sim_level_fini(&sl);
	}
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
		sb_metric k = sb_compare_metrics[j];
		double *v = vals + j * (size_t)reps;
		welford wf = { 0, 0, 0 };
		size_t nf = 0;
		for (int i = 0; i < reps; i++) {
			welford_add(&wf, v[i]);
			if (isfinite(v[i]))
				v[nf++] = v[i];
		}
		qsort(v, nf, sizeof(*v), cmp_double);
		cl->fc_lo[k] = sorted_quantile(v, nf, 0.025);
		cl->fc_hi[k] = sorted_quantile(v, nf, 0.975);
		double mv = cl->meas[k];
		cl->fc_inside[k] = (isfinite(mv) && nf)
					   ? (mv >= cl->fc_lo[k] && mv <= cl->fc_hi[k])
					   : -1;
		if (fill_pred) {
			cl->pred[k] = welford_mean(&wf);
			cl->pred_sd[k] = welford_sd(&wf);
		}
	}
	cl->has_forecast = 1;
	free(vals);
	return 0;
}

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
	/* tokens the server actually prefilled (prompt-cache hits excluded),
	 * as the calibration counts them */
	double pn = rp->rl->timing[rp->ord[j].i].prompt_n;
	if (pn >= 1)
		pin = (long)pn;
	long pout = q->output_tokens >= 1 ? q->output_tokens : dist_len(&meas->workload.output_len);
	/* open loop (and a fleet's replicas): the level's clock starts at its
	 * first send */
	double t = mode == SB_MODE_RATE || rp->n_rep ? rp->ord[j].t - rp->ord[0].t : 0.0;
	rp->rq[j] = (sb_replay_req){ t, pin, pout, q->slot };
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
	return summarize(rp->sub_recs, k, cl->level, cl->mode, out);
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
	if (summarize(rp->recs, c, cl->level, cl->mode, &ms) < 0)
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
	if (summarize(rp->recs, c, cl->level, cl->mode, &ps) < 0 ||
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
	ro.think_s = o->think_s;
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
static int replay_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			size_t li, sb_cmp_level *cl, json_t *sim_reqs, sb_level *sum0,
			long *warmup_out, long *len_in_out, long *len_out_out, sb_error *e)
{
	replay rp;
	int ret = replay_alloc(&rp, &meas->levels[li]);
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
			      .think_s = o->think_s, .no_noise = o->no_noise, .fleet = f };
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
		if ((ret = summarize(rp.recs, replay_predicted(&rp), base->level, base->mode, &ps)) < 0)
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
static int routed_compare(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
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

/* ---- summaries ---------------------------------------------------------- */

/* Levels of one mode sorted by level: indices into c->levels. */
static size_t mode_levels(const sb_comparison *c, sb_mode mode, size_t *idx)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n_levels; i++) {
		if (c->levels[i].mode == mode)
			idx[n++] = i;
	}
	/* insertion sort by level (few levels) */
	for (size_t i = 1; i < n; i++) {
		size_t v = idx[i], j = i;
		while (j > 0 && c->levels[idx[j - 1]].level > c->levels[v].level) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = v;
	}
	return n;
}

/* Median |error| over every level of the compared metrics that match
 * quantity, class and metric (-1: any); buf holds n_levels *
 * SB_COMPARE_N_METRICS values. */
static double mdape_select(const sb_comparison *c, double *buf, int quantity, int cls,
			   int metric)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n_levels; i++) {
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			sb_metric k = sb_compare_metrics[j];
			if ((quantity < 0 || (int)sb_metric_quantity(k) == quantity) &&
			    (cls < 0 || sb_compare_metric_class(k) == cls) &&
			    (metric < 0 || (int)k == metric))
				buf[n++] = c->levels[i].err_pct[k];
		}
	}
	return sb_compare_median_abs(buf, n);
}

/* The knees of TTFT p99 against load, measured and predicted, per mode;
 * idx, lv, pm, pp: room for n_levels values each. */
static void summarize_knees(sb_comparison *c, double min_ratio, size_t *idx, double *lv,
			    double *pm, double *pp)
{
	for (int md = 0; md < 2; md++) {
		size_t n = mode_levels(c, (sb_mode)md, idx);
		for (size_t i = 0; i < n; i++) {
			lv[i] = c->levels[idx[i]].level;
			pm[i] = c->levels[idx[i]].meas[SB_MET_TTFT_P99];
			pp[i] = c->levels[idx[i]].pred[SB_MET_TTFT_P99];
		}
		int km = sb_knee_find(lv, pm, n, min_ratio);
		int kp = sb_knee_find(lv, pp, n, min_ratio);
		c->knee_meas[md] = km >= 0 ? lv[km] : NAN;
		c->knee_pred[md] = kp >= 0 ? lv[kp] : NAN;
		if (n >= 2)
			c->knee_match[md] = km == kp;
	}
}

/* The capacity measured and predicted at the saturated level with the
 * highest measured req/s (compare.h). */
static void summarize_capacity(sb_comparison *c)
{
	c->cap_meas = c->cap_pred = c->cap_err_pct = c->cap_level = NAN;
	c->cap_mode = -1;
	c->cap_metric = SB_MET_REQ_S;
	for (size_t i = 0; i < c->n_levels; i++)
		if (!(c->levels[i].meas[SB_MET_REQ_S] > 0))
			c->cap_metric = SB_MET_OUT_TOK_S;
	for (size_t i = 0; i < c->n_levels; i++) {
		const sb_cmp_level *l = &c->levels[i];
		double m = l->meas[c->cap_metric], rq = l->meas[SB_MET_REQ_S];
		int sat = l->mode == SB_MODE_CONCURRENCY
				  ? c->measured_slots > 0 && l->level >= c->measured_slots
				  : rq < SB_CMP_SATURATED * l->level;
		if (!sat || !(m > 0) || m <= c->cap_meas)
			continue;
		c->cap_meas = m;
		c->cap_pred = l->pred[c->cap_metric];
		c->cap_level = l->level;
		c->cap_mode = (int)l->mode;
	}
	c->cap_err_pct = sb_compare_err_pct(c->cap_meas, c->cap_pred);
}

static void summary_clear(sb_comparison *c)
{
	c->mdape_central = c->mdape_tail = c->mdape_throughput = NAN;
	for (int k = 0; k < SB_MET_N; k++)
		c->mdape_metric[k] = NAN;
	for (int q = 0; q < SB_CMP_N_QUANT; q++)
		c->mdape_quant[q][0] = c->mdape_quant[q][1] = NAN;
	for (int md = 0; md < 2; md++) {
		c->knee_meas[md] = c->knee_pred[md] = NAN;
		c->knee_match[md] = -1;
	}
}

void sb_compare_summarize(sb_comparison *c, double knee_min_ratio)
{
	size_t nl = c->n_levels ? c->n_levels : 1;
	double *buf = malloc(nl * SB_COMPARE_N_METRICS * sizeof(*buf));
	size_t *idx = malloc(nl * sizeof(*idx));
	double *lv = malloc(3 * nl * sizeof(*lv));
	summary_clear(c);
	if (buf && idx && lv) {
		c->mdape_central = mdape_select(c, buf, -1, SB_CMP_CENTRAL, -1);
		c->mdape_tail = mdape_select(c, buf, -1, SB_CMP_TAIL, -1);
		c->mdape_throughput = mdape_select(c, buf, -1, SB_CMP_THROUGHPUT, -1);
		for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
			sb_metric k = sb_compare_metrics[j];
			c->mdape_metric[k] = mdape_select(c, buf, -1, -1, (int)k);
		}
		for (int q = 0; q < SB_CMP_N_QUANT; q++)
			for (int cls = SB_CMP_CENTRAL; cls <= SB_CMP_TAIL; cls++)
				c->mdape_quant[q][cls] = mdape_select(c, buf, q, cls, -1);
		summarize_knees(c, knee_min_ratio, idx, lv, lv + nl, lv + 2 * nl);
	}
	summarize_capacity(c);
	free(buf);
	free(idx);
	free(lv);
}

/* ---- the whole comparison ---------------------------------------------- */

static json_t *sim_target(const sb_model *m, const sb_compare_opts *o, const sb_results *meas)
{
	json_t *t = json_object();
	json_object_set_new(t, "model", json_string(m->name));
	json_object_set_new(t, "slots", json_integer(m->slots));
	json_object_set_new(t, "engine_model", sb_model_to_json(m));
	json_object_set_new(t, "method", json_string("replay of the measured requests"));
	json_object_set_new(t, "replications", json_integer(o->no_noise ? 1 : o->replications));
	json_object_set_new(t, "seed", json_integer((json_int_t)o->seed));
	json_object_set_new(t, "note", json_string(
		"level summaries are the mean over replications of the replay; the request "
		"records are replication 0"));
	const json_t *mt = json_object_get(meas->root, "target");
	if (mt)
		json_object_set(t, "measured_target", (json_t *)mt);
	return t;
}

/* Level li before its prediction: the measured summary's metrics, the
 * rest NaN. */
static void level_init(sb_cmp_level *cl, const sb_rlevel *rl)
{
	cl->level = rl->sum.level;
	cl->mode = rl->sum.mode;
	cl->req_ttft_mdape = cl->req_e2e_mdape = NAN;
	for (int k = 0; k < SB_MET_N; k++) {
		cl->meas[k] = cl->pred[k] = cl->pred_sd[k] = cl->err_pct[k] = NAN;
		cl->fc_lo[k] = cl->fc_hi[k] = NAN;
		cl->fc_inside[k] = -1;
	}
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++)
		cl->meas[sb_compare_metrics[j]] = sb_metric_get(&rl->sum, sb_compare_metrics[j]);
}

/* Predicts level li: a replay of its records (and the forecast when asked),
 * or a forecast when it has none. *reqs: the predicted records (new array,
 * NULL for a forecast); *sum0: replication 0's summary. */
static int predict_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			 size_t li, sb_cmp_level *cl, json_t **reqs, sb_level *sum0, sb_error *e)
{
	const sb_rlevel *rl = &meas->levels[li];
	long warm = (long)meas->workload.warmup, len_in = -1, len_out = -1;
	if (rl->n_reqs == 0) {
		cl->n_counted = rl->sum.requests_ok > 0 ? rl->sum.requests_ok : meas->workload.requests;
		return forecast_level(m, meas, o, li, cl->n_counted, warm, -1, -1, cl, 1, sum0, e);
	}
	*reqs = json_array();
	if (!*reqs)
		return -ENOMEM;
	int r = replay_level(m, meas, o, li, cl, *reqs, sum0, &warm, &len_in, &len_out, e);
	if (r == 0 && o->forecast)
		r = forecast_level(m, meas, o, li, cl->n_counted, warm, len_in, len_out, cl, 0,
				   NULL, e);
	if (r < 0) {
		json_decref(*reqs);
		*reqs = NULL;
	}
	return r;
}

/* Compares level li of meas into out->levels[li] and adds its prediction
 * to out->simulated. */
static int compare_level(const sb_model *m, const sb_results *meas, const sb_compare_opts *o,
			 size_t li, sb_comparison *out, sb_error *e)
{
	sb_cmp_level *cl = &out->levels[li];
	level_init(cl, &meas->levels[li]);
	sb_level sum0;
	memset(&sum0, 0, sizeof(sum0));
	json_t *reqs = NULL;
	int r = predict_level(m, meas, o, li, cl, &reqs, &sum0, e);
	if (r < 0)
		return r;
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++) {
		sb_metric k = sb_compare_metrics[j];
		cl->err_pct[k] = sb_compare_err_pct(cl->meas[k], cl->pred[k]);
		sb_metric_set(&sum0, k, cl->pred[k]);
		if (cl->fc_inside[k] >= 0) {
			out->fc_total++;
			out->fc_inside += cl->fc_inside[k];
		}
	}
	sum0.level = cl->level;
	sum0.mode = cl->mode;
	return sb_results_add_level(out->simulated, &sum0, reqs);
}

/* The slot count every replica of a fleet reports; 0 when they differ or
 * one is unknown. */
static long fleet_slots(const sb_target_info *t)
{
	for (size_t g = 1; g < t->n_replicas; g++)
		if (t->replica_slots[g] != t->replica_slots[0])
			return 0;
	return t->replica_slots[0] > 0 ? t->replica_slots[0] : 0;
}

int sb_compare_run(const sb_model *m, const sb_results *meas, const sb_compare_opts *opts,
		   sb_comparison *out, sb_error *e)
{
	memset(out, 0, sizeof(*out));
	sb_compare_opts o;
	if (opts)
		o = *opts;
	else
		sb_compare_opts_init(&o);
	if (o.knee_min_ratio <= 0)
		o.knee_min_ratio = SB_KNEE_MIN_RATIO;
	if (meas->n_levels == 0)
		return sb_error_set(e, "the measured results have no levels");
	int r = sb_model_validate(m, e);
	if (r < 0)
		return r;
	out->seed = o.seed;
	out->replications = o.no_noise ? 1 : o.replications;
	out->model_slots = m->slots;
	out->measured_slots = meas->target.slots >= 0 ? (int)meas->target.slots : 0;
	if (meas->target.n_replicas) /* a fleet: its replicas' count when they agree */
		out->measured_slots = (int)fleet_slots(&meas->target);
	out->levels = calloc(meas->n_levels, sizeof(*out->levels));
	out->simulated = sb_results_new("simulated", sim_target(m, &o, meas), &meas->workload);
	if (!out->levels || !out->simulated) {
		sb_comparison_fini(out);
		return -ENOMEM;
	}
	out->n_levels = meas->n_levels;
	for (size_t li = 0; li < meas->n_levels; li++) {
		r = compare_level(m, meas, &o, li, out, e);
		if (r < 0)
			goto fail;
	}
	sb_compare_summarize(out, o.knee_min_ratio);
	if ((r = routed_compare(m, meas, &o, out, e)) < 0)
		goto fail;
	return 0;
fail:
	sb_comparison_fini(out);
	return r;
}

void sb_comparison_fini(sb_comparison *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->levels && i < c->n_levels; i++) {
		free(c->levels[i].reqs);
		free(c->levels[i].replicas);
	}
	free(c->levels);
	json_decref(c->simulated);
	if (c->routed) {
		sb_comparison_fini(c->routed);
		free(c->routed);
	}
	memset(c, 0, sizeof(*c));
}

/* ---- JSON ---------------------------------------------------------------- */

/* One metric of a level: measured, predicted, error (and the forecast). */
static json_t *metric_to_json(const sb_cmp_level *cl, sb_metric k)
{
	json_t *x = json_object();
	json_object_set_new(x, "measured", sb_json_number(cl->meas[k]));
	json_object_set_new(x, "predicted", sb_json_number(cl->pred[k]));
	json_object_set_new(x, "predicted_sd", sb_json_number(cl->pred_sd[k]));
	json_object_set_new(x, "error_pct", sb_json_number(cl->err_pct[k]));
	if (cl->has_forecast) {
		json_object_set_new(x, "forecast_lo", sb_json_number(cl->fc_lo[k]));
		json_object_set_new(x, "forecast_hi", sb_json_number(cl->fc_hi[k]));
		json_object_set_new(x, "inside", cl->fc_inside[k] < 0 ? json_null()
								      : json_boolean(cl->fc_inside[k]));
	}
	return x;
}

static json_t *request_to_json(const sb_cmp_req *q)
{
	return json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o}", "id", (json_int_t)q->id,
			 "prompt_tokens", (json_int_t)q->prompt_tokens, "output_tokens",
			 (json_int_t)q->output_tokens, "ttft_ms_measured", sb_json_number(q->meas_ttft_ms),
			 "ttft_ms_predicted", sb_json_number(q->pred_ttft_ms), "ttft_error_pct",
			 sb_json_number(sb_compare_err_pct(q->meas_ttft_ms, q->pred_ttft_ms)),
			 "e2e_ms_measured", sb_json_number(q->meas_e2e_ms), "e2e_ms_predicted",
			 sb_json_number(q->pred_e2e_ms), "e2e_error_pct",
			 sb_json_number(sb_compare_err_pct(q->meas_e2e_ms, q->pred_e2e_ms)));
}

/* {"ttft_p50": {...}, ...}: every compared metric of cl. */
static json_t *metrics_to_json(const sb_cmp_level *cl)
{
	json_t *mt = json_object();
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++)
		json_object_set_new(mt, sb_metric_key(sb_compare_metrics[j]),
				    metric_to_json(cl, sb_compare_metrics[j]));
	return mt;
}

/* A fleet's replica g within a level: its requests and metrics. */
static json_t *replica_to_json(const sb_cmp_level *rl, size_t g)
{
	json_t *jr = json_object();
	json_object_set_new(jr, "replica", json_integer((json_int_t)g));
	json_object_set_new(jr, "requests", json_integer(rl->n_counted));
	json_object_set_new(jr, "metrics", metrics_to_json(rl));
	return jr;
}

static json_t *level_to_json(const sb_cmp_level *cl)
{
	json_t *jl = json_object();
	json_object_set_new(jl, "level", json_real(cl->level));
	json_object_set_new(jl, "mode", json_string(sb_mode_name(cl->mode)));
	json_object_set_new(jl, "method", json_string(cl->replayed ? "replay" : "forecast"));
	json_object_set_new(jl, "requests", json_integer(cl->n_counted));
	json_object_set_new(jl, "metrics", metrics_to_json(cl));
	if (cl->replayed) {
		json_object_set_new(jl, "request_ttft_mdape", sb_json_number(cl->req_ttft_mdape));
		json_object_set_new(jl, "request_e2e_mdape", sb_json_number(cl->req_e2e_mdape));
		json_t *rs = json_array();
		for (size_t j = 0; j < cl->n_reqs; j++)
			json_array_append_new(rs, request_to_json(&cl->reqs[j]));
		json_object_set_new(jl, "requests", rs);
	}
	if (cl->n_replicas) {
		json_object_set_new(jl, "replay", json_string(cl->open_loop_replay
					? "open loop at the measured send times, per replica"
					: "per replica"));
		json_t *ra = json_array();
		for (size_t g = 0; g < cl->n_replicas; g++)
			json_array_append_new(ra, replica_to_json(&cl->replicas[g], g));
		json_object_set_new(jl, "replicas", ra);
	}
	return jl;
}

/* The cross-level summaries: MdAPEs, knees, forecast coverage. */
static json_t *summary_to_json(const sb_comparison *c)
{
	json_t *s = json_object();
	json_object_set_new(s, "mdape_central_pct", sb_json_number(c->mdape_central));
	json_object_set_new(s, "mdape_tail_pct", sb_json_number(c->mdape_tail));
	json_object_set_new(s, "mdape_throughput_pct", sb_json_number(c->mdape_throughput));
	json_object_set_new(s, "capacity",
			    c->cap_mode < 0
				    ? json_null()
				    : json_pack("{s:s,s:o,s:s,s:o,s:o,s:o}", "mode",
						sb_mode_name((sb_mode)c->cap_mode), "level",
						sb_json_number(c->cap_level), "metric",
						sb_metric_key(c->cap_metric), "measured",
						sb_json_number(c->cap_meas), "predicted",
						sb_json_number(c->cap_pred), "error_pct",
						sb_json_number(c->cap_err_pct)));
	static const char *qn[SB_CMP_N_QUANT] = { "ttft", "tpot", "e2e" };
	for (int q = 0; q < SB_CMP_N_QUANT; q++) {
		char k[64];
		snprintf(k, sizeof(k), "%s_central_mdape_pct", qn[q]);
		json_object_set_new(s, k, sb_json_number(c->mdape_quant[q][0]));
		snprintf(k, sizeof(k), "%s_tail_mdape_pct", qn[q]);
		json_object_set_new(s, k, sb_json_number(c->mdape_quant[q][1]));
	}
	json_t *pm = json_object();
	for (size_t j = 0; j < SB_COMPARE_N_METRICS; j++)
		json_object_set_new(pm, sb_metric_key(sb_compare_metrics[j]),
				    sb_json_number(c->mdape_metric[sb_compare_metrics[j]]));
	json_object_set_new(s, "mdape_by_metric_pct", pm);
	for (int md = 0; md < 2; md++) {
		json_t *kn = json_object();
		json_object_set_new(kn, "measured", sb_json_number(c->knee_meas[md]));
		json_object_set_new(kn, "predicted", sb_json_number(c->knee_pred[md]));
		json_object_set_new(kn, "match", c->knee_match[md] < 0 ? json_null()
								       : json_boolean(c->knee_match[md]));
		char k[64];
		snprintf(k, sizeof(k), "knee_%s", sb_mode_name((sb_mode)md));
		json_object_set_new(s, k, kn);
	}
	if (c->fc_total) {
		json_object_set_new(s, "forecast_inside", json_integer(c->fc_inside));
		json_object_set_new(s, "forecast_cells", json_integer(c->fc_total));
	}
	return s;
}

json_t *sb_comparison_to_json(const sb_comparison *c)
{
	json_t *root = json_object();
	json_t *levels = json_array();
	if (!root || !levels) {
		json_decref(root);
		json_decref(levels);
		return NULL;
	}
	json_object_set_new(root, "schema", json_string("servebench.comparison/1"));
	json_object_set_new(root, "seed", json_integer((json_int_t)c->seed));
	json_object_set_new(root, "replications", json_integer(c->replications));
	json_object_set_new(root, "model_slots", json_integer(c->model_slots));
	json_object_set_new(root, "measured_slots",
			    c->measured_slots > 0 ? json_integer(c->measured_slots) : json_null());
	json_object_set_new(root, "error_definition",
			    json_string("100 * (predicted - measured) / measured"));
	for (size_t i = 0; i < c->n_levels; i++)
		json_array_append_new(levels, level_to_json(&c->levels[i]));
	json_object_set_new(root, "levels", levels);
	json_object_set_new(root, "summary", summary_to_json(c));
	if (c->routed) {
		json_t *rt = json_pack("{s:s,s:i}", "route",
				       sb_route_name((sb_route)c->routed_route), "replicas",
				       c->routed_replicas);
		json_t *rls = json_array();
		for (size_t i = 0; rls && i < c->routed->n_levels; i++)
			json_array_append_new(rls, level_to_json(&c->routed->levels[i]));
		if (rt) {
			json_object_set_new(rt, "levels", rls);
			json_object_set_new(rt, "summary", summary_to_json(c->routed));
		}
		json_object_set_new(root, "routed", rt);
	}
	return root;
}

/* ---- goals ------------------------------------------------------------------ */

static void append(char *why, size_t len, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void append(char *why, size_t len, size_t *pos, const char *fmt, ...)
{
	if (!why || *pos + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(why + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos = *pos + (size_t)n < len ? *pos + (size_t)n : len - 1;
}

int sb_compare_check(const sb_comparison *c, const sb_compare_goals *g, char *why, size_t len)
{
	sb_compare_goals def;
	if (!g) {
		sb_compare_goals_init(&def);
		g = &def;
	}
	size_t pos = 0;
	if (why && len)
		why[0] = 0;
	static const char *qn[SB_CMP_N_QUANT] = { "TTFT", "TPOT", "E2E" };
	int ok = 1, any = 0;
	for (int q = 0; q < SB_CMP_N_QUANT; q++) {
		for (int cls = 0; cls < 2; cls++) {
			double v = c->mdape_quant[q][cls];
			double lim = cls == 0 ? g->central_pct : g->tail_pct;
			if (!isfinite(v))
				continue;
			any = 1;
			if (v > lim) {
				ok = 0;
				append(why, len, &pos, "%s %s: median |error| %.1f%% > %g%%\n", qn[q],
				       cls == 0 ? "mean/p50" : "p90/p99", v, lim);
			}
		}
	}
	if (!any) {
		ok = 0;
		append(why, len, &pos, "no metric could be compared\n");
	}
	if (g->require_knee) {
		for (int md = 0; md < 2; md++) {
			if (c->knee_match[md] != 0)
				continue;
			ok = 0;
			char a[32] = "none", b[32] = "none";
			if (isfinite(c->knee_meas[md]))
				snprintf(a, sizeof(a), "%g", c->knee_meas[md]);
			if (isfinite(c->knee_pred[md]))
				snprintf(b, sizeof(b), "%g", c->knee_pred[md]);
			append(why, len, &pos, "knee (%s): measured at %s, predicted at %s\n",
			       sb_mode_name((sb_mode)md), a, b);
		}
	}
	return ok;
}
