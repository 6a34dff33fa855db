/* slotprobe.h — what a server says about its slots' context and its KV
 * cache, read once before measuring (docs/context.md says where each server
 * keeps it):
 *   llama.cpp  GET /props  default_generation_settings.n_ctx (a slot's
 *              context) and total_slots; GET /slots  n_ctx of every slot
 *              (the smallest is taken). No field gives the KV size.
 *   Ollama     GET /api/ps  context_length of the loaded model (num_ctx, per
 *              slot); POST /api/show  model_info (GGUF metadata), from which
 *              KV bytes per token = 2 x block_count x head_count_kv x head
 *              dimension x 2 (f16 cache), the head dimension being
 *              attention.key_length (and value_length for V) or else
 *              embedding_length / attention.head_count.
 * Absent or unreadable fields leave the values unknown; nothing here fails a
 * measurement.
 */
#ifndef SB_SLOTPROBE_H
#define SB_SLOTPROBE_H

#include <jansson.h>

#include "probe.h"

/* What was read: each -1 / 0 when unknown. */
typedef struct sb_slot_context {
	long ctx_per_slot;         /* tokens; -1 unknown */
	double kv_bytes_per_token; /* 0 unknown */
	const char *overflow;      /* "reject" (llama.cpp), "truncate" (Ollama), NULL */
} sb_slot_context;

/* llama.cpp: the slot context from /props and /slots replies (either may be
 * NULL): the smallest n_ctx of /slots, else /props'
 * default_generation_settings.n_ctx; -1 when neither says. */
long sb_slotprobe_llama_ctx(const json_t *props, const json_t *slots);

/* Ollama: context_length of model (NULL: the first) in an /api/ps reply; -1
 * when absent. */
long sb_slotprobe_ollama_ctx(const json_t *ps, const char *model);

/* Ollama: KV bytes per token (f16 cache) from an /api/show reply's
 * model_info; 0 when a needed key is missing. */
double sb_slotprobe_ollama_kv_bytes(const json_t *show);

/* Asks the server at root (kind "llama.cpp" or "ollama", as sb_probe_detect
 * found; model the name requests use) and fills *out. Never fails: what
 * cannot be read stays unknown. */
void sb_slotprobe_read(const sb_probe_opts *o, const char *root, const char *kind,
		       const char *model, sb_slot_context *out);

#endif
