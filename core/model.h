/* model.h — the calibrated engine model that sbsim simulates
 * (schema "servebench.model/1").
 *
 * An llama.cpp/Ollama-style server: `slots` parallel sequences, a FIFO queue
 * of at most `max_queue` waiting requests (beyond it: rejected), and
 * iteration-level batching. One engine step decodes one token for every slot
 * that is decoding and prefills up to `batch_tokens` prompt tokens of slots
 * still in prefill. Its duration is
 *
 *   step_ms = decode_ms(B)                       B >= 1 decoding slots
 *             (or prefill_base_ms when B == 0 and the step only prefills)
 *           + per_kv_token_ms   * (sum of the decoding slots' context lengths)
 *             (or decode_kv(B) instead of per_kv_token_ms when the model has a
 *             decode_kv table: the context cost measured per batch size)
 *           + per_prefill_token_ms * (prompt tokens in this step)
 *           + per_prefill_attn_ms  * (sum over those tokens of their position
 *                                     in their own prompt, 0-based)
 *           + prefill_per_prompt_ms * (prompts in this step beyond the first
 *                                      of each prefill pass)
 *
 * times a noise factor of mean 1 (noise_kind; cv noise_cv for a step that
 * only decodes, noise_prefill_cv for a step with prompt work). decode_ms(B) comes
 * from a table of (batch, ms) points: linear between points, below the first
 * point scaled from it; beyond the last a fitted line a + b * B: least
 * squares through the points from B = 2 on when the table has 3 or more
 * points (all of them otherwise), slope clamped at >= 0, never below the last
 * point's value (constant when there is one point). The line is computed from
 * the table entries themselves, so perturbed tables extrapolate accordingly.
 * (Why this form: docs/model-notes.md, "Beyond the measured batch sizes".)
 * Beyond the last point the value is then multiplied by
 * 1 + form_decode · u (u + 1) / 2, and held from below at the last
 * point's value (a pass of more sequences is never quicker), not above,
 * u = (B - last) / (last -
 * the point before): the form's own error, each step of the table's last
 * spacing missing by one form_decode more than the step before (what a
 * line does beyond a curve of constant curvature).
 * form_decode is 0 in a model file; only sbsim's parameter draws set it,
 * from the spread fit.covariance gives it (calibrate: how far the rule
 * missed the last measured point when that point was left out).
 * Between two table points a < B < b the line between them is the rule,
 * and form_interp its error: decode_ms(B) = d(a) + (d(b) - d(a)) * phi,
 * phi = f + form_interp * 4 f (1 - f), f = (B - a) / (b - a), phi held
 * within [0, 1] (a step time between the two measured ones: a larger
 * batch does not step faster). Also 0 in a model file, drawn by sbsim
 * (calibrate: how far the line between a point's neighbours missed it).
 *
 * The prompt's last prefill step also yields the first output token; each
 * further token costs one step. The client sees TTFT = queue wait +
 * admission delay + prefill steps + overhead, where the overhead (request
 * and response paths outside the engine: HTTP, JSON, tokenising) is
 * overhead_ms + overhead_per_token_ms * prompt tokens, scattered by
 * overhead_sd_ms.
 * admit_delay_ms: how long after a slot frees the server launches the next
 * queued request.
 * split_prob: the chance that a request reaching an idle engine in the same
 * instant as others misses their first step and is prefilled in the next
 * (llama.cpp sometimes takes up one of two requests sent together before
 * the other's task is queued; the pair then stays a step apart).
 * split_prob_crowded: the same chance when more requests arrived together
 * than there were free slots (the others wait in the queue).
 * release_ms: the end-of-request cost: after a request's last token its slot
 * stays held, and its client's response open, this long (the server's
 * end-of-request work: final message, slot release); TTFT, TPOT and E2E are
 * measured to the last token and do not include it, but a closed-loop
 * client sends its next request only after it and the slot takes no new
 * request during it. One number, or a table keyed by the server's slot count
 * (linear between entries, the end values beyond them): the guide's
 * Experiment 3 shows it growing with the slot count (docs/model-notes.md).
 * release_holds_queue: whether a request already waiting in the queue also
 * waits out release_ms. false (the default): it takes the slot for the very
 * next step, as llama.cpp's server does (a finished slot's release moves the
 * first deferred task to the front of the task queue, which is launched
 * before the next batch is built: tools/server/server-context.cpp,
 * callback_on_release), so the step after a request ends already holds the
 * next one's prompt and the other slots' decode waits for it; release_ms
 * then delays only that client's next request. true: the slot stays held
 * for everyone (the embedded Ollama model, whose 35-304 ms end-of-request
 * cost was fitted that way).
 * kv_cache: how the server lays out its KV cache, which decides how a step's
 * tokens are grouped into the passes it computes:
 *   "unified"  one cache for all slots (vLLM, llama.cpp without -np): a step
 *              is one pass, decode_ms(B) for its B decoding slots;
 *   "per-slot" one cache stream per slot (llama.cpp and Ollama with -np N,
 *              the default there): a pass holds only slots with consecutive
 *              ids, so a step costs decode_ms(n) for each run of n
 *              consecutive decoding slots, plus prefill_base_ms for each run
 *              of consecutive slots in prefill; a request takes the idle slot
 *              least recently released, ties to the highest id (llama.cpp's
 *              rule), so which ids are busy, and so a step's cost, moves as
 *              requests come and go. decode_ms(B) is then the cost of a pass
 *              of B consecutive slots.
 * ctx_per_slot: tokens of context each slot holds (0: unlimited); what the
 * server does with a request that does not fit is context_overflow
 * ("reject", llama.cpp; "truncate", Ollama; the rules: core/slotctx.h).
 * kv_bytes_per_token: KV cache bytes per token of context (0: unknown),
 * which with a memory size gives the slots that fit (sbsim --kv-memory-gb).
 * engine: "llama.cpp" (the default; also Ollama) or "vllm", a vLLM-class
 * scheduler (vLLM V1, and what carries over to SGLang and TGI:
 * docs/model-notes.md, "vLLM-class engines"): slots is max_num_seqs,
 * batch_tokens max_num_batched_tokens, and
 *  - a step's token budget holds one token per decoding sequence first, the
 *    rest goes to prompts in chunks (chunked prefill), in slot order;
 *  - paged KV: a sequence holds ceil(tokens / block_size) of the server's
 *    gpu_blocks (a waiting prompt is admitted, in FIFO order, only when its
 *    whole prompt's blocks are free); when the decoding sequences' next
 *    step needs more blocks than are free, the sequence admitted last is
 *    preempted: its blocks are freed and it goes back to the head of the
 *    queue, to recompute its prompt and the tokens it had produced in one
 *    prefill when it is admitted again (vLLM's default, recompute); no new
 *    prompt is admitted in a step that preempted;
 *  - kv_cache is "unified", no split_prob, no release_ms, no admission delay
 *    (fitted models leave them 0); prefill_base_ms is the cost of a step with
 *    prompt tokens and no decoding sequence, as base is with them.
 * A prompt longer than gpu_blocks * block_size is rejected (too long).
 * prompt_cache: what a request's prompt may find already computed, when the
 * workload's prompts share prefixes (workload prefix_len, prefix_groups;
 * measured requests carry none and are prefilled whole):
 *   "none"   (the default) nothing;
 *   "slot"   the slot's last prompt (llama.cpp's cache_prompt, Ollama): its
 *            shared prefix is reused when the request lands on a slot that
 *            last held a prompt of the same prefix group; a free slot that
 *            did is preferred when the prefix is at least a tenth of the
 *            prompt (llama.cpp's --slot-prompt-similarity 0.10);
 *   "shared" any prefix prefilled before on this server (vLLM's prefix
 *            blocks, whole blocks only; SGLang's radix cache), no capacity
 *            limit;
 *   "ram"    a slot's last prompt as "slot" (its slot chosen the same way),
 *            and the prompts that left a slot (llama.cpp's RAM prompt cache,
 *            --cache-ram, on by default): a slot taken for its similarity
 *            uses its own cache; else the slot released longest ago saves
 *            its prompt and the best saved one is restored; a prompt
 *            another slot holds now is not; no capacity limit.
 * At least one prompt token is always prefilled; the reused ones skip
 * their prefill (later tokens still attend to them) and cost
 * step_ms.per_cached_token each (those a "ram" cache restored from RAM:
 * step_ms.per_restored_token, by default the same), engine time added to
 * the step that prefills the prompt's first tokens (llama.cpp restores a
 * slot's reused
 * state in its server loop: two prompts reusing 384 tokens each, sent
 * together, took twice the time one did, so the restores add up rather
 * than overlap).
 * (What was measured behind these parameters: docs/model-notes.md.)
 *
 * JSON:
 *  { "schema": "servebench.model/1", "name": "...",
 *    "server":  { "slots": 4, "max_queue": -1, "batch_tokens": 2048,
 *                 "kv_cache": "unified",     (optional, default "unified")
 *                 "ctx_per_slot": 4096,      (optional, default 0: unlimited)
 *                 "kv_bytes_per_token": 36864, (optional, default 0: unknown)
 *                 "context_overflow": "reject",  (or "truncate"; default
 *                                             "reject")
 *                 "engine": "vllm", "block_size": 16, "gpu_blocks": 2588,
 *                                (optional; default "llama.cpp", block_size 16,
 *                                 gpu_blocks 0: unlimited)
 *                 "prompt_cache": "slot" },  (optional, default "none")
 *    "overhead_ms": 20.0, "overhead_sd_ms": 0.5,
 *    "overhead_per_prompt_token_ms": 0.0,        (optional, default 0)
 *    "step_ms": { "decode_ms": { "1": 4.9, "4": 9.4, "8": 16.0 },
 *                 "decode_kv": { "1": 0.005, "4": 0.01 },   (optional)
 *                 "per_kv_token": 0.0, "per_prefill_token": 0.095,
 *                 "per_prefill_attn": 0.0, "prefill_base": 0.0,
 *                 "prefill_per_prompt": 0.0,         (optional, default 0)
 *                 "per_cached_token": 0.0,           (optional, default 0)
 *                 "per_restored_token": 0.0 },       (optional, default per_cached_token)
 *    "scheduler": { "admit_delay_ms": 0.0, "split_prob": 0.0,
 *                   "split_prob_crowded": 0.0,
 *                   "release_ms": { "4": 35, "8": 304 },  (optional; or a number)
 *                   "release_holds_queue": false },       (optional, default false)
 *                  (split_prob optional, default 0; split_prob_crowded
 *                   optional, default split_prob)
 *    "noise": { "kind": "none" | "lognormal" | "gamma", "cv": 0.0,
 *               "prefill_cv": 0.0 },      (prefill_cv: default cv)
 *    "fit": { ...provenance, R^2, residuals, confidence intervals... } }
 * Instead of "decode_ms", "base" and "per_seq" give decode_ms(B) = base +
 * per_seq * B. max_queue < 0 means unbounded; batch_tokens <= 0 unbounded.
 */
#ifndef SB_MODEL_H
#define SB_MODEL_H

#include <jansson.h>

#include "error.h"

#define SB_MODEL_MAX_DECODE 64

/* Requests reaching an idle server within this many seconds of the first
 * share its first step (but for split_prob): llama.cpp takes up tasks
 * queued while it launches the first. An engine whose round of requests
 * ended together, nothing left decoding, starts as from idle: the local
 * llama.cpp target's closed loops at S + 1 clients ran in lockstep rounds,
 * the queued request and the clients just released (sent 1-4 ms after the
 * round's last token) prefilled in one step (validate-live-slots,
 * 2026-12-05; docs/model-notes.md, "Rounds"). Until then 1 ms. */
#define SB_MODEL_JOIN_WINDOW_S 0.005

typedef enum sb_noise_kind {
	SB_NOISE_NONE = 0,
	SB_NOISE_LOGNORMAL,
	SB_NOISE_GAMMA,
} sb_noise_kind;

typedef enum sb_kv_cache {
	SB_KV_UNIFIED = 0,
	SB_KV_PER_SLOT,
} sb_kv_cache;

typedef enum sb_ctx_overflow {
	SB_CTX_REJECT = 0,
	SB_CTX_TRUNCATE,
} sb_ctx_overflow;

/* What the server keeps of earlier prompts (server.prompt_cache). */
typedef enum sb_prompt_cache {
	SB_PCACHE_NONE = 0, /* "none": every prompt is prefilled whole */
	SB_PCACHE_SLOT,     /* "slot": each slot its last prompt (llama.cpp, Ollama) */
	SB_PCACHE_SHARED,   /* "shared": every prefix prefilled before (vLLM's
			       prefix blocks, SGLang's radix cache) */
	SB_PCACHE_RAM,      /* "ram": each slot its last prompt, and the prompts
			       that left a slot (llama.cpp's RAM prompt cache) */
} sb_prompt_cache;

/* Which server's scheduler the engine follows (server.engine). */
typedef enum sb_engine {
	SB_ENGINE_LLAMACPP = 0, /* "llama.cpp": slots, a FIFO queue (also Ollama) */
	SB_ENGINE_VLLM,         /* "vllm": continuous batching over paged KV blocks */
} sb_engine;

typedef struct sb_decode_point {
	int batch;
	double ms;
} sb_decode_point;

typedef struct sb_model {
	char name[128];
	int slots;
	long max_queue;
	long batch_tokens;
	sb_kv_cache kv_cache;
	long ctx_per_slot;            /* tokens; 0: unlimited */
	double kv_bytes_per_token;    /* 0: unknown */
	sb_ctx_overflow context_overflow;
	sb_engine engine;
	long block_size;              /* vllm: tokens per KV block */
	long gpu_blocks;              /* vllm: KV blocks of the server; 0: unlimited */
	sb_prompt_cache prompt_cache; /* what a prompt may find already computed */
	double per_cached_token_ms;   /* what each reused prompt token costs */
	double per_restored_token_ms; /* ... when a "ram" cache restored it */
	double overhead_ms, overhead_sd_ms, overhead_per_token_ms;
	sb_decode_point decode[SB_MODEL_MAX_DECODE]; /* batch ascending */
	int n_decode;
	sb_decode_point decode_kv[SB_MODEL_MAX_DECODE]; /* ms per context token of a
							   pass of `batch`; batch ascending */
	int n_decode_kv; /* 0: per_kv_token_ms for every batch */
	double per_kv_token_ms;
	double per_prefill_token_ms;
	double per_prefill_attn_ms;
	double prefill_base_ms;
	double prefill_per_prompt_ms; /* each prompt beyond the first in a prefill
					 pass (prompts prefilled together) */
	double admit_delay_ms;
	double form_decode; /* relative error of decode_ms beyond the table per
			       step of its last spacing (above; 0 but in draws) */
	double form_interp; /* decode_ms between two table points off the
			       straight line, as a share of their gap (above;
			       0 but in draws) */
	sb_decode_point release[SB_MODEL_MAX_DECODE]; /* release_ms per slot count
							 (batch = slots); ascending */
	int n_release; /* 0: no end-of-request cost */
	int release_holds_queue; /* 1: a queued request also waits out release_ms */
	double split_prob; /* 0..1 */
	double split_prob_crowded; /* 0..1 */
	sb_noise_kind noise_kind;
	double noise_cv;         /* decode-only steps */
	double noise_prefill_cv; /* steps with prompt tokens */
	json_t *fit; /* owned provenance; may be NULL */
} sb_model;

/* Zeroes m and sets harmless defaults (1 slot, unbounded queue). */
void sb_model_init(sb_model *m);
/* Releases m->fit; m may be NULL. */
void sb_model_fini(sb_model *m);
/* Deep copy (fit gets a new reference). */
void sb_model_copy(sb_model *dst, const sb_model *src);
/* Parses JSON (borrowed). Returns 0 or -EINVAL naming the bad field. */
int sb_model_from_json(const json_t *j, sb_model *m, sb_error *e);
/* Loads a model file ("path:line:col:" on JSON syntax errors). */
int sb_model_load(const char *path, sb_model *m, sb_error *e);
/* New JSON object (the fit object is included by reference). */
json_t *sb_model_to_json(const sb_model *m);
/* The model embedded in the binary (data/default-model.json). */
int sb_model_default(sb_model *m, sb_error *e);
/* The embedded default model's JSON text. Borrowed, NUL-terminated. */
const char *sb_model_default_text(void);
/* decode_ms(B) for B >= 1 as described above. */
double sb_model_decode_ms(const sb_model *m, int batch);
/* The cost of a step with prompt tokens and no decoding sequence before
 * its per-token terms: prefill_base_ms; for a vllm engine the intercept of
 * its decode line (base), >= 0. */
double sb_model_step_base_ms(const sb_model *m);
/* release_ms for a server of `slots` slots (0 when the model has none). */
double sb_model_release_ms(const sb_model *m, int slots);
/* The largest batch size in the decode table (0 when it is empty): passes
 * beyond it are extrapolated. */
int sb_model_decode_last(const sb_model *m);
/* What each token of context costs in a decode pass of B sequences: the
 * decode_kv table (linear between points, the end values beyond them: a
 * per-token cost that does not grow with the batch; docs/model-notes.md), or
 * per_kv_token_ms when the model has none. */
double sb_model_decode_kv(const sb_model *m, int batch);
/* Checks the invariants (slots >= 1, coefficients finite and >= 0, table
 * ascending and positive). */
int sb_model_validate(const sb_model *m, sb_error *e);
const char *sb_noise_name(sb_noise_kind k);
/* "none" / "slot" / "shared". */
const char *sb_prompt_cache_name(sb_prompt_cache k);
/* "unified" / "per-slot". */
const char *sb_kv_cache_name(sb_kv_cache k);
/* "llama.cpp" / "vllm". */
const char *sb_engine_name(sb_engine k);
/* "reject" / "truncate". */
const char *sb_ctx_overflow_name(sb_ctx_overflow o);
/* "reject" / "truncate" into *o. Returns 0, or -EINVAL naming s. */
int sb_ctx_overflow_parse(const char *s, sb_ctx_overflow *o, const char *what, sb_error *e);

#endif
