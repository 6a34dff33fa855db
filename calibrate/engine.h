/* engine.h — the engine coefficients as the fitting steps find them, and
 * the predictions later steps make from them. Layer 2 of calibrate/ (after
 * data.h). Each step fills its fields once, in this order: decode1.c the
 * decode_1 and kv terms, prefill.c the prefill and overhead terms; steps
 * after those only read them. Not installed; used only inside calibrate/. */
#ifndef SB_CAL_ENGINE_H
#define SB_CAL_ENGINE_H

#include "calibrate/data.h"

typedef struct cal_engine {
	long batch_tokens;          /* prompt tokens per engine step (cal_data's) */
	/* decode1.c: TPOT at concurrency 1 = decode_1_ms + kv_ms_per_token * context */
	double decode_1_ms;         /* one decode step of one sequence */
	double decode_1_se;         /* its standard error (NaN: none) */
	double kv_ms_per_token;     /* per token of context per sequence in a step (0: not identified) */
	/* prefill.c: a prefill step costs prefill_base_ms + prefill_ms_per_token * P
	 * + prefill_attn_ms * P(P-1)/2; the client sees overhead_ms +
	 * overhead_ms_per_token * (prompt tokens sent) on top */
	double prefill_base_ms;     /* base cost of a step with prompt work */
	double prefill_ms_per_token;
	double prefill_attn_ms;     /* per P(P-1)/2 (0: term dropped) */
	double overhead_ms;         /* client-side time outside the engine */
	double overhead_se;         /* its standard error (NaN: none) */
	double overhead_ms_per_token; /* its growth with the prompt sent (0: none) */
	/* groups.c: each prompt beyond the first in a prefill pass (0: none
	 * measured) */
	double prefill_per_prompt_ms;
} cal_engine;

/* Prefill steps (batches of batch_tokens) for P prompt tokens, at least 1. */
long cal_engine_prefill_steps(const cal_engine *g, double P);
/* Prompt work added to a step that also decodes: the per-token and
 * attention prefill terms for P tokens (no base), ms. */
double cal_engine_prefill_work_ms(const cal_engine *g, double P);
/* A prefill of P tokens alone: base per step plus the prompt work, ms. */
double cal_engine_prefill_ms(const cal_engine *g, double P);
/* Client-side overhead of a request with Pin prompt tokens sent, ms. */
double cal_engine_overhead_ms(const cal_engine *g, double Pin);
/* TTFT with no queueing when c prompts of P tokens start in one wave, ms. */
double cal_engine_ttft_wave(const cal_engine *g, double c, double P);

#endif
