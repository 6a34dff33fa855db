/* run.h — `servebench run` as a library: measure a live server level by
 * level and return a results document (schema servebench.results/1,
 * "source": "measured"). Used by the run command; calibrate and validate
 * measure many workloads through one handle (bench.h), which does the same.
 *
 * What a run does:
 *  1. Reachability and identification (GET /props, /api/version): fails fast
 *     with -ECONNREFUSED when nothing answers.
 *  2. Prompt sizing: tokens per word from the server's /tokenize when it has
 *     one, the template overhead (and, without /tokenize, tokens per word)
 *     from one or two probe requests of max_tokens 1. If probes fail, a
 *     default of 1.3 tokens per word is used; target.prompt_sizing says which.
 *  3. Per level: `warmup` unmeasured requests one at a time, then the
 *     measured phase (closed loop: `level` workers; open loop: arrivals at
 *     rate `level` drawn from the workload's arrival process).
 *
 * Per-request record (core/level.h sb_reqrec_to_json) plus: "input_len" and
 * "output_len" (what was asked for), "output_tokens_source" ("server" or
 * "chunks" when the server gave no count), "slot" (the llama.cpp slot that
 * served it: the "id_slot" the server reported (llama-completion), else
 * the one it was pinned to (pin_stride); absent when neither is known).
 * Its "server" object carries the
 * server's own view when it gave one, normalised to llama.cpp's names
 * (prompt_n, prompt_ms, predicted_n, predicted_ms, cache_n) plus the raw
 * "timings"/"usage" objects or Ollama's prompt_eval_count/duration,
 * eval_count/duration (ns).
 * wait_ms = ttft_ms - server prompt_ms when the server reports prompt_ms.
 *
 * Top level extras: "interrupted" (bool), "target" (url, endpoint, api,
 * model, server kind, slots when known, prompt_sizing, options).
 * A trace (sb_run_set_trace) adds "trace": file, format, requests, speedup,
 * left_out (sb_trace.skipped), as sbsim --trace writes it, and window
 * ([from, to] on the trace's clock, to null: to the end; null: none),
 * limit (when given), clamped, span_s; its workload leaves out
 * input_len, output_len, arrival and arrival_cv (each record says what it
 * asked for).
 * A fleet (n_urls >= 2) adds target.replicas and route, each record's
 * "replica" and "replica_inflight", each level's "replicas" (fleet.h).
 * The API key is never written anywhere.
 */
#ifndef SB_RUN_H
#define SB_RUN_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>

#include "api.h"
#include "core/error.h"
#include "core/route.h"
#include "core/trace.h"
#include "core/workload.h"

/* Progress of a run, for a progress line. */
typedef struct sb_run_progress {
	int level_index, n_levels;
	double level;
	sb_mode mode;
	int warmup;        /* 1 during the warm-up requests */
	long sent, done;   /* this level */
	long total;        /* requests this level will send; -1 unknown (by duration) */
	double elapsed_s;  /* since the level started */
	double eta_s;      /* NaN when unknown */
} sb_run_progress;

typedef void (*sb_run_progress_fn)(void *ud, const sb_run_progress *p);

/* Longest SSE/NDJSON line accepted by default (1 MiB): beyond, too_large. */
#define SB_RUN_MAX_LINE ((size_t)1 << 20)

typedef struct sb_run_config {
	const char *url;          /* as the user gave it; borrowed */
	const char *const *urls;  /* a fleet (bench.h): n_urls >= 2, url == urls[0] */
	size_t n_urls;
	sb_route route;           /* a fleet's router (core/route.h) */
	const char *model;        /* borrowed */
	sb_api api;               /* SB_API_AUTO detects */
	sb_workload workload;     /* mode, levels, lengths, counts, seed, SLOs */
	int reuse_prompt;         /* one prompt for every request */
	int cache_prompt;         /* 0: ask llama.cpp not to reuse its KV cache */
	int ignore_eos;           /* ask for exactly max_tokens (default 1) */
	int ipv4;
	double timeout_s;         /* a silent stream fails after this (default 300) */
	const char *api_key;      /* "Authorization: Bearer"; borrowed; may be NULL */
	const char *ca_file;      /* PEM bundle to verify TLS servers; NULL: system's */
	int insecure;             /* 1: skip TLS certificate verification */
	const char *partial_path; /* append finished records here (JSONL); NULL none */
	long pin_stride;          /* k >= 1: pin requests to llama.cpp slots 0, k, 2k...
				   * (bench.h sb_bench_opts); 0 none */
	size_t max_line;          /* default SB_RUN_MAX_LINE */
	double server_view_s;     /* > 0: sample the server's own count of its
				   * requests this often (serverview.h); 0: not */
	/* A request trace sent instead of the workload's load (bench.h
	 * sb_bench_opts.trace); set by sb_run_set_trace; NULL none */
	const sb_trace *trace;    /* borrowed */
	const char *trace_file;   /* borrowed: its name in the results */
	sb_trace_opts trace_opts; /* how it was read (speed-up, window, limit) */
	sb_run_progress_fn progress;
	void *progress_ud;
	const volatile sig_atomic_t *stop; /* nonzero: stop sending, return */
} sb_run_config;

/* Defaults: workload per sb_workload_init, api auto, cache_prompt 1,
 * ignore_eos 1, timeout 300 s, max_line SB_RUN_MAX_LINE, server_view_s
 * 0.25. */
void sb_run_config_init(sb_run_config *c);

/* Makes c send trace t, read from `file` with o (t and file borrowed): the
 * workload becomes one open-loop level of t's n requests, no duration,
 * called by the trace's mean rate ((n - 1) / span_s, as sbsim --trace
 * calls it; n when all are sent at once). Returns 0, or -EINVAL with a
 * message for an empty trace. */
int sb_run_set_trace(sb_run_config *c, const sb_trace *t, const char *file,
		     const sb_trace_opts *o, sb_error *e);

/* Runs the measurement. On 0 or -EINTR *results_out is a new results
 * document (on -EINTR it holds what finished, with "interrupted": true).
 * Other failures return a negative errno with a message and no document:
 * -EINVAL bad configuration, -ECONNREFUSED server unreachable at start,
 * -EIO partial file not writable, -ENOMEM. */
int sb_run_execute(const sb_run_config *c, json_t **results_out, sb_error *e);

/* Failed requests in a results document (all levels). */
long sb_run_failed_count(const json_t *results);

#endif
