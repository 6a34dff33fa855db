/* bench.h — a measurement handle: one live server, probed, identified and
 * with its prompts sized once, and one load driver whose connections stay
 * open from one measurement to the next. `servebench run` measures once
 * through it (sb_run_execute), `calibrate --url` every part of its plan,
 * `validate --url` every level and speed probe.
 *
 * sb_bench_new does what run.h's steps 1 and 2 describe (reachability and
 * identification, prompt sizing); every sb_bench_measure does step 3 for
 * one workload and returns a results document as sb_run_execute does, its
 * "target" the handle's (server kind, slots, prompt sizing) with the call's
 * reuse_prompt and cache_prompt.
 *
 * Connections: a measurement's requests reuse the connections the earlier
 * ones left open (the first request of a level pays no TCP handshake when
 * a warm connection exists); one the server closed while it sat idle is
 * replaced, or the request resent once on a new connection (driver.h,
 * "client_retries" in its record). Closed-loop latencies start after any
 * connection is made either way.
 */
#ifndef SB_BENCH_H
#define SB_BENCH_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>

#include "api.h"
#include "core/error.h"
#include "core/route.h"
#include "core/trace.h"
#include "core/workload.h"
#include "run.h"

typedef struct sb_bench sb_bench;

/* The server and how to talk to it: fixed for the handle's lifetime.
 * Strings borrowed for that lifetime. */
typedef struct sb_bench_config {
	const char *url;          /* as the user gave it */
	/* A fleet (fleet.h): n_urls >= 2 servers, url == urls[0]; each is
	 * probed on its own, prompts are sized on the first, and every
	 * request goes to the one `route` picks at send time (its random
	 * draws seeded from the workload's seed). n_urls 0 or 1: url alone. */
	const char *const *urls;
	size_t n_urls;
	sb_route route;
	const char *model;
	sb_api api;               /* SB_API_AUTO detects */
	int ignore_eos;           /* ask for exactly max_tokens */
	int ipv4;
	double timeout_s;         /* a silent stream fails after this */
	const char *api_key;      /* "Authorization: Bearer"; may be NULL */
	const char *ca_file;      /* PEM bundle to verify TLS servers; NULL: system's */
	int insecure;             /* 1: skip TLS certificate verification */
	size_t max_line;          /* longest SSE/NDJSON line; 0: SB_RUN_MAX_LINE */
	const volatile sig_atomic_t *stop; /* nonzero: stop sending, return */
	unsigned long sizing_seed;/* seed of the prompt-sizing texts */
} sb_bench_config;

/* What may change from one measurement to the next. Strings borrowed for
 * the call. */
typedef struct sb_bench_opts {
	int reuse_prompt;         /* one prompt for every request */
	int cache_prompt;         /* 0: ask llama.cpp not to reuse its KV cache */
	const char *partial_path; /* append finished records here (JSONL); NULL none */
	/* k >= 1: pin every request (warm-up ones too) to a llama.cpp slot,
	 * sending "id_slot": s with s the lowest of 0, k, 2k, ... that no
	 * request of this call still in flight holds (closed loop at
	 * concurrency c: slots 0, k, ..., (c-1)k); a slot is free again the
	 * moment its response ends. Open loop, once every such slot below the
	 * server's slot count is held, a request joins the one with the fewest
	 * (the server queues it). Records get "slot": s (or the slot the
	 * server reports, which is the same), the target "pin_stride": k.
	 * 0: no pinning. Unpinned, records get "slot" when the server
	 * reports it (llama-completion). A fleet refuses pinning (-EINVAL). */
	long pin_stride;
	/* > 0: while each level is measured, sample the server's own count of
	 * the requests it holds this often (serverview.h; one server, not a
	 * fleet); the level gets "server_view". 0: not (the default) */
	double server_view_s;
	/* A request trace (core/trace.h), borrowed; NULL: none. Set, the
	 * workload must be one open-loop level (its rate is what the level
	 * is called) with no duration and reuse_prompt off: the level's
	 * request k is sent at the trace's t_s of request k with its in_len
	 * (prompt tokens, sized as any prompt) and out_len (max tokens); the
	 * warm-up requests keep the workload's lengths. */
	const sb_trace *trace;
	sb_run_progress_fn progress;
	void *progress_ud;
} sb_bench_opts;

/* Defaults: api auto, ignore_eos 1, timeout 300 s, max_line
 * SB_RUN_MAX_LINE, sizing seed 0. */
void sb_bench_config_init(sb_bench_config *c);
/* The server part of a run configuration (its workload's seed sizes the
 * prompts, as sb_run_execute does). Strings stay borrowed from c. */
void sb_bench_config_from_run(sb_bench_config *b, const sb_run_config *c);
/* 0, or -EINVAL with a message when c lacks the url or the model, or its
 * timeout is not positive (sb_bench_new checks it first). */
int sb_bench_config_check(const sb_bench_config *c, sb_error *e);
/* Defaults: cache_prompt 1, pin_stride 0, nothing else. */
void sb_bench_opts_init(sb_bench_opts *o);
/* The per-measurement part of a run configuration (borrowed from c). */
void sb_bench_opts_from_run(sb_bench_opts *o, const sb_run_config *c);

/* Probes and identifies the server at c->url and sizes prompts; *out is
 * the new handle, which keeps c's strings (borrowed). Returns 0, or a
 * negative errno with a message and *out NULL: -ECONNREFUSED (nothing
 * answers) or -ETIMEDOUT from the probes, -EINVAL (bad configuration),
 * -ENOMEM. (An int, not the handle, so the caller can tell an unreachable
 * server from a bad flag.) Cost: a few short requests (GET /props,
 * /api/version; /tokenize and /apply-template, or two probe requests of
 * max_tokens 1). */
int sb_bench_new(const sb_bench_config *c, sb_bench **out, sb_error *e);

/* Measures w's levels on the kept connections (o NULL: defaults). On 0 or
 * -EINTR *results is a new results document (on -EINTR it holds what
 * finished, with "interrupted": true). A request that fails is a record
 * with its error; the call fails, with no document, on -EINVAL (bad
 * workload, or one that o->trace cannot be sent as), -ECONNREFUSED when
 * every request of its first phase (the first level's warm-up, else the
 * level) failed to connect (the server went away since), -EIO (partial
 * file not writable), -ENOMEM; with o->pin_stride set, -ENOTSUP when the
 * server is not llama.cpp and -EINVAL when the stride is negative or, the
 * slot count known, its highest slot (closed loop: (max level - 1) *
 * stride) is not below it. */
int sb_bench_measure(sb_bench *b, const sb_workload *w, const sb_bench_opts *o,
		     json_t **results, sb_error *e);

/* A quiet one-client measurement beside a run (a speed probe, a drift
 * run): w's lengths at concurrency 1, n requests, `warmup` warm-up
 * requests, prompts from `seed`, o's prompt and cache options without its
 * progress callback and partial file, and without shared prefixes (it
 * measures the server's speed). On 0 *doc is the new results document and
 * *level its one level (borrowed from *doc); fails with e set (`what`
 * naming the run) when no request succeeded. */
int sb_bench_measure_one_client(sb_bench *b, const sb_workload *w, const sb_bench_opts *o,
				long n, long warmup, unsigned long seed, const char *what,
				json_t **doc, json_t **level, sb_error *e);

/* The slot count the server declared; -1 unknown. */
long sb_bench_slots(const sb_bench *b);

/* Frees b, closing its connections; NULL is a no-op. */
void sb_bench_free(sb_bench *b);

#endif
