/* route.c — a fleet router's rules (route.h). */
#include "route.h"

#include <errno.h>
#include <string.h>

static const char *const names[SB_ROUTE_N] = { "round-robin", "random", "least-outstanding",
					       "least-queued", "p2c" };
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
			       "least-outstanding, least-queued, p2c", s ? s : "");
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

size_t sb_route_pick(sb_route_picker *r, const long *inflight)
{
	if (r->n <= 1)
		return 0;
	switch (r->route) {
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
