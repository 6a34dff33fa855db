/* router.c — routing policies of a simulated fleet (see router.h). */
#include "router.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Replicas ordered by a count: ord[] ascending, pos[] its inverse, and
 * first[c] the first position holding count c (n when none is higher);
 * a count moves by one at a time, so an update is one swap. */
typedef struct order {
	int *ord, *pos;
	long *first;   /* cap entries */
	long cap;
} order;

struct sb_router {
	sb_route route;
	int n;
	int next;      /* round-robin */
	long *out, *wait;
	order by;      /* by out (least-outstanding, prefix-affinity) or wait
			  (least-queued) */
	int *home;     /* prefix-affinity: per group its replica + 1 (0: none) */
	long n_home;
};

static int order_init(order *o, int n)
{
	o->ord = malloc((size_t)n * sizeof *o->ord);
	o->pos = malloc((size_t)n * sizeof *o->pos);
	o->cap = 64;
	o->first = malloc((size_t)o->cap * sizeof *o->first);
	if (!o->ord || !o->pos || !o->first)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		o->ord[i] = o->pos[i] = i;
	o->first[0] = 0;
	for (long c = 1; c < o->cap; c++)
		o->first[c] = n;
	return 0;
}

static void order_fini(order *o)
{
	free(o->ord);
	free(o->pos);
	free(o->first);
}

static void order_swap(order *o, long a, long b)
{
	int ia = o->ord[a], ib = o->ord[b];
	o->ord[a] = ib;
	o->ord[b] = ia;
	o->pos[ib] = (int)a;
	o->pos[ia] = (int)b;
}

/* Replica i's count goes from c to c + d (d = +1 or -1). */
static int order_move(order *o, int n, int i, long c, int d)
{
	if (d > 0) {
		if (c + 2 >= o->cap) {
			long nc = o->cap * 2;
			long *nf = realloc(o->first, (size_t)nc * sizeof *nf);
			if (!nf)
				return -ENOMEM;
			for (long k = o->cap; k < nc; k++)
				nf[k] = n;
			o->first = nf;
			o->cap = nc;
		}
		long last = o->first[c + 1] - 1;
		order_swap(o, o->pos[i], last);
		o->first[c + 1]--;
	} else if (d < 0) {
		order_swap(o, o->pos[i], o->first[c]);
		o->first[c]++;
	}
	return 0;
}

sb_router *sb_router_new(sb_route route, int n)
{
	if (n < 1)
		return NULL;
	sb_router *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->route = route;
	r->n = n;
	r->out = calloc((size_t)n, sizeof *r->out);
	r->wait = calloc((size_t)n, sizeof *r->wait);
	if (!r->out || !r->wait || order_init(&r->by, n) < 0) {
		sb_router_free(r);
		return NULL;
	}
	return r;
}

void sb_router_free(sb_router *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->wait);
	free(r->home);
	order_fini(&r->by);
	free(r);
}

/* Uniformly one of the replicas holding the lowest count. */
static int order_pick_min(const order *o, const long *count, int n, gsl_rng *rng)
{
	long c = count[o->ord[0]];
	long ties = c + 1 < o->cap ? o->first[c + 1] : n;
	if (ties <= 1)
		return o->ord[0];
	return o->ord[gsl_rng_uniform_int(rng, (unsigned long)ties)];
}

/* prefix-affinity: the group's replica, least-outstanding the first time. */
static int affinity(sb_router *r, gsl_rng *rng, long group)
{
	if (group >= 0 && group < r->n_home && r->home[group] > 0)
		return r->home[group] - 1;
	int i = order_pick_min(&r->by, r->out, r->n, rng);
	if (group < 0)
		return i;
	if (group >= r->n_home) {
		long n = group + 16;
		int *h = realloc(r->home, (size_t)n * sizeof *h);
		if (!h)
			return -1;
		memset(h + r->n_home, 0, (size_t)(n - r->n_home) * sizeof *h);
		r->home = h;
		r->n_home = n;
	}
	r->home[group] = i + 1;
	return i;
}

int sb_router_pick(sb_router *r, gsl_rng *rng, long group)
{
	if (r->n == 1)
		return 0;
	switch (r->route) {
	case SB_ROUTE_PREFIX_AFFINITY:
		return affinity(r, rng, group);
	case SB_ROUTE_RANDOM:
		return (int)gsl_rng_uniform_int(rng, (unsigned long)r->n);
	case SB_ROUTE_LEAST_OUTSTANDING:
		return order_pick_min(&r->by, r->out, r->n, rng);
	case SB_ROUTE_LEAST_QUEUED:
		return order_pick_min(&r->by, r->wait, r->n, rng);
	case SB_ROUTE_P2C: {
		int a = (int)gsl_rng_uniform_int(rng, (unsigned long)r->n);
		int b = (int)gsl_rng_uniform_int(rng, (unsigned long)(r->n - 1));
		if (b >= a)
			b++;
		if (r->out[a] != r->out[b])
			return r->out[a] < r->out[b] ? a : b;
		return gsl_rng_uniform_int(rng, 2) ? b : a;
	}
	default: {
		int i = r->next;
		r->next = (i + 1) % r->n;
		return i;
	}
	}
}

int sb_router_note(sb_router *r, int i, int d_out, int d_wait)
{
	int rc = 0;
	if (d_out && (r->route == SB_ROUTE_LEAST_OUTSTANDING ||
		      r->route == SB_ROUTE_PREFIX_AFFINITY))
		rc = order_move(&r->by, r->n, i, r->out[i], d_out);
	if (d_wait && r->route == SB_ROUTE_LEAST_QUEUED)
		rc = order_move(&r->by, r->n, i, r->wait[i], d_wait);
	r->out[i] += d_out;
	r->wait[i] += d_wait;
	return rc;
}

long sb_router_outstanding(const sb_router *r, int i)
{
	return r->out[i];
}

long sb_router_waiting(const sb_router *r, int i)
{
	return r->wait[i];
}
