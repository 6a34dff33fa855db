/* sim_internal.h — the simulator's state, shared by sim.c (the events:
 * engine runs and the request lifecycle), sim_run.c (setting up a run,
 * its summary, the replay) and live.c (the engine on a caller's clock),
 * and by nothing else. */
#ifndef SB_SIM_INTERNAL_H
#define SB_SIM_INTERNAL_H

#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "sim.h"
#include "event_heap.h"
#include "router.h"
#include "stepnoise.h"
#include "core/idset.h"
#include "timers.h"
#include "whist.h"

enum { EV_GEN = 1, EV_ARRIVE, EV_RUN_END, EV_READY, EV_DEPART, EV_RELEASE, EV_TURN,
       EV_FOLLOW };
enum { SL_FREE = 0, SL_JOIN, SL_PREFILL, SL_DECODE, SL_SERVE, SL_RELEASE };
enum { SRC_OPEN = 0, SRC_CLOSED, SRC_REPLAY_OPEN, SRC_REPLAY_CLOSED, SRC_LIVE };
/* A live request the client gave up before it reached a slot (finish_req's
 * `rejected`, live.h's SB_LIVE_CANCELLED). */
#define SIM_CANCELLED 3

/* A conversation in progress (workloads with turns): its turns share
 * one prefix group, each prompt the history so far and then new tokens. */
typedef struct conv {
	long group;     /* its prefix group: the conversation's number */
	long turn;      /* turns issued */
	long turns;     /* turns it will have */
	long hist;      /* tokens of its history: the last prompt and answer */
} conv;

/* A request in flight (in transit, queued or in a slot). */
typedef struct req {
	long id;        /* issue order */
	long idx;       /* replay: index in the caller's list; else -1 */
	int client;     /* closed loop: client; -1 open loop */
	int counted;
	long in_len, out_len;
	double t_sched, t_arr, t_join, t_first;
	double jit;     /* jitter of the first token's arrival at the client, s */
	int slot;       /* its slot (-1: none yet) */
	int want_slot;  /* replay: the slot it had on the server (-1: unknown) */
	int srv;        /* the server it was routed to */
	int cancelled;  /* live: the client went away before it arrived */
	void *cookie;   /* live: the caller's */
	long group;     /* its prompt's prefix group (-1: none) */
	long prefix;    /* tokens of that shared prefix (0: none) */
	long cached;    /* prompt tokens its slot found computed (prompt_cache) */
	long conv;      /* conversation workloads: its conversation's entry in
			   s->convs (-1: none) */
	const long *blocks; /* replay: its prompt's blocks (sb_replay_req) */
	long n_blocks, block_tokens;
	long gen_done;  /* vllm: tokens produced before its last preemption */
	int preempts;   /* vllm: times it was preempted */
} req;

/* Invariant: state == SL_FREE <=> r == -1. JOIN slots wait until `ready`
 * to enter the batch; chunk is the prompt tokens planned in the current
 * prefill step. The request's lengths and counted are copied in when it
 * takes the slot and its progress (pos, gen) lives here: every step of a
 * run reads them, and a server's slots are one block, where a fleet's
 * requests are scattered over a table too big for the L1 cache. */
typedef struct slot {
	long r;
	int state;
	int joiner; /* reached an idle engine in the instant another did first */
	double ready;
	long chunk;
	double released; /* when it was last freed (-1: never); kv_cache per-slot */
	long in_len, out_len; /* the request's (engine mode) */
	long pre_len;   /* prompt tokens to prefill: in_len, or after a preemption
			   in_len + the tokens produced (vllm's recompute) */
	long seq;       /* vllm: order of admission (the last is preempted first) */
	long cache_group; /* prompt_cache slot: the prefix group of the prompt
			     it last held (-1: none) ... */
	long cache_len;   /* ... and its tokens held (the prompt, and once
			     answered the answer too) */
	const long *cache_blocks; /* or its blocks (a trace's, borrowed) */
	long n_cache_blocks;
	long pos;       /* prompt tokens prefilled */
	double restore_ms; /* what the reused prompt tokens cost (per_cached_token,
			      or per_restored_token for those a ram cache
			      restored), paid by the prompt's first step */
	long gen;       /* output tokens produced */
	int counted;    /* the request's */
} slot;

/* One server (a replica of the fleet): its engine, queue and slots. A fleet
 * of one is the single server; events name their server (EV_READY in arg,
 * EV_DEPART and EV_RELEASE in gen), requests theirs in req.srv, and the end of each
 * server's current run is its timer in s->timers (timers.h). */
typedef struct server {
	/* configuration */
	const sb_model *m;
	int S;
	int per_slot;   /* model.server.kv_cache == per-slot */
	int vllm;       /* model.server.engine == vllm (core/model.h) */
	long block_size, gpu_blocks; /* vllm's paged KV (gpu_blocks 0: unlimited) */
	int pcache;     /* model.server.prompt_cache (sb_prompt_cache) */
	long *held;     /* prompt_cache shared: per prefix group, the tokens of
			   its longest prompt (and answer) computed here (n_held
			   entries, grown lazily; 0: none) */
	long n_held;
	sb_idset blocks; /* prompt_cache shared: the trace blocks prefilled here */
	long seq;       /* admissions so far (slot.seq) */
	long max_queue, batch_tokens;
	double noise_cv, prefill_cv;
	sb_noise_kind noise_kind;
	double ovh_ms, ovh_tok_ms, ovh_sd_ms, admit_s;
	double split_prob;  /* model.scheduler.split_prob (0 without noise) */
	double split_crowded; /* .split_prob_crowded (0 without noise) */
	double release_s;   /* model.scheduler.release_ms for S slots, s */
	int dec_last;       /* the decode table's last batch size */
	double idle_join_t; /* when the idle engine last took a request */
	double idle_t0;     /* when the engine last started from idle */
	int group;          /* the fleet group it belongs to */
	/* state */
	long *q;        /* FIFO ring of request indices */
	size_t qcap, qhead, qlen;
	slot *slots;
	int *freeslot;
	int nfreeslot;
	int nbusy;
	int running, run_prefill, run_B, run_Bc, in_run_end;
	double run_t0, run_f, run_a, run_b, run_end;
	long run_k;
	/* statistics: busy slot-time; its value at the window's start, at
	 * this server's last counted completion (end_t), and where a change
	 * first passed the fleet's window end so far (x_t: busy_area_x) */
	double busy_area, busy_t, busy_area_t0, busy_area_end, end_t;
	double busy_area_x, x_t;
	/* fleet statistics of counted requests: routed here, finished here,
	 * their sojourn, and the in-flight count's time integral */
	long n_routed, n_done;
	double sojourn_s;
	long infl;
	double infl_area, infl_t;
} server;

typedef struct sim {
	/* configuration */
	server *srv;    /* n_srv servers */
	int n_srv;
	int S;          /* slots of all servers */
	int pin_stride; /* opts.pin_stride */
	int service_mode;
	sb_dist service;
	int no_noise;
	long queue_cap;
	int src;
	const sb_workload *w;
	long n_groups;  /* prefix groups a request may name (the workload's, or a
			   replay's largest + 1) */
	double level;
	double warmup_s;
	long warmup, to_count;
	double duration_s;
	double pct;
	/* conversations (sb_workload_is_conversation): closed loop, client c's
	 * is convs[c]; open loop, one per conversation, freed at its end */
	int conversations;  /* the workload is one */
	conv *convs;
	long nconvs, capconvs;
	long *freeconv;
	long nfreeconv;
	long conv_started;  /* conversations begun (the next one's group) */
	/* a closed replay of conversations (any next_turn set): per client
	 * its next turn (1 + index; 0: none), which requests follow another,
	 * and the first conversation start not yet sent */
	size_t *client_next;
	unsigned char *follows;
	size_t replay_head;
	long follow_idx;    /* an open replay's turn being issued (EV_FOLLOW), else -1 */
	/* replay */
	const sb_replay_req *rq;
	size_t rn;
	size_t *order;      /* open replay: the requests sent at their times,
			       by time (n_order: all but a conversation's
			       later turns, which follow their turn before) */
	size_t n_order;
	sb_replay_pred *pred;
	double think_s;
	/* randomness: load (arrivals, lengths, think) and server (noise,
	 * overhead, service) streams are separate, so two configurations run
	 * with one seed see the same offered load (common random numbers);
	 * the router has a stream of its own (fleets only). */
	gsl_rng *rl, *rs, *rr;
	sb_router *router; /* NULL: one server */
	sb_timers *timers; /* when each server's current run ends */
	sb_stepnoise noise; /* the lognormal's parameters per (cv, k) */
	/* state */
	sb_heap *heap;
	req *reqs;
	long nreqs, capreqs;
	long *freereq;
	long nfreereq;
	/* the next open-loop arrival is kept outside the heap (one heap push
	 * and pop fewer per request): its time and argument, INFINITY if none */
	double next_gen_t;
	long next_gen_arg;
	long generated, counted_generated;
	int stop;
	int t0_set;
	double t0, t_end, now;
	/* statistics */
	sb_levelacc acc;
	int acc_ok;
	sb_whist *itl;
	long rejected, max_waiting;
	long too_long, truncated, output_cut; /* context overflow (counted requests) */
	long preempted; /* vllm: preemptions of counted requests */
	long cached_tokens, prompt_tokens; /* counted requests' prompt tokens
				reused from the prompt cache, and all of them */
	int xlo, xhi;   /* pass sizes beyond a decode table that a step used (0: none) */
	int diverged;
	sb_sim_rec *recs;
	size_t nrecs, caprecs;
	int keep_records;
	int oom;
	/* live (SRC_LIVE): called for each request that ends, before its
	 * entry is reused; rejected as finish_req's */
	void (*on_done)(struct sim *s, long ri, double t, int rejected);
	void *done_ctx;
} sim;

/* Puts an event on s's heap; out of memory marks s->oom. */
static inline void push(sim *s, double t, int type, uint32_t gen, long arg)
{
	if (sb_heap_push(s->heap, t, type, gen, arg) < 0)
		s->oom = 1;
}

/* sim.c: runs s's events until none is left, or (sim_loop_until) until the
 * next one comes after `until`. Returns 0 or -ENOMEM with a message. */
int sim_loop(sim *s, sb_error *e);
int sim_loop_until(sim *s, double until, sb_error *e);
/* When s's next event or run end comes (INFINITY: none). */
double sim_next_event(const sim *s);
/* Issues a request of in_len/out_len tokens at t from outside (SRC_LIVE,
 * not counted): it reaches the server after the overhead. Returns its
 * index, or -1 out of memory. */
long sim_submit(sim *s, double t, long in_len, long out_len);
/* Removes request ri from v's queue; 1 when it was there. */
int sim_queue_remove(server *v, long ri);
/* Ends request ri at t (a SB_SIM_REJECT_* or SIM_CANCELLED, or 0). */
void sim_finish_req(sim *s, long ri, double t, int rejected);

/* The current run of v: the end of its step j (1..run_k); the first step
 * j whose end is at or after t; the run cut at the first step end at or
 * after `ready` (so a request ready then joins there). */
double sim_run_boundary(const server *v, long j);
long sim_run_first_boundary(const server *v, double t);
void sim_run_cut(sim *s, server *v, double ready);

/* conversation.c: sets up n closed-loop clients' conversations (0: open
 * loop); -ENOMEM. A new open-loop conversation's entry (-1: out of memory).
 * Gives request r (lengths drawn) its turn of conversation c: a closed
 * loop's finished one starts anew; r's prompt becomes the history plus
 * its own tokens. After r ended at t: the history grows by its prompt and
 * answer; returns 1 when another turn follows, else 0 (the open loop's
 * entry is freed). Frees the table. */
int conv_setup(sim *s, long n);
long conv_open(sim *s);
void conv_turn(sim *s, long c, req *r);
int conv_after(sim *s, long c, const req *r, int rejected);
void conv_free(sim *s);
/* A closed replay: sets up client_next and follows when rq names next
 * turns (-ENOMEM); the index client sends next (its conversation's next
 * turn, else the next start in list order), or -1 when none is left.
 * An open replay sends a next turn its pause after the turn before it
 * ended (EV_FOLLOW), the others at their times. */
int conv_replay_setup(sim *s, int clients);
/* An open replay: sets follows when rq names next turns (-ENOMEM). */
int conv_replay_follows(sim *s);
long conv_replay_pick(sim *s, long client);

/* paged.c, a vllm server's KV blocks: blocks for `tokens`; blocks its slots
 * hold after j more decode steps; whether a prompt of `tokens` fits beside
 * them now; the most decode steps (<= kmax) whose blocks fit; the busy
 * slot admitted last (-1: none). gpu_blocks 0: everything fits. */
long paged_blocks(const server *v, long tokens);
long paged_need(const server *v, long j);
int paged_fits(const server *v, long tokens);
long paged_steps(const server *v, long kmax);
int paged_victim(const server *v);

/* sim_run.c: sets s up (servers of m or fleet f, streams from seed) and
 * frees it. */
int sim_init(sim *s, const sb_model *m, const sb_fleet *f, int service_mode,
	     const sb_dist *service, int no_noise, unsigned long seed,
	     const sb_slo *slo, sb_error *e);
void sim_free(sim *s);

#endif
