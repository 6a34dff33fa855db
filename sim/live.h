/* live.h — the simulator's engine run against a caller's clock: requests
 * come in one at a time from outside (the emulator `sbsim serve`), the
 * engine runs up to the time the caller says, and the caller reads each
 * request's progress. Same engine code as sb_sim_run_level (sim.c): slots
 * and slot choice, FIFO queue and max_queue, batched prefill and decode
 * steps, KV layout, release time, the slot's context, step noise.
 *
 * Times are seconds on the caller's clock (any origin, nondecreasing).
 * A request reaches the server the model's overhead (overhead_ms +
 * overhead_per_token_ms x prompt) after it is submitted; the overhead's
 * scatter (a client-side jitter) is not applied.
 *
 * A handle names a request from sb_live_submit until its on_done callback
 * has returned; after that the engine may give it to a new request.
 */
#ifndef SB_LIVE_H
#define SB_LIVE_H

#include "core/error.h"
#include "core/model.h"

typedef struct sb_live sb_live;

/* Why a request ended (sb_live_done.why). */
enum {
	SB_LIVE_DONE = 0,        /* produced its output */
	SB_LIVE_QUEUE_FULL = 1,  /* SB_SIM_REJECT_QUEUE: max_queue reached */
	SB_LIVE_TOO_LONG = 2,    /* SB_SIM_REJECT_TOO_LONG: prompt past the context */
	SB_LIVE_CANCELLED = 3,   /* sb_live_cancel before it held a slot */
};

/* A finished request, as on_done reports it (times on the caller's clock). */
typedef struct sb_live_done {
	long handle;
	void *cookie;          /* as given to sb_live_submit */
	int why;               /* SB_LIVE_* */
	long prompt_tokens;    /* as the server took it (truncated: fewer) */
	long output_tokens;    /* tokens produced (the context may stop it early) */
	int slot;              /* the slot that served it (-1: none) */
	double t_submit, t_arrive, t_join, t_first, t_done;
} sb_live_done;

typedef void (*sb_live_done_fn)(void *ctx, const sb_live_done *d);

/* An engine for model m (borrowed, checked; one server of m->slots slots,
 * m->max_queue) with the given seed; no_noise: steps take their mean
 * time. on_done(ctx, .) is called from sb_live_advance and sb_live_cancel
 * for every request that ends. NULL with a message on bad input or no
 * memory. */
sb_live *sb_live_new(const sb_model *m, unsigned long seed, int no_noise,
		     sb_live_done_fn on_done, void *ctx, sb_error *e);
void sb_live_free(sb_live *l);

/* Submits a request at time t (>= the last time given) of prompt and
 * output tokens (>= 1 each); want_slot >= 0: it takes that slot, waiting in
 * the queue while the slot is held (llama.cpp's id_slot: other requests go
 * on past it). Returns its handle (>= 0) or -ENOMEM. */
long sb_live_submit(sb_live *l, double t, long prompt, long output, int want_slot,
		    void *cookie);

/* Runs the engine up to time t (>= the last time given): every step that
 * ends by t, every request that arrives, joins or finishes by t (on_done).
 * Returns 0 or -ENOMEM. */
int sb_live_advance(sb_live *l, double t);

/* When the engine next changes (a step ends, a request arrives or joins,
 * a slot is released): the time to call sb_live_advance again; INFINITY
 * when idle. */
double sb_live_next(const sb_live *l);

/* Output tokens request h has produced by time t (after sb_live_advance(t)):
 * 0 until its prompt is done. *t_last (may be NULL): when the last of them
 * came (the end of the step that made it). */
long sb_live_tokens(const sb_live *l, long h, double t, double *t_last);

/* When request h's output token i (1-based, i <= sb_live_tokens) was made:
 * the end of its step (a token of an earlier run: that run's end, the
 * current run's start, at the latest). NaN when h holds no slot. */
double sb_live_token_time(const sb_live *l, long h, long i);

/* The client went away at time t (after sb_live_advance(t)): a queued or
 * not yet arrived request leaves the queue (on_done with
 * SB_LIVE_CANCELLED); one in a slot stops after the step in progress
 * (on_done, SB_LIVE_DONE, with the tokens it produced). */
void sb_live_cancel(sb_live *l, long h, double t);

/* The server's state: requests in slots, waiting in the queue (or on their
 * way to it), and the slots' context in use (prompt + output tokens). */
typedef struct sb_live_state {
	int slots, busy;
	long waiting;
	long kv_tokens;
} sb_live_state;
void sb_live_get_state(const sb_live *l, sb_live_state *st);

/* Slot i's request (its handle, -1 when the slot is free) and that
 * request's prompt and output tokens so far. */
long sb_live_slot(const sb_live *l, int i, double t, long *prompt, long *generated);

#endif
