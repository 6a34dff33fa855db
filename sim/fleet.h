/* fleet.h — what a simulated fleet is: replicas behind a router.
 *
 * A fleet is one or more groups of identical replicas; each group has its
 * engine model (NULL: the model the level is simulated with) and a count.
 * With no groups, `replicas` copies of the level's model. A fleet of one
 * replica is the single server, simulated exactly as without a fleet (no
 * router, no router draws, the same output for the same seed).
 *
 * What the fleet model assumes: one arrival stream (open loop) or one set
 * of clients (closed loop) sends every request to the router, which sees
 * every replica's state exactly and at once (no network delay, no stale
 * counts) and hands the request on when it is sent; the replica then
 * treats it as a single server would (overhead, queue, max_queue). The
 * replicas share nothing else: no cache, no queue, no step noise.
 */
#ifndef SB_SIM_FLEET_H
#define SB_SIM_FLEET_H

#include "core/error.h"
#include "core/model.h"
#include "router.h"

#define SB_FLEET_MAX_GROUPS 16
#define SB_FLEET_MAX_REPLICAS 100000

struct sb_uncert;

typedef struct sb_fleet_group {
	const sb_model *model; /* borrowed; NULL: the level's model */
	int count;             /* replicas of it, >= 1 */
	/* with parameter draws (sim/uncertainty.h), the group's own model's
	 * covariance (borrowed; NULL: its model is not drawn) and whether it is
	 * a calibration of its own (independent draws) or a copy of the level's
	 * model with other slots (the level's model's draws) */
	const struct sb_uncert *uncert;
	int own_calibration;
} sb_fleet_group;

typedef struct sb_fleet {
	int n_groups;          /* 0: `replicas` copies of the level's model */
	sb_fleet_group groups[SB_FLEET_MAX_GROUPS];
	int replicas;          /* with no groups; 0 and 1 both mean one server */
	sb_route route;
} sb_fleet;

/* One server: no groups, replicas 0, round-robin. */
void sb_fleet_init(sb_fleet *f);

/* How many replicas f has (>= 1). */
int sb_fleet_size(const sb_fleet *f);

/* Replica i's model (m when its group has none) and *group (may be NULL):
 * replicas are numbered group by group. */
const sb_model *sb_fleet_model(const sb_fleet *f, const sb_model *m, int i, int *group);

/* With parameter draws, how group g's model is drawn: "the model's draws"
 * (no model of its own, or a copy of the level's model), "its own draws"
 * (its own covariance) or "not drawn" (no covariance). Static string. */
const char *sb_fleet_group_draws(const sb_fleet *f, int g);

/* Sets every group's count (or `replicas`, with no groups) to k: the fleet
 * --plan tries. */
void sb_fleet_set_count(sb_fleet *f, int k);

/* Checks counts (>= 1, at most SB_FLEET_MAX_REPLICAS in all), the route, and
 * every group's model. Returns 0 or -EINVAL naming the bad value. */
int sb_fleet_validate(const sb_fleet *f, sb_error *e);

#endif
