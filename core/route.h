/* route.h — how a fleet's router picks the replica for a request: the
 * rules' names and the one pick function `servebench run --route` uses at
 * send time, over the client's own in-flight counts per replica.
 *
 *   round-robin        replicas 0, 1, ..., n-1, 0, ... in send order
 *   random             uniform over the replicas (seeded)
 *   least-outstanding  fewest requests in flight at that replica; ties at
 *                      random
 *   least-queued       fewest waiting there, i.e. in flight beyond that
 *                      replica's slot count (an unknown slot count counts
 *                      as 1); ties at random
 *   p2c                two distinct replicas drawn at random, the one with
 *                      fewer in flight; ties at random
 *   prefix-affinity    a request whose prompt starts with a shared prefix
 *                      (its prefix group) goes where that group's first
 *                      request went, so the group's prefix stays in one
 *                      replica's prompt cache; a group's first request, and
 *                      one without a group, as least-outstanding
 *
 * "At random" always draws from the generator passed in, so a run's
 * choices are reproducible from its seed given the same in-flight counts.
 */
#ifndef SB_ROUTE_H
#define SB_ROUTE_H

#include <gsl/gsl_rng.h>
#include <stddef.h>

#include "error.h"

typedef enum sb_route {
	SB_ROUTE_ROUND_ROBIN = 0,
	SB_ROUTE_RANDOM,
	SB_ROUTE_LEAST_OUTSTANDING,
	SB_ROUTE_LEAST_QUEUED,
	SB_ROUTE_P2C,
	SB_ROUTE_PREFIX_AFFINITY,
	SB_ROUTE_N
} sb_route;

/* The names in enum order, for an SB_CLI_CHOICE option. */
#define SB_ROUTE_CHOICES \
	"round-robin|random|least-outstanding|least-queued|p2c|prefix-affinity"

/* "round-robin", ...; "?" for a value outside the enum. */
const char *sb_route_name(sb_route r);
/* 0 with *out set, or -EINVAL with a message naming s and the choices. */
int sb_route_parse(const char *s, sb_route *out, sb_error *e);

/* A client-side router's state between picks (servebench run; the
 * simulator's router, sim/router.h, keeps its own counts). */
typedef struct sb_route_picker {
	sb_route route;
	size_t n;              /* replicas */
	const long *slots;     /* per replica, -1 unknown (least-queued); borrowed */
	gsl_rng *rng;          /* random, p2c and ties; borrowed */
	unsigned long next;    /* round-robin: the next replica */
	long *home;            /* prefix-affinity: per group, its replica + 1
				  (0: none yet); owned (sb_route_picker_fini) */
	size_t n_home;
} sb_route_picker;

/* The replica for the next request given inflight[0..n) (requests in
 * flight at each replica now, before this one) and its prefix group (-1:
 * none). n must be >= 1; with n == 1 it is 0 and nothing is drawn. Out
 * of memory for a new group's entry, prefix-affinity picks as
 * least-outstanding and forgets the group. */
size_t sb_route_pick(sb_route_picker *r, const long *inflight, long group);
/* Releases what r owns (the groups' replicas); r can pick again. */
void sb_route_picker_fini(sb_route_picker *r);

#endif
