/* steps.h — the server's step speed during a measured level, read from the
 * level's own streamed tokens.
 *
 * A server that streams emits one token per decoding request per engine
 * step, so the gap between two tokens of one request is the step between
 * them. Which requests decoded across that gap (first token before it, last
 * token after it) gives the step's batch size B; a request whose first
 * token arrived inside the gap had its prompt in that step. The model's
 * cost of such a step:
 *   decode only:  decode_ms(B) + decode_kv(B) x (the B requests' contexts)
 *   one prompt:   the same + per_prefill_token x P + per_prefill_attn x
 *                 P(P-1)/2 (P: its prompt tokens), + prefill_base with a
 *                 per-slot cache (as the simulator costs a step)
 * With a per-slot cache and every decoding request's slot known (llama.cpp's
 * native API reports it), the decode part is one pass per run of
 * consecutive slots, as the simulator costs it: a pair in slots 0 and 2
 * is two passes of one (on the local target 21.6 ms a token against 28.9
 * for one pass of two), else one pass of all.
 * The decode factor is the median of measured / model over the decode-only
 * gaps; the prompt factor the median over the gaps with one prompt of
 * (measured - decode factor x decode part) / prompt part, as the simulator
 * scales the two (steps with several prompts, and steps whose prompt part
 * is smaller than their decode part, which say little of it, are left out;
 * a median at or below 0 is no reading). A request's first token may arrive
 * a few ms after another's of the same step (each stream is written by its
 * own thread): tokens within SB_STEPS_JITTER x decode_ms(1) of a gap's
 * start count as the step before it. In a fleet's level (records naming
 * their replica) a step's batch is its own server's streams; the medians
 * are over every server's gaps.
 *
 * Why: on a shared machine the server's speed moves by 5-20% within
 * minutes, and near the knee a load's queueing delay roughly doubles for
 * 8% of speed. validate's probes (speed.h) take three requests beside a
 * level; a level of 50 requests has about a thousand such gaps of its own.
 * One live level at 1.1 req/s on 2 slots (docs/model-notes.md) ran its steps
 * 7-9% slower than the closed-loop levels minutes before: the model missed
 * its TTFT p50 by -47% at calibrated speed and by -3% at the steps' speed.
 */
#ifndef SB_STEPS_H
#define SB_STEPS_H

#include "core/model.h"
#include "core/results.h"

#define SB_STEPS_JITTER 0.4 /* of decode_ms(1): tokens of one step */
#define SB_STEPS_MIN 5      /* gaps a median needs */

typedef struct sb_step_speed {
	double f_decode;  /* measured / model over decode-only gaps; NaN: too few */
	double f_prefill; /* the same over gaps with one prompt; NaN: too few */
	long n_decode, n_prefill; /* gaps behind each */
} sb_step_speed;

/* The step speed of level lv against model m: every successful request
 * with a first token and its gaps (warm-up ones too: they were the
 * server's steps as well). Returns 0, or -ENOMEM. */
int sb_step_speed_of(const sb_rlevel *lv, const sb_model *m, sb_step_speed *out);

/* The factors to scale a model by (speed.h's sb_speed_scale_model): *fp
 * the prompt factor, *fd the decode factor, each the other's when it has
 * too few gaps. Returns 1, or 0 when neither has (*fp, *fd NaN). */
int sb_step_speed_factors(const sb_step_speed *sp, double *fp, double *fd);

/* "x1.081", or "-" for NaN, into buf (at least 16 bytes); returns buf. */
const char *sb_step_factor_str(char *buf, double f);

#endif
