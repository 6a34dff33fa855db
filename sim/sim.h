/* sim.h — the discrete-event simulator of an LLM server (library API).
 *
 * Two service models:
 *  - engine mode (default): the engine model of core/model.h — S slots, a
 *    FIFO queue bounded by max_queue (beyond it requests are rejected),
 *    iteration-level batching with prefill chunks of batch_tokens, step
 *    times from the model's coefficients, client overhead and step noise;
 *  - independent-service mode (M/G/c): each slot serves one request at a
 *    time for a time drawn from a distribution; no batching, no overhead.
 *    This is the mode checked against closed-form queueing results.
 *
 * Load is open loop (arrivals at rate λ: Poisson, constant or gamma gaps)
 * or closed loop (C clients, each sending its next request when the last
 * one finished, after an optional think time).
 *
 * How the engine is simulated (and its approximations):
 *  - Between state changes (a request joining the batch, a prefill chunk,
 *    a completion) every decode step has the same batch. A run of k such
 *    steps is one event; with the per_kv_token term the step times form an
 *    arithmetic series a, a+b, ..., a+(k-1)b (b = per_kv_token * B) whose
 *    sum k*a + b*k(k-1)/2 is exact. A request that becomes ready to join
 *    in the middle of a run cuts the run at the first step boundary after
 *    it (found by solving the quadratic), so joins happen at step
 *    boundaries exactly as if every step were simulated.
 *  - Noise: every step of the model has an independent factor of mean 1 and
 *    coefficient of variation cv (noise_prefill_cv for a step with prompt
 *    tokens, noise_cv for one that only decodes). The sum of k nearly equal
 *    steps then has mean k*step and cv ~ cv/sqrt(k); a run draws ONE factor
 *    with mean 1 and cv/sqrt(k) and scales the whole run by it — same
 *    mean, same variance of the run's length (when a run is later cut to
 *    j < k steps its factor keeps the cv of k steps: a slight
 *    under-dispersion).
 *  - ITL: the k*B gaps of a run are recorded as one weighted value, the
 *    run's mean gap (their spread within a run is b*(k-1), tiny). Per-request
 *    TPOT is exact from TTFT and E2E.
 *  - Overhead: each request reaches the server overhead_ms +
 *    overhead_per_token_ms * prompt tokens after it is sent, exactly, so
 *    requests sent together arrive together; an idle engine starts its
 *    step after every event of that instant, so they share the step (as
 *    llama-server does). The overhead's scatter (normal, sd
 *    overhead_sd_ms) is jitter of the first token's arrival at the client:
 *    it moves TTFT, not the server's schedule.
 *    TTFT = overhead + wait + prefill steps (+ jitter).
 *  - wait_ms: from reaching the server until the request's first step starts
 *    (queue wait + admission delay + wait for the current step to end).
 *    In M/G/c mode: queue wait exactly.
 *  - release_ms (model.scheduler, for the model's slot count): a finished
 *    request's slot stays held this long after its last token, and a
 *    closed-loop client sends its next request only after it; the request's
 *    TTFT, TPOT and E2E end at the last token.
 *  - admit_delay_ms applies to requests taken from the queue when a slot
 *    frees (not to requests that find a slot free).
 *  - A slot's context (model ctx_per_slot > 0): on reaching the server a
 *    request's lengths go through core/slotctx.h's rule: rejected when
 *    its prompt does not fit (llama.cpp refuses it when a slot would start
 *    it; here at once, so a rejected request never holds a queue place),
 *    prompt truncated (Ollama), or output stopped at the context.
 *  - A prompt's last prefill chunk yields the first output token; decoding
 *    slots in that step also advance. Prefill chunks are taken in slot order
 *    up to batch_tokens prompt tokens per step.
 *
 * Statistics stream into sb_levelacc (bounded memory). Requests with index
 * < warmup, or sent before warmup_s, are simulated but not counted. The
 * measurement window runs from the first counted request's send time to the
 * last counted completion; the in-flight count of the counted requests is
 * integrated over it (Little's law's independent path).
 */
#ifndef SB_SIM_H
#define SB_SIM_H

#include <stddef.h>

#include "core/dist.h"
#include "core/error.h"
#include "core/level.h"
#include "core/model.h"
#include "core/workload.h"
#include "fleet.h"

/* Why a request was rejected (sb_sim_rec.rejected). */
#define SB_SIM_REJECT_QUEUE 1    /* queue full (max_queue) */
#define SB_SIM_REJECT_TOO_LONG 2 /* prompt longer than the slot's context */
/* The records' err_msg for a rejection of kind why. Static string. */
const char *sb_sim_reject_msg(int why);

/* Options beyond the model and the workload. Initialise with
 * sb_sim_opts_init. */
typedef struct sb_sim_opts {
	int service_mode;      /* 1: independent-service M/G/c with `service` */
	sb_dist service;       /* service time in seconds */
	long queue_cap;        /* open loop: stop arrivals when this many wait
				  (queued or in transit to the server)
				  (divergence bound); default 200000 */
	double warmup_s;       /* also exclude requests sent before this */
	int keep_records;      /* collect per-request records (memory O(n)) */
	int no_noise;          /* disable step noise and overhead spread */
	int pin_stride;        /* > 0: a request takes the lowest free slot among
				  0, k, 2k... (servebench run --pin-slots k) */
	const struct sb_uncert *uncert; /* borrowed, NULL: none; each replication
				  of a sweep draws its coefficients
				  (sim/uncertainty.h); sb_sim_run_level
				  itself ignores it */
	sb_fleet fleet;        /* replicas behind a router (fleet.h); the
				  default is one server */
	int jobs;              /* sweeps and plans: worker threads (0 or 1: the
				  caller's thread only); results do not depend
				  on it */
} sb_sim_opts;

void sb_sim_opts_init(sb_sim_opts *o);

/* One simulated request's outcome (times in seconds relative to the level's
 * measurement start, durations in ms). */
typedef struct sb_sim_rec {
	long id;
	double t_sched_s, t_done_s;
	double ttft_ms, e2e_ms, wait_ms, tpot_ms;
	long prompt_tokens, output_tokens;
	int rejected;          /* 0, or why: SB_SIM_REJECT_* */
	int slot;              /* the slot that served it (-1: none) */
	int replica;           /* the replica it was routed to (0: one server) */
	long prefix_group;     /* its shared prefix's group (-1: none), or its
				  conversation's number */
	long prefix_tokens;    /* that prefix's tokens (a conversation: its
				  history before this turn) */
	long turn;             /* a conversation's turn (1 the first; -1 none) */
	long cached_tokens;    /* prompt tokens the prompt cache held */
	double prompt_ms;      /* from its prompt's first step to its first token */
} sb_sim_rec;

/* One replica of a fleet over a level's window (counted requests only). */
typedef struct sb_sim_replica {
	int group;             /* its fleet group (0 with no groups) */
	int slots;
	long requests;         /* routed to it */
	double share;          /* requests / all counted requests */
	double utilization;    /* busy slot-time / (slots * window) */
	double req_s;          /* finished here per second of the window */
	double mean_inflight;  /* time-average of its in-flight count (L obs) */
	double l_law;          /* its λW: req_s * mean sojourn here (s) */
} sb_sim_replica;

/* Result of one level (one replication). */
typedef struct sb_sim_level {
	sb_level sum;          /* the results-file summary */
	double ttft_pct_ms;    /* TTFT at the SLO percentile (workload slo) */
	double tpot_pct_ms;
	double utilization;    /* busy slot-time / (S * window) */
	long rejected;         /* turned away by max_queue or (too_long) the context */
	long too_long;         /* of those: prompt longer than a slot's context
				  (model ctx_per_slot, context_overflow reject) */
	long truncated;        /* prompts shortened to fit (context_overflow truncate) */
	long output_cut;       /* outputs stopped at the slot's context */
	long preempted;        /* vllm: preemptions of counted requests (a
				  request preempted twice counts twice) */
	long cached_tokens;    /* counted requests' prompt tokens reused from
				  the prompt cache (model prompt_cache) */
	long prompt_tokens;    /* counted requests' prompt tokens, all */
	long generated;        /* requests issued, counted or not */
	long max_waiting;      /* longest queue seen */
	int diverged;          /* open loop: queue reached queue_cap */
	int extrap_lo, extrap_hi; /* decode passes of these sizes (lo..hi) beyond
				     the model's decode table were used; 0: none */
	double sim_end_s;      /* simulated time at the end (absolute) */
	unsigned long seed;
	sb_sim_rec *recs;      /* owned, when keep_records; counted only */
	size_t n_recs;
	/* fleets of more than one replica only (NULL, 0, NaN otherwise): */
	sb_sim_replica *replicas; /* owned, n_replicas entries */
	int n_replicas;
	double share_ratio;    /* largest share / smallest share */
	double util_cv;        /* coefficient of variation of the utilizations */
} sb_sim_level;

/* Simulates one level (a rate for open loop, a client count for closed
 * loop, as w->mode says) of workload w on model m (both borrowed) with the
 * given seed. Counts w->requests requests (or w->duration_s seconds) after
 * warm-up. Returns 0, -ENOMEM, or -EINVAL (bad inputs) with a message.
 * With o->fleet of more than one replica, the level runs on the fleet:
 * every request is routed when sent; out->replicas holds each replica's
 * figures and utilization covers all slots of the fleet.
 * Cost: O(events log (slots + replicas)); memory O(slots + queue) unless
 * keep_records. */
int sb_sim_run_level(const sb_model *m, const sb_sim_opts *o,
		     const sb_workload *w, double level, unsigned long seed,
		     sb_sim_level *out, sb_error *e);
/* Releases out->recs and out->replicas; NULL is a no-op. */
void sb_sim_level_fini(sb_sim_level *l);

/* Estimated capacity μ in requests/s: in M/G/c mode slots / E[service];
 * in engine mode the completion rate of a saturated closed-loop run
 * (2*S clients, no think time) of the workload's lengths. Returns 0 and
 * *mu, or a negative errno. */
int sb_sim_capacity(const sb_model *m, const sb_sim_opts *o,
		    const sb_workload *w, double *mu, sb_error *e);

/* ---- Replay: simulate a given list of requests ---------------------- */

typedef struct sb_replay_req {
	double t_sched_s;      /* open loop: when it is sent (any order) */
	long prompt_tokens;    /* >= 1 */
	long output_tokens;    /* >= 1 */
	int slot;              /* the slot the server gave it (-1: unknown): taken
				  when free, as the measurement says */
	long prefix_tokens;    /* its shared prefix's tokens, counted in
				  prompt_tokens (0: none) ... */
	long prefix_group;     /* ... and which prefix (>= 0): what the model's
				  prompt_cache may find computed */
	size_t next_turn;      /* closed loop, a conversation: 1 + the index of
				  its next turn, which the client that sent
				  this one sends next (0: none; a request no
				  other names is a conversation's start, sent
				  in list order by a client that has none) ... */
	double pause_s;        /* ... a next turn: sent this long after the turn
				  before it ended (the measured pause; other
				  requests: sb_replay_opts.think_s) */
	const long *blocks;    /* a trace's prompt blocks (Mooncake hash_ids:
				  requests whose leading ids agree share that
				  prefix), borrowed; NULL: none ... */
	long n_blocks;         /* ... how many */
	long block_tokens;     /* ... and the tokens of each */
} sb_replay_req;

typedef struct sb_replay_pred {
	double t_sent_s;       /* open: t_sched_s; closed: when issued */
	double t_done_s;
	double ttft_ms, e2e_ms, tpot_ms, wait_ms; /* tpot NaN if < 2 tokens */
	int rejected;
	int replica;           /* the replica the router gave it (0: one server) */
} sb_replay_pred;

typedef struct sb_replay_opts {
	sb_mode mode;          /* RATE: send at t_sched_s; CONCURRENCY: C
				  clients send the list in order */
	int concurrency;       /* closed loop: number of clients */
	double think_s;        /* closed loop: pause between a client's requests */
	unsigned long seed;    /* for noise and overhead spread */
	int no_noise;          /* deterministic: no noise, overhead = its mean */
	const sb_fleet *fleet; /* borrowed; NULL (or one replica): one server of
				  model m. Else the requests go through the
				  simulated router to the fleet's replicas
				  (fleet.h; m for groups without a model) when
				  sent, and the requests' recorded slots are
				  ignored (they name a slot of some server) */
} sb_replay_opts;

/* Simulates reqs[0..n) (borrowed) on model m (or ro->fleet) and writes one
 * prediction per request into pred[0..n) (caller-allocated, same order as
 * reqs). If lv is not NULL, also fills a level summary over all n requests
 * (level = concurrency, or n / span of send times for open loop). Returns
 * 0, -ENOMEM or -EINVAL (also a fleet sb_fleet_validate refuses). With a
 * fleet, noise and overhead jitter come from one server stream shared by
 * the replicas, so only a no_noise replay equals its replicas replayed
 * apart. */
int sb_sim_replay(const sb_model *m, const sb_replay_opts *ro,
		  const sb_replay_req *reqs, size_t n, sb_replay_pred *pred,
		  sb_level *lv, sb_error *e);

#endif
