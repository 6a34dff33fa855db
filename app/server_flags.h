/* server_flags.h — the flag rows that say which server is simulated (the
 * model file, slots, queue, batch, context; the what-ifs), shared by
 * `sbsim` and `sbsim serve`, --set validate's too (core/cli.h tables; F: an
 * sb_setup_flags *, or anything with a `what_if`). */
#ifndef SB_APP_SERVER_FLAGS_H
#define SB_APP_SERVER_FLAGS_H

#include "core/cli.h"
#include "core/model_scale.h"
#include "core/whatif.h"
#include "sim/setup.h"

/* --max-queue's value: -1 means unbounded, which its message says. */
int sb_parse_max_queue(const char *s, void *dest, const char *flag, sb_error *e);

/* The server rows: --model-file ... --kv-memory-gb. */
#define SB_SERVER_FLAG_ROWS(F) \
	SB_CLI_OPT("model-file", SB_CLI_STRINGS, &F->model_files, 0, 0, "FILE", \
		   "engine model (default: the embedded model); given more\n" \
		   "than once, a fleet: one group of --replicas per file"), \
	SB_CLI_OPT("slots", SB_CLI_LONG, &F->slots, 1, 4096, "S", "slots (overrides the model's)"), \
	{ "max-queue", 0, SB_CLI_FUNC, &F->max_queue, 0, 0, "N", \
	  "queue bound, -1 unbounded (overrides the model's)", NULL, sb_parse_max_queue }, \
	SB_CLI_OPT("batch-tokens", SB_CLI_LONG, &F->batch_tokens, -1, 1e8, "N", \
		   "tokens per step (overrides the model's)"), \
	SB_CLI_OPT("ctx-per-slot", SB_CLI_LONG, &F->ctx_per_slot, 1, 1L << 40, "T", \
		   "tokens of context per slot (overrides the model's): longer\n" \
		   "prompts are rejected or truncated (--context-overflow)"), \
	SB_CLI_OPT("context-overflow", SB_CLI_STRING, &F->context_overflow, 0, 0, \
		   "reject|truncate", "a prompt past the context: refused as llama.cpp\n" \
		   "does, or cut to about half of it as Ollama does"), \
	SB_CLI_OPT("kv-bytes-per-token", SB_CLI_DOUBLE, &F->kv_bytes_per_token, 1, 1e12, "B", \
		   "KV cache bytes per token (overrides the model's)"), \
	SB_CLI_OPT("kv-memory-gb", SB_CLI_DOUBLE, &F->kv_memory_gb, 1e-9, 1e9, "G", \
		   "slots = what fits in G GiB of KV cache at the context per\n" \
		   "slot: floor(G*2^30 / (bytes per token * T))"),

/* --set NAME=V[,...], validate's and sbsim's. */
#define SB_WHATIF_SET_ROW(F) \
	{ "set", 0, SB_CLI_FUNC, &F->what_if, 0, 0, "NAME=V[,...]", \
	  "what-if: set the model's coefficients by name (those of\n" \
	  "fit.covariance: per_prefill_token, decode_ms[4], form_decode\n" \
	  "(the decode rule's error per step beyond its table), ...),\n" \
	  "after --scale; every model, --compare too", NULL, sb_whatif_set_cli }

/* --prompt-cache, validate's and sbsim's. */
#define SB_WHATIF_PCACHE_ROW(F) \
	{ "prompt-cache", 0, SB_CLI_CHOICE, &F->what_if.prompt_cache, 0, 0, \
	  SB_WHATIF_PCACHE_CHOICES, \
	  "what-if: what the server keeps of earlier prompts: nothing,\n" \
	  "each slot its last prompt (llama.cpp, Ollama), every prefix\n" \
	  "(vLLM's prefix blocks), or a slot's last prompt and those\n" \
	  "that left a slot (llama.cpp's RAM cache) (model\n" \
	  "server.prompt_cache);\n" \
	  "--compare too (replays use the records' prefix_group)", \
	  SB_WHATIF_PCACHE_CHOICES, NULL }

/* The what-if rows: --scale, --set, --kv-cache. */
#define SB_WHATIF_FLAG_ROWS(F) \
	{ "scale", 0, SB_CLI_FUNC, &F->what_if.scale, 0, 0, "KEY=F[,...]", \
	  "what-if: the model's times x F > 0 per KEY: all (prompt\n" \
	  "and decode), prompt (overheads, prefill coefficients),\n" \
	  "prefill_token (per-token prefill only), decode (decode\n" \
	  "passes, decode_kv, per_kv_token), decode_batched (passes\n" \
	  "of batch >= 2; a table of batch 1 alone is unchanged);\n" \
	  "overlapping keys multiply. Every model, --compare too", NULL, \
	  sb_model_scale_cli }, \
	SB_WHATIF_SET_ROW(F), \
	{ "kv-cache", 0, SB_CLI_CHOICE, &F->what_if.kv_cache, 0, 0, SB_WHATIF_KV_CHOICES, \
	  "what-if: this KV-cache layout instead of the model's\n" \
	  "(server.kv_cache); --compare too", SB_WHATIF_KV_CHOICES, NULL },

#endif
