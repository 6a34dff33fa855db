/* slots.h — inferring a server's slot count from a closed-loop concurrency
 * sweep.
 *
 * At a level of c clients, a request spends E2E = queue wait Wq + service.
 * By Little's law the clients in service average c·(E2E - Wq)/E2E, and that
 * is the number of busy slots: below the slot count it equals c (nobody
 * waits), above it it stays at S. Wq is the measured wait when known (server
 * timings, simulated runs), else TTFT minus the TTFT the level would show
 * without any queueing (all c prompts prefilled in one batch: the largest
 * no-queue TTFT, so batching is never mistaken for queueing).
 * A level is "queued" when at least half a client waits on average; queued
 * levels estimate S, unqueued ones bound it from below (S >= c).
 *
 * A second, sharper estimator needs per-request records: the c requests a
 * closed-loop level sends at once when it starts. With c > S, S of them
 * start at once and the rest wait for a whole request, so their TTFTs split
 * into a fast group of exactly S and a slow one (a gap much wider than the
 * fast group's spread). When that first round is complete and splits, its
 * fast count is the level's estimate; when it does not split, S >= c.
 */
#ifndef SB_SLOTS_H
#define SB_SLOTS_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

typedef struct sb_slot_obs {
	double c;           /* concurrency (closed loop) */
	double ttft_ms;     /* mean (or median) TTFT at this level */
	double ttft_nq_ms;  /* predicted TTFT without queueing */
	double e2e_ms;      /* mean (or median) E2E */
	double wait_ms;     /* measured mean queue wait; NaN when unknown */
	const double *first_ttft; /* TTFTs of the level's first round (borrowed), or NULL */
	size_t n_first;     /* used only when it equals c */
} sb_slot_obs;

typedef struct sb_slot_guess {
	int slots;          /* best estimate (>= 1) */
	int lo, hi;         /* range consistent with every level; hi 0: unbounded */
	int n_queued;       /* levels that showed queueing */
	const char *confidence; /* "high", "medium", "low" or "none" (static) */
	char why[400];      /* one or two sentences for the report */
} sb_slot_guess;

/* Infers the slot count from n observations (borrowed). Observations with
 * c < 2 or missing numbers are ignored. Never fails for n == 0 (confidence
 * "none", slots 1); returns -EINVAL only for negative/NaN concurrency. When
 * est is non-NULL it receives a new JSON array with the per-level busy-slot
 * estimates. */
int sb_slots_infer(const sb_slot_obs *obs, size_t n, sb_slot_guess *out,
		   json_t **est, sb_error *e);

#endif
