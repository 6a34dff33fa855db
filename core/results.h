/* results.h — results files (schema "servebench.results/1"), the one format
 * measured and simulated runs share: writing one, and reading one back into
 * typed form (sb_results) so that no tool reads the JSON itself. Every field
 * and its unit: docs/formats.md.
 */
#ifndef SB_RESULTS_H
#define SB_RESULTS_H

#include <jansson.h>

#include "error.h"
#include "level.h"
#include "workload.h"

#define SB_RESULTS_SCHEMA "servebench.results/1"

/* What the server itself reported about one request (a record's "server"
 * object, written by measure/api.c from llama.cpp's "timings"). Every field
 * is NaN when the record has no such number. */
typedef struct sb_server_timing {
	double prompt_n;     /* prompt tokens the server processed (prefix-cache misses) */
	double prompt_ms;    /* the server's time for them (its prefill), ms */
	double predicted_n;  /* output tokens the server generated */
	double predicted_ms; /* the server's time for them (its decode), ms */
	double cache_n;      /* prompt tokens taken from the prefix cache */
} sb_server_timing;

/* A level read back from a file: its summary and its request records. The
 * records' strings and itl arrays point into storage owned by sb_results. */
/* The server's own count of its requests over a level (a measured level's
 * "server_view", measure/serverview.h); samples 0 when absent. */
typedef struct sb_server_view {
	long samples;
	double running, waiting;   /* means */
} sb_server_view;

typedef struct sb_rlevel {
	sb_level sum;
	sb_server_view view;
	sb_reqrec *reqs;
	sb_server_timing *timing;  /* per request: its numbers (all NaN: none) */
	size_t n_reqs;
	double *itl_pool;
	long *block_pool;          /* the requests' hash_ids (sb_reqrec.blocks) */
} sb_rlevel;

/* The document's "target" as far as tools read it. Strings point into the
 * document (owned by sb_results). */
typedef struct sb_target_info {
	const char *model;  /* target.model; for a simulated run, whose target.model
			     * is the model object itself, that model's name; NULL: none */
	long slots;         /* target.slots (an integer), else -1 */
	long batch_tokens;  /* target.batch_tokens (an integer), else -1 */
	/* measured runs (NULL / NaN when absent) */
	const char *url, *endpoint, *api, *server;
	const char *sizing_method;      /* target.prompt_sizing.method */
	double tokens_per_word;         /* target.prompt_sizing.tokens_per_word */
	double overhead_tokens;         /* target.prompt_sizing.overhead_tokens */
	long pin_stride;                /* target.pin_stride: requests pinned to slots
					 * 0, k, 2k... (records' "slot"); 0 when absent */
	/* a fleet run: target.replicas, one per URL in the records' "replica"
	 * order; n_replicas 0 when absent. replica_slots[i]: its "slots", -1
	 * unknown (malloc'd, freed by sb_results_fini). */
	size_t n_replicas;
	long *replica_slots;
	long ctx_per_slot;              /* target.ctx_per_slot: tokens of context per
					 * slot the server reported; -1 when absent */
	double kv_bytes_per_token;      /* target.kv_bytes_per_token; NaN when absent */
	const char *context_overflow;   /* target.context_overflow: "reject" or
					 * "truncate"; NULL when absent */
	int cache_prompt;               /* target.cache_prompt: 1 the server was let
					 * reuse its prompt cache, 0 asked not to
					 * (--no-cache-prompt), -1 absent */
} sb_target_info;

typedef struct sb_results {
	char source[16];
	sb_target_info target; /* typed view of "target" */
	sb_workload workload; /* defaults where the file has none */
	int has_workload;
	sb_rlevel *levels;
	size_t n_levels;
	json_t *root; /* owned */
} sb_results;

/* New results object with empty "levels". target is stolen (NULL -> {}),
 * w is copied. */
json_t *sb_results_new(const char *source, json_t *target,
		       const sb_workload *w);
/* Appends a level: its summary plus "requests" (stolen; NULL -> omitted). */
int sb_results_add_level(json_t *res, const sb_level *lv, json_t *requests);
/* Loads and checks a results file, or another tool's per-request file
 * converted by sb_import_load (core/import.h). Returns 0 or
 * -EINVAL/-ENOENT/-ENOMEM. */
int sb_results_load(const char *path, sb_results *out, sb_error *e);
/* Parses an already loaded document (root is borrowed; a reference is taken). */
int sb_results_from_json(json_t *root, sb_results *out, const char *where,
			 sb_error *e);
void sb_results_fini(sb_results *r);
/* Failed requests over every level (the levels' requests_failed). */
long sb_results_failed_count(const sb_results *r);

#endif
