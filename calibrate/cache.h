/* cache.h — the server's prompt cache, from measurements of prompts that
 * share prefixes (results whose workload has prefix_len: servebench run
 * --prefix-len N).
 *
 * Read: one-client closed-loop levels of such files, each successful
 * request with server timings (prompt_n tokens processed, cache_n reused:
 * llama.cpp reports both) in the order sent. The server reuses prefixes
 * when any request's cache_n is above 0, else its cache is off ("none").
 * Which kind: with the records' slots (llama.cpp's native API names them),
 * each reuse is on the request's own slot when that slot's last prompt
 * had its prefix, elsewhere when not (another slot's prompt or llama.cpp's
 * RAM prompt cache, --cache-ram, restored); a request whose prefix was
 * sent before but reused nothing counts against a shared cache. More
 * reuses elsewhere than such misses: "shared", else "slot" (each slot its
 * last prompt, cache_prompt); without slots, "slot". What a
 * reused token costs (step_ms.per_cached_token): each reusing request's
 * TTFT less what the fitted engine says of the rest, the overhead for the
 * prompt it sent and the prefill of the tokens it processed (at their
 * positions after the reused ones), against its reused tokens: a line
 * through 0. Its standard error adds to the line's own the error of that
 * prediction of the rest (the prefill fit's covariance, and the overhead's
 * with server timings, at the reusing requests' mean shape, over their
 * mean reused tokens): every request shares it, so it does not average
 * down. The 95% interval: Student t on the line's degrees of freedom; a
 * negative slope is clamped to 0 and keeps its spread (covariance.h, "at
 * bound"). Requests
 * that reused nothing should have nothing left over: their mean excess is
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
	long hits;                /* requests that reused part of their prompt */
	long own_slot, elsewhere; /* ... on a slot whose last prompt had their
				     prefix, or not (slots known) */
	long seen_misses;         /* reused nothing though their prefix was sent
				     before (slots known) */
	double mean_cached;       /* mean reused tokens over the hits */
	double miss_excess_ms;    /* mean TTFT left over by requests that reused
				     nothing (NaN: none) ... */
	double miss_excess_h95;   /* ... and the half-width of its 95% interval
				     (their spread and the rest's error) */
	sb_prompt_cache kind;     /* what the model takes */
	cal_coef_value per_token; /* ms per reused token (NaN interval: one hit) */
	double per_token_se;      /* NaN: not estimated */
	int clamped;              /* the slope was negative: 0 in the model */
} cal_cache;

/* Fits out from d's inputs with shared prefixes, the engine's prefill and
 * overhead terms g and the prefill fit pf (for the rest's error);
 * out->files == 0 when there are none. */
void cal_cache_fit(const cal_data *d, const cal_engine *g, const cal_prefill *pf,
		   cal_cache *out);

#endif
