/* capacity_plan.h — sbsim --plan: (a) the fewest slots meeting the SLO at
 * the first rate, (b) the highest rate meeting it with the model's slots
 * (sb_plan_min_slots / sb_plan_max_rate in sweep.h), printed and as JSON.
 * For a fleet (--replicas N > 1, or several groups): (a) the fewest
 * replicas (per group) meeting the SLO at the first rate with the route,
 * (b) the highest rate the given fleet takes. */
#ifndef SB_CAPACITY_PLAN_H
#define SB_CAPACITY_PLAN_H

#include <jansson.h>
#include <stdio.h>

#include "core/error.h"
#include "core/model.h"
#include "core/workload.h"
#include "sim.h"

typedef struct sb_capacity_plan {
	double rate;         /* the rate of (a): w->levels[0] */
	int max_slots;       /* (a)'s search bound */
	int min_slots;       /* (a); <= 0: none up to max_slots */
	int slots;           /* the model's slots, for (b) */
	double max_rate;     /* (b) req/s; 0: no rate meets the SLO */
	/* with parameter draws (o->uncert): the share of `draws` draws in which
	 * (a)'s and (b)'s answers meet the SLO (sb_plan_share_meeting); NaN
	 * otherwise or without an answer */
	double conf_a, conf_b;
	int draws;
	/* fleets (o->fleet of more than one replica): (a) is the fewest
	 * replicas per group instead, (b) the highest rate of the fleet */
	int fleet;           /* 1: a fleet plan */
	int replicas;        /* the fleet's replicas, for (b) */
	int max_replicas;    /* (a)'s search bound (SB_PLAN_MAX_REPLICAS) */
	int min_replicas;    /* (a); <= 0: none up to max_replicas */
	int groups;          /* groups in the fleet (min_replicas is per group) */
	sb_route route;
	/* (c) with slot choices (sbsim --plan-slots): for each slot count per
	 * replica, the fewest replicas meeting the SLO at `rate` (<= 0: none
	 * up to max_replicas) and, with parameter draws, its share of draws */
	int n_choices;
	struct sb_plan_choice {
		int slots, min_replicas;
		double conf;
	} choices[16];
} sb_capacity_plan;

#define SB_PLAN_MAX_REPLICAS 1024
#define SB_PLAN_MAX_SLOT_CHOICES 16

/* Runs both searches (w: open loop with an SLO; m, o, w borrowed). Returns 0
 * or a negative errno with a message. Cost: tens of sweeps of `reps`. */
int sb_capacity_plan_run(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			 int reps, int max_slots, sb_capacity_plan *p, sb_error *e);

/* (c) after sb_capacity_plan_run: for each of slots[0..n) (n <= 16) slots
 * per replica, the fewest replicas of m (route o->fleet.route) meeting the
 * SLO at p->rate, with its confidence under parameter draws. */
int sb_capacity_plan_slot_choices(const sb_model *m, const sb_sim_opts *o,
				  const sb_workload *w, int reps, const int *slots, int n,
				  sb_capacity_plan *p, sb_error *e);

/* "plan (SLO at p99: TTFT <= 500 ms):" and the two answers, each with its
 * confidence when there is one ("in 95% of 40 parameter draws"). */
void sb_capacity_plan_print(FILE *out, const sb_capacity_plan *p, const sb_slo *slo);

/* {"rate", "min_slots" (null: none), "slots", "max_rate_req_s"}, and with
 * slot choices "slot_choices": [{"slots", "min_replicas" (null: none),
 * "confidence" (with draws)}]; a fleet's
 * plan has "min_replicas" (null: none; per group), "replicas", "route"
 * instead of the slots; with parameter draws also "draws",
 * "min_slots_confidence" (a fleet: "min_replicas_confidence") and
 * "max_rate_confidence" (shares 0..1, null without an answer): new
 * reference, NULL when out of memory. */
json_t *sb_capacity_plan_to_json(const sb_capacity_plan *p);

#endif
