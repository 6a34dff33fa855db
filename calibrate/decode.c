/* decode.c — decode step time at B >= 2 busy sequences (decode.h). */
#include "calibrate/decode.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void cal_decode_fini(cal_decode *r)
{
	free(r->points);
	r->points = NULL;
	sb_linfit_fini(&r->f);
	sb_linfit_fini(&r->line);
}

/* One row per request (or per summary level): y = the step time its TPOT
 * implies at an effective batch bbar once the KV and prefill interference
 * terms are removed; w its weight. */
typedef struct drow {
	double y, bbar, w;
	double var; /* variance of y (a level's mean), NaN: unknown (w relative) */
	double t;   /* a request's first-token time (s), for the level's blocks */
} drow;

/* A prefill that ended at time t (s) and added `extra` s to that step. */
typedef struct pfev {
	double t, extra, cum; /* cum: sum of extra up to and including this one */
} pfev;

static int cmp_pfev(const void *a, const void *b)
{
	double x = ((const pfev *)a)->t, y = ((const pfev *)b)->t;
	return (x > y) - (x < y);
}

/* The level's prefill events in time order (new array of L->nrq), or NULL. */
static pfev *prefill_events(const cal_data *k, const cal_engine *g, const cal_level *L)
{
	pfev *ev = malloc((L->nrq ? L->nrq : 1) * sizeof(*ev));
	if (!ev)
		return NULL;
	for (size_t i = 0; i < L->nrq; i++) {
		const cal_request *R = &k->rqs[L->rq0 + i];
		ev[i] = (pfev){ R->t_first, cal_engine_prefill_work_ms(g, R->P) / 1e3, 0 };
	}
	qsort(ev, L->nrq, sizeof(*ev), cmp_pfev);
	double c = 0;
	for (size_t i = 0; i < L->nrq; i++) {
		c += ev[i].extra;
		ev[i].cum = c;
	}
	return ev;
}

/* Time t on a clock that skips the prefill work of every prefill that ended
 * at or before t; prefills seen up to tol after t count as before it (first
 * tokens of one step reach the client with jitter). O(log n). */
static double warp(const pfev *ev, size_t n, double t, double tol)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ev[mid].t <= t + tol)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? t - ev[lo - 1].cum : t;
}

/* Before every client has sent a recorded request, some run unrecorded
 * warm-up requests that would be invisible to the effective batch: requests
 * that start decoding before then are left out of the decode fit. Returns
 * the c-th earliest send time of the level (-inf when fewer records). */
static double warm_cut(const cal_data *k, const cal_level *L)
{
	size_t c = (size_t)L->c;
	if (L->nrq < c || c < 1)
		return -INFINITY;
	double *t = malloc(L->nrq * sizeof(double));
	if (!t)
		return -INFINITY;
	for (size_t i = 0; i < L->nrq; i++)
		t[i] = k->rqs[L->rq0 + i].t_sent;
	qsort(t, L->nrq, sizeof(double), sb_cmp_double);
	double r = t[c - 1];
	free(t);
	return r;
}

static int cmp_row_t(const void *a, const void *b)
{
	double x = ((const drow *)a)->t, y = ((const drow *)b)->t;
	return (x > y) - (x < y);
}

/* The variance of the mean of a level's m request rows r (reordered), from
 * the level's own scatter: each row less the part its own effective batch
 * explains (the within-level line; that part averages out of the level's
 * mean exactly, so it is no noise of it), then the means of consecutive
 * blocks in time order (requests decoding together share steps and
 * prefills: their noise is correlated, a block's mean holds it), whose
 * variance / blocks is the mean's. LMV_BLOCKS blocks, fewer when a level
 * has fewer than B requests per block (B decode together: a block of one
 * request of 16 at 4 clients took the level's mean as 4 times surer than
 * it is; over 60 simulated calibrate --url data sets decode_ms[4] varied
 * 3.2 times its reported standard error), never fewer than 2. NaN with
 * fewer than 2 rows. */
#define LMV_BLOCKS 10
static double level_mean_var(drow *r, size_t m, int B)
{
	if (m < 2)
		return NAN;
	double yb = 0, bb = 0, sbb = 0, sby = 0;
	for (size_t i = 0; i < m; i++) {
		yb += r[i].y / (double)m;
		bb += r[i].bbar / (double)m;
	}
	for (size_t i = 0; i < m; i++) {
		sbb += (r[i].bbar - bb) * (r[i].bbar - bb);
		sby += (r[i].bbar - bb) * (r[i].y - yb);
	}
	double beta = sbb > 0 ? sby / sbb : 0;
	qsort(r, m, sizeof(*r), cmp_row_t);
	size_t K = m / (size_t)(B > 1 ? B : 1);
	K = K > LMV_BLOCKS ? LMV_BLOCKS : K < 2 ? 2 : K;
	double ss = 0;
	for (size_t j = 0; j < K; j++) {
		size_t a = j * m / K, b = (j + 1) * m / K;
		double s = 0;
		for (size_t i = a; i < b; i++)
			s += r[i].y - beta * (r[i].bbar - bb);
		double d = s / (double)(b - a) - yb;
		ss += d * d;
	}
	return ss / (double)(K - 1) / (double)K;
}

/* Level L's rows from its records into rows + *nrow (effective batch up to
 * B), and its point P's corrections. Returns the rows added or -ENOMEM. */
static long record_rows(const cal_data *k, const cal_engine *g, const cal_level *L, int B,
			drow *rows, size_t *nrow, cal_decode_point *P)
{
	double sy = 0, sb = 0, si = 0, sk = 0;
	long m = 0;
	size_t row0 = *nrow;
	pfev *ev = prefill_events(k, g, L);
	if (!ev)
		return -ENOMEM;
	double t_cut = warm_cut(k, L);
	/* first tokens seen within half a step of each other came from one
	 * step (distinct steps are a whole step apart) */
	double tol = 0.5 * g->decode_1_ms / 1e3;
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++) {
		const cal_request *R = &k->rqs[q];
		if (!isfinite(R->tpot) || !(R->t_done > R->t_first) || R->t_first < t_cut)
			continue;
		double margin = 0.5 * R->tpot / 1e3;
		double add = 0, overlap = 0;
		double a0 = warp(ev, L->nrq, R->t_first, tol);
		double b0 = warp(ev, L->nrq, R->t_done, tol);
		for (size_t o = L->rq0; o < L->rq0 + L->nrq; o++) {
			if (o == q)
				continue;
			const cal_request *O = &k->rqs[o];
			/* its prefill ended in one of R's decode steps */
			if (O->t_first > R->t_first + margin && O->t_first <= R->t_done + margin)
				add += cal_engine_prefill_work_ms(g, O->P);
			double a1 = warp(ev, L->nrq, O->t_first, tol);
			double b1 = warp(ev, L->nrq, O->t_done, tol);
			double a = a1 > a0 ? a1 : a0, b = b1 < b0 ? b1 : b0;
			if (b > a)
				overlap += b - a;
		}
		double bbar = b0 > a0 ? 1.0 + overlap / (b0 - a0) : 1.0;
		if (bbar > B)
			bbar = B;
		double corr_i = add / (R->N - 1.0);
		double kv_i = g->kv_ms_per_token * bbar * (R->P + R->N / 2.0);
		double d = R->tpot - kv_i - corr_i;
		rows[(*nrow)++] = (drow){ d, bbar, 1.0, NAN, R->t_first };
		sy += d;
		sb += bbar;
		si += corr_i;
		sk += kv_i;
		m++;
	}
	free(ev);
	if (m == 0)
		return 0;
	P->step_ms = sy / (double)m;
	P->effective_batch = sb / (double)m;
	P->step_var = level_mean_var(rows + row0, (size_t)m, B);
	/* the level becomes one row at its mean effective batch: a single
	 * request's estimate is noisy, and noise in a regressor would bias the
	 * fit (errors in variables) */
	rows[row0] = (drow){ P->step_ms, P->effective_batch, (double)m, P->step_var, 0 };
	*nrow = row0 + 1;
	P->minus_interference_ms = si / (double)m;
	P->minus_kv_ms = sk / (double)m;
	P->how = CAL_INTERF_RECORDS;
	return m;
}

/* Level L's single row from its summary (B busy sequences of S slots) and
 * its point P's corrections. */
static drow summary_row(const cal_engine *g, const cal_level *L, int B, int S,
			cal_decode_point *P)
{
	double fr;
	if ((int)L->c > S) {
		fr = 0.5;
		P->how = CAL_INTERF_QUEUED;
	} else {
		double tw = cal_engine_ttft_wave(g, L->c, L->P);
		double tsg = cal_engine_overhead_ms(g, L->P) + cal_engine_prefill_work_ms(g, L->P) +
			     1.5 * L->tpot;
		fr = tw > tsg ? (tw - L->ttft) / (tw - tsg) : 0.0;
		if (fr < 0)
			fr = 0;
		if (fr > 1)
			fr = 1;
		P->how = CAL_INTERF_SUMMARY;
		P->ttft_wave_ms = tw;
		P->ttft_staggered_ms = tsg;
		P->fraction = fr;
	}
	P->minus_interference_ms = fr * (double)(B - 1) * cal_engine_prefill_work_ms(g, L->P) /
				   (L->N - 1.0);
	P->minus_kv_ms = g->kv_ms_per_token * (double)B * (L->P + L->N / 2.0);
	P->step_ms = L->tpot - P->minus_kv_ms - P->minus_interference_ms;
	P->step_var = NAN; /* a p50 alone: no scatter to take it from */
	P->effective_batch = B;
	return (drow){ P->step_ms, (double)B, MEDIAN_WEIGHT(L->n_ok), NAN, 0 };
}

/* Batch B among the unknowns U[0..*nu); a new one is added while there is
 * room. Returns 0, or 1 when there is none. */
static int add_batch(int *U, int *nu, int B)
{
	int i;
	for (i = 0; i < *nu && U[i] != B; i++)
		;
	if (i < *nu)
		return 0;
	if (*nu == SB_LINFIT_MAXP || *nu == SB_MODEL_MAX_DECODE - 1)
		return 1;
	U[(*nu)++] = B;
	return 0;
}

/* The points and rows of every level with c >= 2 (rows: room for every
 * request and level); the batch sizes used into out->batches, ascending. */
static int decode_rows(const cal_data *k, const cal_engine *g, const cal_slots *s,
		       cal_decode *out, drow *rows, size_t *nrow)
{
	int *U = out->batches, nu = 0;
	for (size_t l = 0; l < k->n_lv; l++) {
		const cal_level *L = &k->lvs[l];
		if (L->c < 2 || L->N < 2 || !isfinite(L->tpot))
			continue;
		int S = s->files[L->file].slots;
		int B = (int)L->c < S ? (int)L->c : S;
		cal_decode_point *P = &out->points[out->n_points];
		*P = (cal_decode_point){ .level = l, .batch = B, .use = CAL_POINT_USED };
		if (B < 2) {
			P->batch = 1;
			P->use = CAL_POINT_CHECK_ONLY;
			P->check_residual_ms = L->tpot - (g->decode_1_ms +
							  g->kv_ms_per_token * (L->P + L->N / 2.0));
			out->n_points++;
			continue;
		}
		size_t row0 = *nrow;
		if (L->use_reqs) {
			long m = record_rows(k, g, L, B, rows, nrow, P);
			if (m < 0)
				return (int)m;
			if (m == 0)
				continue;
		} else {
			rows[(*nrow)++] = summary_row(g, L, B, S, P);
		}
		out->n_points++;
		if (!(P->step_ms > 0))
			P->use = CAL_POINT_NOT_POSITIVE;
		else if (add_batch(U, &nu, B))
			P->use = CAL_POINT_TOO_MANY_BATCHES;
		if (P->use != CAL_POINT_USED)
			*nrow = row0;
	}
	for (int i = 1; i < nu; i++) /* unknowns in ascending batch order */
		for (int j = i; j > 0 && U[j] < U[j - 1]; j--) {
			int t = U[j];
			U[j] = U[j - 1];
			U[j - 1] = t;
		}
	out->n_batches = nu;
	return 0;
}

/* decode_ms(B) is linear between table points (as the simulator reads it),
 * so a row at effective batch bbar is a fixed mix of two table entries:
 * least squares for the unknown entries into out->f. When every row (a
 * level) carries its mean's variance from its records, the weights are
 * 1/variance and the covariance is (X'WX)^-1 from those variances (an
 * exactly fitted table gets one too); else weights are relative and the
 * covariance comes from the rows' scatter about the fit. */
static int solve_table(const cal_engine *g, const drow *rows, size_t nrow, cal_decode *out,
		       sb_error *e)
{
	const int *U = out->batches, nu = out->n_batches;
	double *X = calloc(nrow * (size_t)nu, sizeof(double));
	double *y = malloc(nrow * sizeof(double)), *w = malloc(nrow * sizeof(double));
	int r = -ENOMEM, known = 1;
	for (size_t q = 0; q < nrow; q++)
		known &= rows[q].var > 0 && isfinite(rows[q].var);
	if (X && y && w) {
		for (size_t q = 0; q < nrow; q++) {
			double bb = rows[q].bbar, yy = rows[q].y, lo = 1;
			int hi_i = 0;
			while (hi_i < nu && U[hi_i] < bb)
				hi_i++;
			if (hi_i == nu) {
				X[q * (size_t)nu + (size_t)(nu - 1)] = 1.0;
			} else {
				lo = hi_i > 0 ? U[hi_i - 1] : 1.0;
				double t = (bb - lo) / ((double)U[hi_i] - lo);
				if (t < 0)
					t = 0;
				X[q * (size_t)nu + (size_t)hi_i] = t;
				if (hi_i > 0)
					X[q * (size_t)nu + (size_t)(hi_i - 1)] = 1.0 - t;
				else
					yy -= (1.0 - t) * g->decode_1_ms;
			}
			y[q] = yy;
			w[q] = known ? 1.0 / rows[q].var : rows[q].w;
		}
		r = sb_linfit_run(X, y, w, nrow, (size_t)nu, &out->f, e);
		if (r == 0 && known)
			r = sb_linfit_known_var(&out->f, X, w, e);
		if (r < 0)
			sb_error_prefix(e, "decode step per batch size");
	}
	free(X);
	free(y);
	free(w);
	return r;
}

/* The table from the fit; -EINVAL when an entry is not positive. Marks
 * entries more than two standard errors below the previous one. */
static int fill_table(cal_decode *out, sb_error *e)
{
	for (int i = 0; i < out->n_batches; i++) {
		out->table[out->n_table] = (sb_decode_point){ out->batches[i], out->f.coef[i] };
		out->table_se[out->n_table] = out->f.has_ci ? out->f.se[i] : NAN;
		out->n_table++;
	}
	const sb_decode_point *t = out->table;
	const double *se = out->table_se;
	for (int i = 1; i < out->n_table; i++) {
		if (!(t[i].ms > 0))
			return sb_error_set(e, "decode_ms(%d) came out %.3g ms: the TPOTs at "
					       "that batch size are inconsistent with the rest",
					    t[i].batch, t[i].ms);
		double sep = 2.0 * sqrt((isfinite(se[i]) ? se[i] * se[i] : 0) +
					(isfinite(se[i - 1]) ? se[i - 1] * se[i - 1] : 0));
		out->below[i] = t[i].ms < t[i - 1].ms - sep;
	}
	return 0;
}

int cal_decode_fit(const cal_data *d, const cal_engine *g, const cal_slots *s, cal_decode *out,
		   sb_error *e)
{
	drow *rows = malloc((d->n_rq + d->n_lv + 1) * sizeof(*rows));
	out->points = malloc((d->n_lv + 1) * sizeof(*out->points));
	if (!rows || !out->points) {
		free(rows);
		return -ENOMEM;
	}
	size_t nrow = 0;
	int r = decode_rows(d, g, s, out, rows, &nrow);
	out->table[0] = (sb_decode_point){ 1, g->decode_1_ms };
	out->table_se[0] = g->decode_1_se;
	out->n_table = 1;
	if (r == 0 && out->n_batches > 0) {
		r = solve_table(g, rows, nrow, out, e);
		if (r == 0)
			r = fill_table(out, e);
	}
	free(rows);
	if (r < 0 || out->n_table < 2)
		return r;
	/* decode_ms(B) = base + per_seq * B over the table, for the report */
	double y[SB_MODEL_MAX_DECODE], xb[SB_MODEL_MAX_DECODE];
	for (int i = 0; i < out->n_table; i++) {
		xb[i] = out->table[i].batch;
		y[i] = out->table[i].ms;
	}
	sb_error e2;
	out->has_line = sb_linfit_line(xb, y, NULL, (size_t)out->n_table, &out->line, &e2) == 0;
	return 0;
}
