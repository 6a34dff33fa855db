/* capacity_check.h — a capacity plan checked live (`servebench validate --plan`).
 *
 * The model (its slots set to the server's) plans the highest open-loop rate
 * that meets the SLO (sim/capacity.h's sb_capacity_max_rate, the code of
 * `sbsim --plan`, with the validation's lengths, requests per level, seed and
 * replications); the server is then measured at that rate and at
 * SB_CAPACITY_CHECK_ABOVE times it, and at each the measured SLO percentile of
 * TTFT and/or TPOT is judged against the SLO with its order-statistic
 * interval (quantile_ci.h, 95%):
 *   held       the interval's upper bound <= the SLO
 *   broke      its lower bound > the SLO
 *   undecided  the interval holds the SLO (more requests would decide)
 * A rate held when every SLO'd quantity held, broke when one broke.
 * The plan:
 *   confirmed     the planned rate did not break and the higher one broke
 *   wrong         the planned rate broke with its interval above every
 *                 replication's value (the model plans too high), or the
 *                 higher one held with its interval below every
 *                 replication's value (too low by more than the step)
 *   inconclusive  otherwise: the higher rate undecided or not measured, or
 *                 a rate broke or held against the plan within that spread
 * The planned rate is, by construction, where the predicted percentile's
 * mean over runs reaches the SLO: an exact model's one-minute run there
 * breaks the SLO about half the time. Near the knee one run's percentile
 * varies by about the SLO itself (the queue carries from request to
 * request, so the order-statistic interval, which takes requests as
 * independent, is too narrow for it). The replications are runs of the same
 * size: an exact model's run lands beyond all R of them with probability
 * 2/(R+1) (10% at R = 20), and its whole interval beyond them more rarely
 * still; their spread is skewed near the knee, which their range keeps.
 * Failed requests count as +infinity (they met no SLO); warm-up requests
 * are left out.
 */
#ifndef SB_VALIDATE_CAPACITY_CHECK_H
#define SB_VALIDATE_CAPACITY_CHECK_H

#include <jansson.h>
#include <stdio.h>

#include "core/error.h"
#include "core/model.h"
#include "core/results.h"
#include "core/workload.h"
#include "validate/quantile_ci.h"
#include "validate/steps.h"

#define SB_CAPACITY_CHECK_ABOVE 1.15
#define SB_CAPACITY_CHECK_CONF 0.95

typedef enum sb_slo_verdict {
	SB_SLO_UNDECIDED = 0,
	SB_SLO_HELD,
	SB_SLO_BROKE,
} sb_slo_verdict;

typedef enum sb_capacity_outcome {
	SB_CAPACITY_INCONCLUSIVE = 0,
	SB_CAPACITY_CONFIRMED,
	SB_CAPACITY_WRONG,
} sb_capacity_outcome;

enum { SB_CAPACITY_TTFT = 0, SB_CAPACITY_TPOT = 1 };

/* One of the two rates. Index q: SB_CAPACITY_TTFT / SB_CAPACITY_TPOT. */
typedef struct sb_capacity_point {
	double rate;               /* req/s offered */
	double pred[2], pred_half[2]; /* predicted SLO percentile (mean over the
					 replications) and its 95% half-width;
					 NaN: no SLO on q */
	double run_lo[2], run_hi[2]; /* the lowest and highest replication's value */
	sb_quantile_ci meas[2];    /* measured; n == 0: no SLO on q or not measured */
	sb_step_speed speed;       /* the server's steps while measured (steps.h) */
	double pred_speed[2], pred_speed_half[2]; /* the same prediction with the
					 model's times scaled by that speed; NaN:
					 not measured or no speed */
	double speed_lo[2], speed_hi[2]; /* and its replications' range */
	sb_slo_verdict verdict_q[2];
	sb_slo_verdict verdict;
	int measured;
} sb_capacity_point;

typedef struct sb_capacity_check {
	sb_slo slo;                /* percentile <= 0 read as 99 */
	int slots;                 /* the slots planned for */
	int replications;
	double max_rate;           /* the plan, req/s */
	sb_capacity_point at[2];       /* the planned rate and SB_CAPACITY_CHECK_ABOVE x it */
	sb_capacity_outcome outcome;
} sb_capacity_check;

/* Plans: p->max_rate for model m (its slots as they are; borrowed) and
 * workload w (borrowed: lengths, requests, seed and the SLO, at least one
 * of whose ttft_ms/tpot_ms is set), and the predicted percentiles at both
 * rates. Returns 0, or -EINVAL with a message when w has no SLO or no rate
 * meets it, or another negative errno from the simulator. Cost: the
 * planning's tens of simulated levels of `reps` replications. */
int sb_capacity_check_predict(sb_capacity_check *p, const sb_model *m, const sb_workload *w, int reps,
		       sb_error *e);

/* Judges the measured open-loop levels of meas (borrowed; its first two
 * levels are the two rates, in order) against the SLO and sets the
 * verdicts and the outcome. A level missing leaves its rate unmeasured.
 * Returns 0, or -EINVAL when a level's rate is not the one planned, or
 * -ENOMEM. */
int sb_capacity_check_judge(sb_capacity_check *p, const sb_results *meas, sb_error *e);

/* The prediction at the server's speed: for each measured rate, the step
 * speed of its level (steps[i] of n, the measured levels' in order, as
 * sb_step_speed_of read them against m; copied), and the SLO percentiles
 * predicted by m with its prefill-side times scaled by the prefill factor
 * and its decode-side times by the decode factor (speed.h's scaling; a
 * factor without gaps behind it takes the other's). It decides nothing:
 * a plan made on a machine whose speed then moved is judged by the rule
 * above; this says whether the model was right about the load at the
 * speed the server ran. w, m as for sb_capacity_check_predict (borrowed).
 * Returns 0 or a negative errno with e set. */
int sb_capacity_check_at_speed(sb_capacity_check *p, const sb_model *m, const sb_workload *w,
			   const sb_step_speed *steps, size_t n, sb_error *e);

/* "held" / "broke" / "undecided"; "confirmed" / "wrong" / "inconclusive". */
const char *sb_slo_verdict_name(sb_slo_verdict v);
const char *sb_capacity_outcome_name(sb_capacity_outcome o);

/* The plan, both rates (predicted and measured percentile with its
 * interval, verdicts), the rule and the outcome. */
void sb_capacity_check_report(FILE *f, const sb_capacity_check *p);

/* {"slo", "slots", "replications", "max_rate_req_s", "above_factor",
 *  "rule", "rates": [{"rate_req_s", "expected", "measured", "verdict",
 *  "ttft"/"tpot": {"predicted_ms", "predicted_half_ms", "measured_ms",
 *  "runs_lo_ms", "runs_hi_ms" (the replications' range), "ci_lo_ms",
 *  "ci_hi_ms" (null: open), "ci_coverage", "n", "verdict",
 *  "predicted_at_speed_ms", "predicted_at_speed_half_ms",
 *  "at_speed_runs_lo_ms", "at_speed_runs_hi_ms"}, "speed":
 *  {"decode", "prefill", "decode_gaps", "prefill_gaps"}}],
 *  "outcome"}; NULL on allocation failure. */
json_t *sb_capacity_check_to_json(const sb_capacity_check *p);

#endif
