/* slotctx.h — a slot's context: what a server does with a request that does
 * not fit in it, and how many slots of a given context fit in KV memory.
 *
 * A server gives each slot a context of ctx tokens (model.server.ctx_per_slot;
 * 0: unlimited). What happens to a request of P prompt and N output tokens
 * (model.server.context_overflow; where each rule comes from: docs/context.md):
 *   reject   (llama.cpp, context shift off, its default): a prompt of ctx
 *            tokens or more is refused (HTTP 400 exceed_context_size_error);
 *            a prompt that fits generates at most ctx - P tokens (the server
 *            stops with finish_reason "length" once the cache holds ctx - 1
 *            tokens; the first token always comes, from the prompt's pass);
 *   truncate (Ollama, which starts llama-server with --context-shift): a
 *            prompt of more than ctx - 1 tokens keeps its first
 *            SB_CTX_NUM_KEEP tokens and its last ones, ctx - (ctx - num_keep)/2
 *            tokens in all (about half the context); output is not capped
 *            (the context shifts).
 *
 * KV memory: a slot of ctx tokens holds ctx * kv_bytes_per_token bytes of KV
 * cache (per-slot layout: each slot its own stream), so G GiB hold
 * floor(G * 2^30 / (kv_bytes_per_token * ctx)) slots.
 */
#ifndef SB_SLOTCTX_H
#define SB_SLOTCTX_H

#include "error.h"
#include "model.h"

/* Ollama's default num_keep: tokens kept from the start of a truncated prompt. */
#define SB_CTX_NUM_KEEP 4

/* What sb_slotctx_fit did to a request. */
typedef enum sb_ctx_outcome {
	SB_CTX_FITS = 0,      /* unchanged */
	SB_CTX_OUTPUT_CUT,    /* prompt fits, output stopped at the context */
	SB_CTX_TOO_LONG,      /* rejected: the prompt does not fit */
	SB_CTX_TRUNCATED,     /* prompt shortened to fit */
} sb_ctx_outcome;

/* The length of a prompt truncated to a slot of ctx tokens (ctx >= 1). */
long sb_slotctx_truncated_len(long ctx);

/* Applies the overflow rule of a slot of ctx tokens (<= 0: unlimited) to a
 * request of *prompt and *output tokens (both >= 1), changing them as the
 * server would. Returns the outcome; on SB_CTX_TOO_LONG both are unchanged. */
sb_ctx_outcome sb_slotctx_fit(long ctx, sb_ctx_overflow ov, long *prompt, long *output);

/* The slots that fit in kv_gib GiB of KV cache at ctx tokens per slot and
 * bytes_per_token bytes per token: *slots >= 1. Returns 0, or -EINVAL naming
 * the bad value (a value <= 0 or not finite, bytes/token unknown, or not even
 * one slot fits). */
int sb_slotctx_slots_for_memory(double kv_gib, long ctx, double bytes_per_token, long *slots,
				sb_error *e);

/* KV bytes per token from a model's shape: 2 (K and V) x layers x KV heads x
 * head dimension x bytes per element (2 for f16). Each argument > 0, else 0. */
double sb_slotctx_kv_bytes(long layers, long kv_heads, long head_dim, double elem_bytes);

#endif
