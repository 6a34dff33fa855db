/* router.h — the router in front of a simulated fleet: which replica a new
 * request goes to.
 *
 * Policies (sb_route, core/route.h):
 *  - round-robin: replicas 0, 1, ..., N-1, 0, ... in turn;
 *  - random: uniformly at random;
 *  - least-outstanding: the fewest requests in flight at the replica
 *    (routed there and not yet finished), ties at random;
 *  - least-queued: join the shortest queue, i.e. the fewest requests
 *    waiting for a slot (routed there, in transit or queued, not yet in a
 *    slot), ties at random;
 *  - p2c: power of two choices on in-flight counts: two distinct replicas
 *    drawn at random, the one with fewer in flight, ties at random;
 *  - prefix-affinity: a request of a prefix group goes where the group's
 *    first request went; that one, and a request without a group, as
 *    least-outstanding.
 *
 * The router sees each replica's counts exactly and at once (no delay, no
 * stale view); the simulator reports every change with sb_router_note.
 * least-outstanding, least-queued and prefix-affinity keep the replicas
 * ordered by their count in buckets, so a pick and an update are O(1)
 * whatever N is.
 * Randomness only from the gsl_rng passed in (the fleet's router stream).
 */
#ifndef SB_ROUTER_H
#define SB_ROUTER_H

#include <gsl/gsl_rng.h>

#include "core/error.h"
#include "core/route.h" /* sb_route, its names */


typedef struct sb_router sb_router;

/* A router for n >= 1 replicas, all counts 0. NULL when out of memory. */
sb_router *sb_router_new(sb_route route, int n);
/* Releases r; NULL is a no-op. */
void sb_router_free(sb_router *r);

/* The replica for the next request, of prefix group `group` (-1: none;
 * draws from rng for random, p2c and ties). Does not change the counts:
 * the caller notes the request. -1 out of memory (a new group's entry). */
int sb_router_pick(sb_router *r, gsl_rng *rng, long group);

/* Replica i has d_out (+1/-1) more requests in flight and d_wait more
 * waiting for a slot. Returns 0 or -ENOMEM (a bucket table grew). */
int sb_router_note(sb_router *r, int i, int d_out, int d_wait);

/* Requests in flight at / waiting at replica i. */
long sb_router_outstanding(const sb_router *r, int i);
long sb_router_waiting(const sb_router *r, int i);

#endif
