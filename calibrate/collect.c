/* collect.c — reading results files into the calibration's levels and
 * requests (data.h). */
#include "calibrate/data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cal_fname(const cal_data *d, size_t f)
{
	return d->in[f].name ? d->in[f].name : "(input)";
}

const char *cal_base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

void cal_data_fini(cal_data *d)
{
	free(d->lvs);
	free(d->rqs);
	free(d->remarks);
	d->lvs = NULL;
	d->rqs = NULL;
	d->remarks = NULL;
}

/* Appends a request (copied). Returns 0 or -ENOMEM. */
static int push_rq(cal_data *k, const cal_request *r)
{
	if (k->n_rq == k->cap_rq) {
		size_t nc = k->cap_rq ? 2 * k->cap_rq : 256;
		cal_request *p = realloc(k->rqs, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		k->rqs = p;
		k->cap_rq = nc;
	}
	k->rqs[k->n_rq++] = *r;
	return 0;
}

/* Appends a remark on level `level` of input f. Returns 0 or -ENOMEM. */
static int remark(cal_data *k, cal_level_remark kind, size_t f, double level)
{
	cal_remark *p = realloc(k->remarks, (k->n_remarks + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	k->remarks = p;
	k->remarks[k->n_remarks++] = (cal_remark){ kind, f, level };
	return 0;
}

/* Describes the failures of a level for messages. */
static void fail_text(const sb_rlevel *rl, char *buf, size_t len)
{
	buf[0] = 0;
	for (size_t i = 0; i < rl->n_reqs; i++) {
		if (rl->reqs[i].err_class) {
			snprintf(buf, len, "first error: %s%s%s", rl->reqs[i].err_class,
				 rl->reqs[i].err_msg ? ": " : "",
				 rl->reqs[i].err_msg ? rl->reqs[i].err_msg : "");
			return;
		}
	}
	if (rl->sum.n_errors > 0)
		snprintf(buf, len, "errors: %s x%ld", rl->sum.errors[0].cls,
			 rl->sum.errors[0].count);
}

/* ---- collecting the data ------------------------------------------------ */

/* Request i of level li of input f (rl its level) as a cal_request into *r;
 * wl_P, wl_N: the workload's mean lengths (NaN: none). Returns 0 or -EINVAL
 * when its numbers are unusable. */
static int read_request(const cal_data *k, size_t f, size_t li, const sb_rlevel *rl, size_t i,
			double wl_P, double wl_N, cal_request *r, sb_error *e)
{
	const char *fn = cal_fname(k, f);
	const sb_reqrec *q = &rl->reqs[i];
	if (!isfinite(q->ttft_ms) || !isfinite(q->e2e_ms))
		return sb_error_set(e, "%s: levels[%zu].requests[%zu]: ttft_ms/e2e_ms "
				       "is not a number", fn, li, i);
	memset(r, 0, sizeof(*r));
	r->lv = k->n_lv;
	const sb_server_timing *srv = &rl->timing[i];
	r->P = q->prompt_tokens >= 1 ? (double)q->prompt_tokens : wl_P;
	r->N = q->output_tokens >= 1 ? (double)q->output_tokens : wl_N;
	if (!isfinite(r->P))
		return sb_error_set(e, "%s: levels[%zu].requests[%zu]: prompt_tokens "
				       "is unknown and the file has no workload.input_len: "
				       "the prefill fit needs each request's prompt length",
				    fn, li, i);
	if (!isfinite(r->N))
		return sb_error_set(e, "%s: levels[%zu].requests[%zu]: output_tokens "
				       "is unknown and the file has no workload.output_len",
				    fn, li, i);
	r->Pin = r->P;
	r->prompt_ms = srv->prompt_ms;
	if (isfinite(r->prompt_ms) && srv->prompt_n >= 1)
		r->P = srv->prompt_n; /* tokens the server actually processed (no cache hits) */
	r->ttft = q->ttft_ms;
	r->e2e = q->e2e_ms;
	r->tpot = r->N >= 2 ? (q->e2e_ms - q->ttft_ms) / (r->N - 1.0) : NAN;
	r->t_sent = isfinite(q->t_sent_s) ? q->t_sent_s : q->t_scheduled_s;
	r->t_first = r->t_sent + q->ttft_ms / 1e3;
	r->t_done = isfinite(q->t_done_s) ? q->t_done_s : r->t_sent + q->e2e_ms / 1e3;
	r->wait = q->wait_ms;
	r->itl = q->itl_ms;
	r->n_itl = q->n_itl;
	return 0;
}

/* Level li of input f from its per-request records into *L (means over the
 * successful ones, which are appended to k->rqs); failures are counted
 * into *failed. Returns 0 or -errno. */
static int level_from_records(cal_data *k, size_t f, size_t li, cal_level *L, long *failed,
			      sb_error *e)
{
	const sb_results *res = k->in[f].res;
	const sb_rlevel *rl = &res->levels[li];
	double wl_P = res->has_workload ? sb_dist_mean(&res->workload.input_len) : NAN;
	double wl_N = res->has_workload ? sb_dist_mean(&res->workload.output_len) : NAN;
	L->use_reqs = 1;
	L->rq0 = k->n_rq;
	double st = 0, se2e = 0, stp = 0, sw = 0;
	long ntp = 0, nw = 0;
	for (size_t i = 0; i < rl->n_reqs; i++) {
		if (rl->reqs[i].err_class) {
			(*failed)++;
			continue;
		}
		cal_request r;
		int rc = read_request(k, f, li, rl, i, wl_P, wl_N, &r, e);
		if (rc == 0)
			rc = push_rq(k, &r);
		if (rc < 0)
			return rc;
		st += r.ttft;
		se2e += r.e2e;
		L->P += r.P;
		L->N += r.N;
		if (isfinite(r.tpot)) {
			stp += r.tpot;
			ntp++;
		}
		if (isfinite(r.wait)) {
			sw += r.wait;
			nw++;
		}
		L->n_ok++;
	}
	L->nrq = k->n_rq - L->rq0;
	if (L->n_ok == 0)
		return 0;
	L->ttft = st / (double)L->n_ok;
	L->e2e = se2e / (double)L->n_ok;
	L->P /= (double)L->n_ok;
	L->N /= (double)L->n_ok;
	L->tpot = ntp ? stp / (double)ntp : NAN;
	L->wait = nw == L->n_ok ? sw / (double)nw : NAN;
	L->ttft_p99 = rl->sum.ttft_ms.p99;
	return 0;
}

/* Level li of input f from its summary (p50s at the workload's mean
 * lengths) into *L; failures are counted into *failed. Returns 0 or
 * -errno. */
static int level_from_summary(cal_data *k, size_t f, size_t li, cal_level *L, long *failed,
			      sb_error *e)
{
	const sb_results *res = k->in[f].res;
	const sb_level *s = &res->levels[li].sum;
	const char *fn = cal_fname(k, f);
	*failed += s->requests_failed;
	if (s->requests_ok <= 0)
		return 0;
	double wl_P = res->has_workload ? sb_dist_mean(&res->workload.input_len) : NAN;
	double wl_N = res->has_workload ? sb_dist_mean(&res->workload.output_len) : NAN;
	if (!res->has_workload || !isfinite(wl_P) || !isfinite(wl_N))
		return sb_error_set(e, "%s: levels[%zu] (concurrency %g) has no per-request "
				       "records and the file has no workload.input_len/"
				       "output_len: a level summary needs the prompt and output "
				       "lengths it was measured with", fn, li, L->c);
	if (!sb_dist_is_det(&res->workload.input_len) ||
	    !sb_dist_is_det(&res->workload.output_len)) {
		int rc = remark(k, CAL_REMARK_LENGTHS_VARY, f, L->c);
		if (rc < 0)
			return rc;
	}
	L->P = wl_P;
	L->N = wl_N;
	L->n_ok = s->requests_ok;
	L->ttft = s->ttft_ms.p50;
	L->tpot = s->tpot_ms.p50;
	L->ttft_p99 = s->ttft_ms.p99;
	if (!isfinite(L->ttft))
		return sb_error_set(e, "%s: levels[%zu] (concurrency %g): ttft_ms.p50 is "
				       "missing (absent or null): every level needs its "
				       "median TTFT", fn, li, L->c);
	if (L->N >= 2 && !isfinite(L->tpot))
		return sb_error_set(e, "%s: levels[%zu] (concurrency %g): tpot_ms.p50 is "
				       "missing (absent or null): every level with 2 or more "
				       "output tokens needs its median TPOT", fn, li, L->c);
	L->e2e = isfinite(s->e2e_ms.p50) ? s->e2e_ms.p50 : L->ttft + (L->N - 1.0) * L->tpot;
	L->wait = s->wait_ms.mean;
	return 0;
}

/* Level li of input f into k->lvs when it is closed-loop and has successful
 * requests (then *used = 1); failures are counted into *failed. Returns 0
 * or -errno. */
static int collect_level(cal_data *k, size_t f, size_t li, long *failed, int *used, sb_error *e)
{
	const sb_results *res = k->in[f].res;
	const sb_rlevel *rl = &res->levels[li];
	const sb_level *s = &rl->sum;
	const char *fn = cal_fname(k, f);
	if (s->mode == SB_MODE_RATE)
		return remark(k, CAL_REMARK_OPEN_LOOP, f, s->level);
	if (!(s->level >= 1) || s->level != floor(s->level))
		return sb_error_set(e, "%s: levels[%zu]: concurrency %g is not a whole number >= 1",
				    fn, li, s->level);
	cal_level L;
	memset(&L, 0, sizeof(L));
	L.file = f;
	L.c = s->level;
	L.wait = NAN;
	L.ttft_p99 = NAN;
	L.out_tok_s = isfinite(s->output_tok_s) ? s->output_tok_s : NAN;
	/* level.h: a measured wait is TTFT minus the server's prompt time, so
	 * it still holds the client/network overhead; a simulated one is the
	 * queue time alone */
	L.wait_has_overhead = strcmp(res->source, "simulated") != 0;
	int rc = rl->n_reqs > 0 ? level_from_records(k, f, li, &L, failed, e)
				: level_from_summary(k, f, li, &L, failed, e);
	if (rc < 0 || L.n_ok == 0)
		return rc;
	if (!(L.ttft >= 0) || (isfinite(L.tpot) && !(L.tpot > 0)))
		return sb_error_set(e, "%s: levels[%zu] (concurrency %g): TTFT %g ms / TPOT %g ms "
				       "are not plausible (need TTFT >= 0, TPOT > 0)",
				    fn, li, L.c, L.ttft, L.tpot);
	cal_level *p = realloc(k->lvs, (k->n_lv + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	k->lvs = p;
	k->lvs[k->n_lv++] = L;
	*used = 1;
	return 0;
}

/* Input f agrees with the first one that named a model (*model0, from
 * input *model_f) and with the first's source (*src0, *src_f); the first
 * ones are remembered. Returns 0 or -EINVAL. */
static int check_same_kind(const cal_data *k, size_t f, const char **model0, size_t *model_f,
			   const char **src0, size_t *src_f, sb_error *e)
{
	const sb_results *r = k->in[f].res;
	const char *m = r->target.model;
	if (m) {
		if (*model0 && strcmp(*model0, m))
			return sb_error_set(e, "the inputs mix models: '%s' (%s) and '%s' (%s); "
					       "calibrate one model at a time",
					    *model0, cal_fname(k, *model_f), m, cal_fname(k, f));
		if (!*model0) {
			*model0 = m;
			*model_f = f;
		}
	}
	if (*src0 && strcmp(*src0, r->source))
		return sb_error_set(e, "the inputs mix %s (%s) and %s (%s) results; calibrate "
				       "from one kind", *src0, cal_fname(k, *src_f), r->source,
				    cal_fname(k, f));
	if (!*src0) {
		*src0 = r->source;
		*src_f = f;
	}
	return 0;
}

/* Input f's levels into k; -EINVAL when it has none or when every request
 * of its closed-loop levels failed. */
static int collect_file(cal_data *k, size_t f, sb_error *e)
{
	const sb_results *r = k->in[f].res;
	if (r->n_levels == 0)
		return sb_error_set(e, "%s: no levels: nothing was measured", cal_fname(k, f));
	if (r->target.pin_stride > 0)
		return 0; /* requests pinned to slots: pinned.c reads them */
	if (r->has_workload && r->workload.prefix_len > 0)
		return 0; /* prompts that share prefixes: cache.c reads them */
	long failed = 0;
	int used = 0;
	for (size_t i = 0; i < r->n_levels; i++) {
		int rc = collect_level(k, f, i, &failed, &used, e);
		if (rc < 0)
			return rc;
	}
	int any_closed = 0;
	for (size_t i = 0; i < r->n_levels; i++)
		any_closed |= r->levels[i].sum.mode == SB_MODE_CONCURRENCY;
	if (!used && any_closed) {
		char why[256] = "";
		for (size_t i = 0; i < r->n_levels && !why[0]; i++)
			fail_text(&r->levels[i], why, sizeof(why));
		return sb_error_set(e, "%s: all %ld requests failed, so it holds no TTFT or "
				       "TPOT to fit%s%s%s; re-measure once the server answers",
				    cal_fname(k, f), failed, why[0] ? " (" : "",
				    why[0] ? why : "", why[0] ? ")" : "");
	}
	return 0;
}

int cal_collect(cal_data *k, const sb_calib_input *in, size_t n, const sb_calib_opts *o,
		sb_error *e)
{
	k->in = in;
	k->n_in = n;
	const char *model0 = NULL, *src0 = NULL;
	size_t model_f = 0, src_f = 0;
	long bt = -2;
	for (size_t f = 0; f < k->n_in; f++) {
		int rc = check_same_kind(k, f, &model0, &model_f, &src0, &src_f, e);
		if (rc < 0)
			return rc;
		long b = k->in[f].res->target.batch_tokens;
		if (b > 0)
			bt = (bt == -2 || bt == b) ? b : -1;
		rc = collect_file(k, f, e);
		if (rc < 0)
			return rc;
	}
	if (k->n_lv == 0)
		return sb_error_set(e, "no closed-loop level in the inputs: the fit needs "
				       "concurrency-1 runs at two or more prompt lengths (servebench "
				       "run --concurrency 1 --input-len N) and a concurrency sweep");
	int have_c1 = 0;
	for (size_t l = 0; l < k->n_lv; l++)
		have_c1 |= k->lvs[l].c == 1;
	if (!have_c1)
		return sb_error_set(e, "no level at concurrency 1 in the inputs: prefill cost, "
				       "overhead and decode_ms(1) come from single-client runs "
				       "(servebench run --concurrency 1) at two or more prompt lengths");
	if (o->batch_tokens > 0)
		k->batch_tokens = o->batch_tokens;
	else if (bt > 0)
		k->batch_tokens = bt;
	else
		k->batch_tokens = 2048;
	return 0;
}
