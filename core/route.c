/* route.c — a fleet router's rules (route.h). */
#include "route.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[SB_ROUTE_N] = { "round-robin", "random", "least-outstanding",
					       "least-queued", "p2c", "prefix-affinity" };
#define N_NAMES ((size_t)SB_ROUTE_N)

const char *sb_route_name(sb_route r)
{
	return (size_t)r < N_NAMES ? names[r] : "?";
}

int sb_route_parse(const char *s, sb_route *out, sb_error *e)
{
	for (size_t i = 0; i < N_NAMES; i++)
		if (s && !strcmp(s, names[i])) {
			*out = (sb_route)i;
			return 0;
		}
	return sb_error_set(e, "route \"%s\" is not one of round-robin, random, "
			       "least-outstanding, least-queued, p2c, prefix-affinity", s ? s : "");
}

/* What a replica is judged by: requests waiting (least-queued) or in flight. */
static long load_of(const sb_route_picker *r, const long *inflight, size_t i)
{
	if (r->route != SB_ROUTE_LEAST_QUEUED)
		return inflight[i];
	long slots = r->slots && r->slots[i] > 0 ? r->slots[i] : 1;
	return inflight[i] > slots ? inflight[i] - slots : 0;
}

/* The replica with the least load; ties broken uniformly at random (the
 * k-th tie replaces the choice with chance 1/k: one draw per tie). */
static size_t least(const sb_route_picker *r, const long *inflight)
{
	size_t best = 0, ties = 1;
	long lb = load_of(r, inflight, 0);
	for (size_t i = 1; i < r->n; i++) {
		long l = load_of(r, inflight, i);
		if (l < lb) {
			best = i;
			lb = l;
			ties = 1;
		} else if (l == lb && gsl_rng_uniform_int(r->rng, ++ties) == 0) {
			best = i;
		}
	}
	return best;
}

/* Power of two choices on in-flight counts. */
static size_t two_choices(const sb_route_picker *r, const long *inflight)
{
	size_t a = gsl_rng_uniform_int(r->rng, r->n);
	size_t b = gsl_rng_uniform_int(r->rng, r->n - 1);
	if (b >= a)
		b++;
	if (inflight[a] != inflight[b])
		return inflight[a] < inflight[b] ? a : b;
	return gsl_rng_uniform_int(r->rng, 2) ? b : a;
}

/* prefix-affinity: group's replica, chosen as least-outstanding the first
 * time. */
static size_t affinity(sb_route_picker *r, const long *inflight, long group)
{
	if (group >= 0 && (size_t)group < r->n_home && r->home[group] > 0)
		return (size_t)r->home[group] - 1;
	size_t i = least(r, inflight);
	if (group < 0)
		return i;
	if ((size_t)group >= r->n_home) {
		size_t n = (size_t)group + 16;
		long *h = realloc(r->home, n * sizeof *h);
		if (!h)
			return i;
		memset(h + r->n_home, 0, (n - r->n_home) * sizeof *h);
		r->home = h;
		r->n_home = n;
	}
	r->home[group] = (long)i + 1;
	return i;
}

void sb_route_picker_fini(sb_route_picker *r)
{
	free(r->home);
	r->home = NULL;
	r->n_home = 0;
}

size_t sb_route_pick(sb_route_picker *r, const long *inflight, long group)
{
	if (r->n <= 1)
		return 0;
	switch (r->route) {
	case SB_ROUTE_PREFIX_AFFINITY:
		return affinity(r, inflight, group);
	case SB_ROUTE_RANDOM:
		return gsl_rng_uniform_int(r->rng, r->n);
	case SB_ROUTE_LEAST_OUTSTANDING:
	case SB_ROUTE_LEAST_QUEUED:
		return least(r, inflight);
	case SB_ROUTE_P2C:
		return two_choices(r, inflight);
	case SB_ROUTE_ROUND_ROBIN:
	case SB_ROUTE_N:
		break;
	}
	return (size_t)(r->next++ % r->n);
}
