/* steps.c — the server's step speed during a level, from its streamed
 * tokens (steps.h). */
#include "steps.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/stats.h"

/* One request's stream: token times (s, from the level's start), first
 * token at t[0], and its prompt tokens (those the server prefilled, where
 * it said, for the prefill; all of them for the context). */
typedef struct stream {
	double *t;
	size_t n;
	double prompt_ctx, prompt_fill;
	long replica; /* the fleet's server that took it; -1: one server */
	long slot;    /* the slot that served it; -1: not reported */
} stream;

/* The median of v[0..n) (sorted in place); NaN below SB_STEPS_MIN values. */
static double median_of(double *v, long n)
{
	return n < SB_STEPS_MIN ? NAN : sb_median_sort(v, (size_t)n);
}

/* A decoding stream in a gap: its slot and context. */
typedef struct busy {
	long slot;
	double ctx;
} busy;

/* A level's streams, ordered by first token; lmax the longest one's span
 * (s): a stream alive in a gap (a, b] starts after a - lmax; d room for
 * all of them decoding in one gap. */
typedef struct streams {
	stream *s;
	size_t n;
	double lmax;
	busy *d;
} streams;

static int cmp_first_token(const void *a, const void *b)
{
	return sb_cmp_double(((const stream *)a)->t, ((const stream *)b)->t);
}

static void streams_free(stream *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		free(s[i].t);
	free(s);
}

/* The level's streams (requests with a first token): *ns of them in *out
 * (new). Returns 0 or -ENOMEM. */
static int streams_of(const sb_rlevel *lv, stream **out, size_t *ns)
{
	stream *s = calloc(lv->n_reqs ? lv->n_reqs : 1, sizeof(*s));
	*out = s;
	*ns = 0;
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < lv->n_reqs; i++) {
		const sb_reqrec *r = &lv->reqs[i];
		if (r->err_class || !isfinite(r->ttft_ms) || r->prompt_tokens < 1)
			continue;
		stream *x = &s[*ns];
		size_t n_itl = r->itl_ms ? r->n_itl : 0;
		x->t = malloc((n_itl + 1) * sizeof(*x->t));
		if (!x->t) {
			streams_free(s, *ns);
			*out = NULL;
			return -ENOMEM;
		}
		x->t[0] = r->t_sent_s + r->ttft_ms / 1000;
		for (size_t k = 0; k < n_itl; k++)
			x->t[k + 1] = x->t[k] + r->itl_ms[k] / 1000;
		x->n = n_itl + 1;
		x->prompt_ctx = (double)r->prompt_tokens;
		x->replica = r->replica;
		x->slot = r->slot;
		double pn = lv->timing ? lv->timing[i].prompt_n : NAN;
		x->prompt_fill = isfinite(pn) && pn >= 0 ? pn : x->prompt_ctx;
		(*ns)++;
	}
	return 0;
}

/* Orders v's streams by first token and finds the longest span. */
static void streams_index(streams *v)
{
	qsort(v->s, v->n, sizeof(*v->s), cmp_first_token);
	v->lmax = 0;
	for (size_t i = 0; i < v->n; i++) {
		double span = v->s[i].t[v->s[i].n - 1] - v->s[i].t[0];
		v->lmax = span > v->lmax ? span : v->lmax;
	}
}

/* The first of v's streams whose first token is after t. */
static size_t first_after(const streams *v, double t)
{
	size_t lo = 0, hi = v->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v->s[mid].t[0] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Tokens of x at or before t. */
static size_t tokens_by(const stream *x, double t)
{
	size_t lo = 0, hi = x->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (x->t[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_slot(const void *a, const void *b)
{
	long x = ((const busy *)a)->slot, y = ((const busy *)b)->slot;
	return (x > y) - (x < y);
}

/* The model's decode cost (ms) of the B streams in d: one pass of all of
 * them, or with a per-slot cache and every slot known, one pass per run of
 * consecutive slots (as the simulator costs them; d gets sorted). */
static double decode_model_ms(const sb_model *m, busy *d, int B)
{
	int runs = m->kv_cache == SB_KV_PER_SLOT;
	for (int i = 0; i < B && runs; i++)
		runs = d[i].slot >= 0;
	if (runs)
		qsort(d, (size_t)B, sizeof(*d), cmp_slot);
	double ms = 0;
	for (int i = 0; i < B;) {
		int j = i + 1;
		double ctx = d[i].ctx;
		while (j < B && (!runs || d[j].slot == d[j - 1].slot + 1))
			ctx += d[j++].ctx;
		ms += sb_model_decode_ms(m, j - i) + sb_model_decode_kv(m, j - i) * ctx;
		i = j;
	}
	return ms;
}

/* The model's cost (ms) of the step in the gap (a, b] on server `rep`: *dec
 * for that server's streams decoding across it, *pre for its prompt.
 * Returns the prompts in the gap, or -1 when no stream decoded across it.
 * Only the streams that start within lmax before the gap can be alive in it. */
static int step_model_ms(const sb_model *m, const streams *v, long rep, double a, double b,
			 double eps, double *dec, double *pre)
{
	busy *d = v->d;
	int B = 0, np = 0;
	double fill = 0;
	size_t end = first_after(v, b + eps);
	for (size_t i = first_after(v, a - v->lmax - eps); i < end; i++) {
		const stream *x = &v->s[i];
		if (x->replica != rep)
			continue;
		if (x->t[0] > a + eps && x->t[0] <= b + eps) {
			np++;
			fill = x->prompt_fill;
		} else if (x->t[0] <= a + eps && x->t[x->n - 1] >= b - eps) {
			d[B++] = (busy){ x->slot, x->prompt_ctx + (double)tokens_by(x, a + eps) };
		}
	}
	if (B < 1)
		return -1;
	*dec = decode_model_ms(m, d, B);
	/* as the simulator costs a step: a per-slot cache's prompt is a pass of its own */
	*pre = (m->kv_cache == SB_KV_PER_SLOT ? m->prefill_base_ms : 0) +
	       m->per_prefill_token_ms * fill + m->per_prefill_attn_ms * fill * (fill - 1) / 2;
	return np;
}

int sb_step_speed_of(const sb_rlevel *lv, const sb_model *m, sb_step_speed *out)
{
	out->f_decode = out->f_prefill = NAN;
	out->n_decode = out->n_prefill = 0;
	size_t ns, gaps = 0;
	stream *s;
	int r = streams_of(lv, &s, &ns);
	streams v = { s, ns, 0, r == 0 ? malloc((ns ? ns : 1) * sizeof(busy)) : NULL };
	if (r == 0 && !v.d)
		r = -ENOMEM;
	if (r == 0)
		streams_index(&v);
	for (size_t i = 0; i < ns; i++)
		gaps += s[i].n - 1;
	double *dec = r == 0 ? malloc((gaps + 1) * sizeof(*dec)) : NULL;
	double *pre = dec ? malloc((3 * gaps + 1) * sizeof(*pre)) : NULL;
	if (r == 0 && !pre)
		r = -ENOMEM;
	double eps = SB_STEPS_JITTER * sb_model_decode_ms(m, 1) / 1000;
	/* decode-only gaps: measured / model; gaps with one prompt kept as
	 * (measured, decode part, prompt part) until the decode factor is known */
	long np3 = 0;
	for (size_t i = 0; r == 0 && i < ns; i++)
		for (size_t k = 0; k + 1 < s[i].n; k++) {
			double a = s[i].t[k], b = s[i].t[k + 1], d, p;
			int prompts = step_model_ms(m, &v, s[i].replica, a, b, eps, &d, &p);
			if (prompts == 0 && d > 0)
				dec[out->n_decode++] = (b - a) * 1000 / d;
			else if (prompts == 1 && p >= d) { /* the prompt most of the step */
				pre[3 * np3] = (b - a) * 1000;
				pre[3 * np3 + 1] = d;
				pre[3 * np3 + 2] = p;
				np3++;
			}
		}
	if (r == 0) {
		out->f_decode = median_of(dec, out->n_decode);
		double fd = isfinite(out->f_decode) ? out->f_decode : 1;
		for (long j = 0; j < np3; j++)
			pre[out->n_prefill++] = (pre[3 * j] - fd * pre[3 * j + 1]) / pre[3 * j + 2];
		out->f_prefill = median_of(pre, out->n_prefill);
		if (!(out->f_prefill > 0)) /* noise about a prompt part of ~0 */
			out->f_prefill = NAN;
	}
	free(dec);
	free(pre);
	free(v.d);
	streams_free(s, ns);
	return r;
}

const char *sb_step_factor_str(char *buf, double f)
{
	if (isfinite(f))
		snprintf(buf, 16, "x%.3f", f);
	else
		snprintf(buf, 16, "-");
	return buf;
}

int sb_step_speed_factors(const sb_step_speed *sp, double *fp, double *fd)
{
	*fp = sp->f_prefill > 0 ? sp->f_prefill : sp->f_decode;
	*fd = sp->f_decode > 0 ? sp->f_decode : sp->f_prefill;
	if (*fp > 0 && *fd > 0 && isfinite(*fp) && isfinite(*fd))
		return 1;
	*fp = *fd = NAN;
	return 0;
}
