/* capacity.h — the capacity planner (sbsim --plan): its search by trials
 * of sweep levels, and the plan it gives, printed and as JSON:
 * (a) the fewest slots meeting the SLO at the first rate, (b) the highest
 * rate meeting it with the model's slots (sb_capacity_min_slots /
 * sb_capacity_max_rate).
 * For a fleet (--replicas N > 1, or several groups): (a) the fewest
 * replicas (per group) meeting the SLO at the first rate with the route,
 * (b) the highest rate the given fleet takes. */
#ifndef SB_SIM_CAPACITY_H
#define SB_SIM_CAPACITY_H

#include <jansson.h>
#include <stdio.h>

#include "core/error.h"
#include "core/model.h"
#include "core/workload.h"
#include "sim.h"

/* The share of `reps` replications (each its own parameter draw when
 * o->uncert is set) of model m with `slots` slots at open-loop `rate` that
 * meet w's SLO (sb_sweep_share_meeting), same seeds as the planning trials.
 * Returns 0 or a negative errno with a message. */
int sb_capacity_share_meeting(const sb_model *m, const sb_sim_opts *o, const sb_workload *w,
			  int slots, double rate, int reps, double *share, sb_error *e);

/* Capacity planning with the workload's SLO (at least one of ttft/tpot
 * must be set), `reps` replications per trial, common random numbers.
 * (a) fewest slots (1..max_slots) that meet the SLO at `rate`: *slots, or
 *     -1 when even max_slots does not. Assumes more slots never hurt.
 * (b) highest open-loop rate that meets the SLO with m->slots slots
 *     (bisection to 0.5%): *rate, 0 when no rate does. */
int sb_capacity_min_slots(const sb_model *m, const sb_sim_opts *o,
		      const sb_workload *w, double rate, int reps,
		      int max_slots, int *slots, sb_error *e);
/* (c) fleets: the fewest replicas per group (1..max_replicas; every group
 * of o->fleet gets that count, fleet.h sb_fleet_set_count) that meet the
 * SLO at `rate`: *replicas, or -1 when even max_replicas do not. (b) with
 * o->fleet is the highest rate the given fleet takes. */
int sb_capacity_min_replicas(const sb_model *m, const sb_sim_opts *o,
			 const sb_workload *w, double rate, int reps,
			 int max_replicas, int *replicas, sb_error *e);
int sb_capacity_max_rate(const sb_model *m, const sb_sim_opts *o,
		     const sb_workload *w, int reps, double *rate, sb_error *e);


typedef struct sb_capacity_plan {
	double rate;         /* the rate of (a): w->levels[0] */
	int max_slots;       /* (a)'s search bound */
	int min_slots;       /* (a); <= 0: none up to max_slots */
	int slots;           /* the model's slots, for (b) */
	double max_rate;     /* (b) req/s; 0: no rate meets the SLO */
	/* with parameter draws (o->uncert): the share of `draws` draws in which
	 * (a)'s and (b)'s answers meet the SLO (sb_capacity_share_meeting); NaN
	 * otherwise or without an answer */
	double conf_a, conf_b;
	int draws;
	/* fleets (o->fleet of more than one replica): (a) is the fewest
	 * replicas per group instead, (b) the highest rate of the fleet */
	int fleet;           /* 1: a fleet plan */
	int replicas;        /* the fleet's replicas, for (b) */
	int max_replicas;    /* (a)'s search bound (SB_CAPACITY_MAX_REPLICAS) */
	int min_replicas;    /* (a); <= 0: none up to max_replicas */
	int groups;          /* groups in the fleet (min_replicas is per group) */
	sb_route route;
	/* (c) with slot choices (sbsim --plan-slots): for each slot count per
	 * replica, the fewest replicas meeting the SLO at `rate` (<= 0: none
	 * up to max_replicas) and, with parameter draws, its share of draws */
	int n_choices;
	struct sb_capacity_choice {
		int slots, min_replicas;
		double conf;
	} choices[16];
} sb_capacity_plan;

#define SB_CAPACITY_MAX_REPLICAS 1024
#define SB_CAPACITY_MAX_SLOT_CHOICES 16

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
