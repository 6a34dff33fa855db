/* cache.h — the server's prompt cache, from measurements of prompts that
 * share prefixes (results whose workload has prefix_len: servebench run
 * --prefix-len N).
 *
 * Read: one-client closed-loop levels of such files, each successful
 * request with server timings (prompt_n tokens processed, cache_n reused:
 * llama.cpp reports both) in the order sent. A request reused its prefix
 * when cache_n is at least half the prefix (a chat template's first tokens,
 * which every prompt shares, are not a prefix); when none did, the cache
 * is off ("none").
 * Which kind: one client on S slots (target.slots, else the calibration's
 * count) that each keep their
 * last prompt holds the S most recently sent prefix groups (llama.cpp
 * gives a prompt the slot holding its prefix, else the one released
 * longest ago), so a reuse by a group sent before but beyond those S needs
 * a cache beyond the slots (llama.cpp's RAM prompt cache, --cache-ram, on
 * by default: a prompt that left its slot restored), and such a group
 * reusing nothing says there is none. More reuses beyond the S than misses
 * there: "ram", else "slot" (also when S is unknown). One client cannot
 * tell "ram" from "shared" (a prompt another slot holds now, restorable in
 * "shared" only, is on a free slot it takes); llama.cpp's is "ram". What a
 * reused token costs (step_ms.per_cached_token): each reusing request's
 * TTFT less what the fitted engine says of the rest, the overhead for the
 * prompt it sent and the prefill of the tokens it processed (at their
 * positions after the reused ones), against its reused tokens: a line
 * through 0. Its standard error adds to the line's own the error of that
 * prediction of the rest (the prefill fit's covariance, and the overhead's
 * with server timings, at the reusing requests' mean shape, over their
 * mean reused tokens): every request shares it, so it does not average
 * down. A "ram" cache with reuses both among the slots' last prompts and
 * beyond them (2 or more each) fits a line for each, and keeps them apart
 * (per_cached_token from the first, per_restored_token from the second)
 * when they differ beyond their errors (|t| above Student t's 95% on the
 * smaller one's degrees of freedom): a restore copies state from RAM,
 * which a slot's own prompt does not need. On the local llama-server they
 * did not differ (five calibrations of 2026-12-06/07: a slot's own
 * 0.06-0.23 ms per token, restores 0.03-0.17 from 2-3 each), so one line
 * serves both there.
 * The 95% interval: Student t on the line's degrees of freedom; a
 * negative slope is clamped to 0 and keeps its spread (covariance.h, "at
 * bound"). Requests
 * that did not reuse their prefix should have nothing left over: their
 * mean excess is
 * reported beside it with its 95% interval, a check of the rest of the
 * model.
 * Files with workload prefix_len are read here only (collect.c leaves them
 * to this step). Layer 4 of calibrate/ (after prefill.h: it needs the
 * overhead and prefill terms).
 */
#ifndef SB_CAL_CACHE_H
#define SB_CAL_CACHE_H

#include "calibrate/data.h"
#include "calibrate/engine.h"
#include "calibrate/prefill.h"
#include "core/model.h"

typedef struct cal_cache {
	int files;                /* inputs with shared prefixes */
	long requests;            /* their one-client requests with server timings */
	long untimed;             /* ... and those without (not usable) */
	long hits;                /* requests that reused their prefix (at least
				     half of it: not just a chat template's first
				     tokens, which every prompt shares) */
	long within_slots;        /* ... by a group among the S most recent */
	long beyond_slots;        /* ... by a group sent before, not among them */
	long missed_beyond;       /* reused nothing: sent before, not among them */
	double mean_cached;       /* mean reused tokens over the hits */
	double miss_excess_ms;    /* mean TTFT left over by requests that reused
				     nothing (NaN: none) ... */
	double miss_excess_h95;   /* ... and the half-width of its 95% interval
				     (their spread and the rest's error) */
	sb_prompt_cache kind;     /* what the model takes */
	cal_coef_value per_token; /* ms per reused token (NaN interval: one hit) */
	double per_token_se;      /* NaN: not estimated */
	int clamped;              /* the slope was negative: 0 in the model */
	cal_coef_value per_restored; /* "ram" with reuses both ways that differ:
					ms per token restored (the reuses beyond
					the slots), per_token then from those
					among them; NaN: one line for both */
	double per_restored_se;
	int restored_clamped;
	double restored_t;        /* the two lines' difference over its error
				     (NaN: not both with 2 or more hits) */
} cal_cache;

/* Fits out from d's inputs with shared prefixes, the engine's prefill and
 * overhead terms g, the prefill fit pf (for the rest's error) and the
 * calibration's slot count (S where a file's target names none);
 * out->files == 0 when there are none. */
void cal_cache_fit(const cal_data *d, const cal_engine *g, const cal_prefill *pf, int slots,
		   cal_cache *out);

#endif
