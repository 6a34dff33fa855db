/* checks.c — shape checks and their re-measurements (checks.h). */
#include "calibrate/checks.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One size of a series: its first measurement's median and the median of
 * the later ones (NaN: none). */
typedef struct size_stat {
	double x, first, again;
	size_t u0;
} size_stat;

static int cmp_obs_x(const void *a, const void *b)
{
	const cal_obs *p = a, *q = b;
	return (p->x > q->x) - (p->x < q->x);
}

/* The statistics of the size made of o[0..n) (sorted by x) into *s; tmp
 * has room for n values. */
static void size_of(const cal_obs *o, size_t n, double *tmp, size_stat *s)
{
	s->x = o[0].x;
	s->u0 = o[0].unit;
	for (size_t i = 1; i < n; i++)
		if (o[i].unit < s->u0)
			s->u0 = o[i].unit;
	size_t a = 0, b = 0;
	for (size_t i = 0; i < n; i++)
		if (o[i].unit == s->u0)
			tmp[a++] = o[i].y;
	s->first = sb_median_sort(tmp, a);
	for (size_t i = 0; i < n; i++)
		if (o[i].unit != s->u0)
			tmp[b++] = o[i].y;
	s->again = sb_median_sort(tmp, b);
}

/* Marks the owners of size s's first measurement (o[lo..hi)) in drop. */
static void drop_first(const cal_obs *o, size_t lo, size_t hi, const size_stat *s, int *drop)
{
	for (size_t i = lo; i < hi; i++)
		if (o[i].unit == s->u0)
			drop[o[i].owner] = 1;
}

/* The verdict on a fall from size p to size s into c (and drop). */
static void judge(const cal_obs *o, const size_t *lo, int j, const size_stat *st, int *drop,
		  cal_check *c)
{
	const size_stat *p = &st[j - 1], *s = &st[j];
	c->x = s->x;
	c->x_prev = p->x;
	c->measured = s->first;
	c->measured_prev = p->first;
	c->again = s->again;
	c->again_prev = p->again;
	c->remeasured = isfinite(s->again) || isfinite(p->again);
	if (!c->remeasured) {
		c->kept = 1;
		snprintf(c->why, sizeof(c->why), "not re-measured (the inputs hold one measurement "
						 "of each): used as measured");
		return;
	}
	double a = isfinite(s->again) ? s->again : s->first;
	double b = isfinite(p->again) ? p->again : p->first;
	c->kept = a < CAL_CHECKS_FALL * b;
	if (c->kept) {
		snprintf(c->why, sizeof(c->why), "the re-measurement fell too (%.4g below %.4g by more than a tenth): kept",
			 a, b);
		return;
	}
	snprintf(c->why, sizeof(c->why), "the re-measurement did not fall by a tenth (%.4g against %.4g): the "
					 "first measurements left out, the re-measurements used",
		 a, b);
	if (isfinite(s->again))
		drop_first(o, lo[j], lo[j + 1], s, drop);
	if (isfinite(p->again))
		drop_first(o, lo[j - 1], lo[j], p, drop);
}

int cal_checks_series(const cal_obs *obs, size_t n, double xtol, const char *what,
		      const char *expected, int *drop, cal_checks *out)
{
	if (n < 2)
		return 0;
	cal_obs *o = malloc(n * sizeof(*o));
	double *tmp = malloc(n * sizeof(double));
	size_stat *st = malloc(n * sizeof(*st));
	size_t *lo = malloc((n + 1) * sizeof(size_t));
	if (!o || !tmp || !st || !lo) {
		free(o);
		free(tmp);
		free(st);
		free(lo);
		return -ENOMEM;
	}
	memcpy(o, obs, n * sizeof(*o));
	qsort(o, n, sizeof(*o), cmp_obs_x);
	int ns = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && o[j].x <= o[i].x * (1 + xtol))
			j++;
		lo[ns] = i;
		size_of(o + i, j - i, tmp, &st[ns++]);
		i = j;
	}
	lo[ns] = n;
	for (int j = 1; j < ns && out->n < CAL_CHECKS_MAX; j++) {
		if (!(st[j].first < CAL_CHECKS_FALL * st[j - 1].first))
			continue;
		cal_check *c = &out->c[out->n++];
		memset(c, 0, sizeof(*c));
		snprintf(c->what, sizeof(c->what), "%s %g vs %g", what, st[j].x, st[j - 1].x);
		c->expected = expected;
		judge(o, lo, j, st, drop, c);
	}
	free(o);
	free(tmp);
	free(st);
	free(lo);
	return 0;
}

/* A concurrency-1 level's median prefill time: the server's prompt_ms when
 * every request has it, else TTFT; the summary's TTFT without records. */
static double level_prefill(const cal_data *d, const cal_level *L, double *tmp)
{
	if (!L->use_reqs)
		return L->ttft;
	size_t n = 0;
	int timings = 1;
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++)
		timings &= isfinite(d->rqs[q].prompt_ms);
	for (size_t q = L->rq0; q < L->rq0 + L->nrq; q++)
		tmp[n++] = timings ? d->rqs[q].prompt_ms : d->rqs[q].ttft;
	return sb_median_sort(tmp, n);
}

int cal_checks_prompts(cal_data *d, cal_checks *out)
{
	cal_obs *o = malloc((d->n_lv ? d->n_lv : 1) * sizeof(*o));
	int *drop = calloc(d->n_lv ? d->n_lv : 1, sizeof(int));
	double *tmp = malloc((d->n_rq ? d->n_rq : 1) * sizeof(double));
	size_t n = 0;
	int r = -ENOMEM;
	if (o && drop && tmp) {
		for (size_t l = 0; l < d->n_lv; l++) {
			const cal_level *L = &d->lvs[l];
			if (L->c != 1 || !(L->P > 0))
				continue;
			o[n++] = (cal_obs){ L->P, level_prefill(d, L, tmp), l, l };
		}
		r = cal_checks_series(o, n, 0.1, "prefill, prompt tokens",
				      "a longer prompt takes longer to prefill", drop, out);
	}
	for (size_t l = 0; r == 0 && l < d->n_lv; l++)
		d->lvs[l].shape_dropped = drop[l];
	free(o);
	free(drop);
	free(tmp);
	return r;
}
