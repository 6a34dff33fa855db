/* level.h — one load level: per-request records in, the level summary out.
 *
 * Measured runs (measure/) and simulated runs (sim/) both feed finished
 * requests into an sb_levelacc, so every metric (TPOT, goodput, Little's law)
 * has exactly one definition:
 *   TTFT  = first content token received - scheduled send time (open loop)
 *           or the moment the request was written (closed loop); includes
 *           queue wait and overhead.
 *   TPOT  = (E2E - TTFT) / (output_tokens - 1), requests with >= 2 tokens.
 *   ITL   = every gap between consecutive content chunks.
 *   wait  = time the request waited before a slot took it (sim: exact;
 *           measured: TTFT minus the server's own prompt time, when known).
 *   goodput = requests meeting every SLO that is set / level duration.
 *   Little: over every request that entered the system (failed ones too):
 *           lambda = requests / duration, W = mean time from scheduled send
 *           to completion or failure (s), l_law = lambda*W,
 *           l_observed = time average of the in-flight count, integrated by
 *           the driver through sb_levelacc_inflight() — an independent path.
 */
#ifndef SB_LEVEL_H
#define SB_LEVEL_H

#include <jansson.h>
#include <stdint.h>

#include "error.h"
#include "hist.h"

typedef enum sb_mode { SB_MODE_CONCURRENCY = 0, SB_MODE_RATE = 1 } sb_mode;

/* Returns "concurrency" or "rate". */
const char *sb_mode_name(sb_mode m);

/* Service-level objectives. A field <= 0 means "not set". */
typedef struct sb_slo {
	double ttft_ms;
	double tpot_ms;
	double percentile; /* which percentile the knee/plan checks, e.g. 99 */
} sb_slo;

/* One finished (or failed) request. Times in seconds are relative to the
 * level start; durations are milliseconds. Pointers are borrowed. */
typedef struct sb_reqrec {
	long id;
	double t_scheduled_s; /* when it was due to be sent (== t_sent_s closed loop) */
	double t_sent_s;      /* when it was actually sent */
	double t_done_s;      /* when the last byte arrived / it failed */
	double ttft_ms;       /* NaN if no token arrived */
	double e2e_ms;
	double wait_ms;       /* NaN if unknown */
	const double *itl_ms; /* output_tokens-1 gaps, may be NULL */
	size_t n_itl;
	long prompt_tokens;   /* -1 if unknown */
	long output_tokens;   /* -1 if unknown */
	const char *err_class; /* NULL when the request succeeded */
	const char *err_msg;
	int warmup;           /* 1: a warm-up request, replayed but not counted
			       * (record "warmup": true; written only when set) */
	long slot;            /* the llama.cpp slot that served it, as the
			       * server reported it or as it was pinned (record
			       * "slot"), -1 when absent. Read by the results
			       * loader; measure/bench.c writes it, not
			       * sb_reqrec_to_json (records built with
			       * initialisers would claim slot 0). */
	long replica;         /* a fleet run (several URLs): the index into
			       * target.replicas of the server that took it
			       * (record "replica"), -1 when absent. Read by the
			       * results loader, written by measure/bench.c, as
			       * slot is. */
	long prefix_group;    /* which of the workload's shared prefixes its
			       * prompt started with (record "prefix_group"),
			       * -1 when absent; read and written as slot is.
			       * A conversation's turns: its number. */
	long prefix_tokens;   /* tokens of that prefix, or of the conversation's
			       * history before this turn (record
			       * "prefix_tokens"), -1 when absent */
	long turn;            /* a conversation's turn, 1 the first (record
			       * "turn"), -1 when absent */
	const long *blocks;   /* a trace's prompt blocks (record "hash_ids",
			       * Mooncake's: leading ids two prompts share name
			       * their shared prefix), n_blocks of them; NULL
			       * when absent. Written by sb_reqrec_to_json. */
	long n_blocks;
} sb_reqrec;

#define SB_LEVEL_MAX_ERR_CLASSES 16

typedef struct sb_errcount {
	char cls[32];
	long count;
} sb_errcount;

/* The summary of one level, as written in results files. */
typedef struct sb_level {
	double level;          /* concurrency or rate (req/s) */
	sb_mode mode;
	long requests_ok, requests_failed;
	sb_summary ttft_ms, tpot_ms, itl_ms, e2e_ms, wait_ms;
	double duration_s;
	double output_tok_s, req_s, goodput_req_s;
	double lambda_req_s, w_s, l_law, l_observed;
	double schedule_lag_p99_ms; /* open loop measured: send lag; NaN otherwise */
	sb_errcount errors[SB_LEVEL_MAX_ERR_CLASSES];
	int n_errors;
} sb_level;

/* Accumulates requests of one level. Memory is bounded (see hist.h). */
typedef struct sb_levelacc {
	sb_hist ttft, tpot, itl, e2e, wait, lag;
	sb_slo slo;
	long ok, failed, good;
	long n_all;            /* requests with a finite sojourn (Little's law) */
	double sojourn_s;      /* sum of t_done_s - t_scheduled_s over them */
	double out_tokens;
	double t_end_s;        /* latest completion seen */
	double area;           /* integral of in-flight count over time */
	double t_last_s;       /* time of the last in-flight change */
	long inflight;
	sb_errcount errors[SB_LEVEL_MAX_ERR_CLASSES];
	int n_errors;
} sb_levelacc;

/* Returns 0 or -ENOMEM. slo may be NULL (no SLO). */
int sb_levelacc_init(sb_levelacc *a, const sb_slo *slo);
void sb_levelacc_fini(sb_levelacc *a);
/* Adds a finished request (successful or not). */
void sb_levelacc_add(sb_levelacc *a, const sb_reqrec *r);
/* Records that the in-flight count changed by delta (+1 arrival, -1
 * completion) at time t_s (non-decreasing across calls). */
void sb_levelacc_inflight(sb_levelacc *a, double t_s, int delta);
/* r's time per output token after the first: (e2e - ttft) / (output - 1);
 * NaN with fewer than 2 output tokens or no TTFT. */
double sb_reqrec_tpot_ms(const sb_reqrec *r);
/* Whether r meets the SLOs in slo (true when none set). */
int sb_slo_met(const sb_slo *slo, const sb_reqrec *r);
/* Fills out. duration_s <= 0 means "from 0 to the last completion". */
void sb_levelacc_finish(sb_levelacc *a, double level, sb_mode mode,
			double duration_s, sb_level *out);

/* The summary of the records r[0..n) (times absolute in the level) over
 * their window [first send or schedule, last completion], the times taken
 * from the window's start (r is not changed). Returns 0 or -ENOMEM. */
int sb_level_of_records(const sb_reqrec *r, size_t n, double level, sb_mode mode,
			sb_level *out);

/* New JSON object for a level summary (without "requests"; fields:
 * docs/formats.md). */
json_t *sb_level_to_json(const sb_level *lv);
/* New JSON object for one request record (its fields: docs/formats.md;
 * non-finite numbers become null). `server` is stolen (may be NULL -> JSON
 * null). */
json_t *sb_reqrec_to_json(const sb_reqrec *r, json_t *server);
/* Adds to record j what its prompt shared: "prefix_group" when group >= 0,
 * "prefix_tokens" when >= 0 with a group, "turn" when >= 1 (a
 * conversation's). Written by measure/ and sim/ alike, read by the results
 * loader into sb_reqrec's fields of those names. */
void sb_reqrec_set_sharing(json_t *j, long group, long prefix_tokens, long turn);
/* Parses a level summary object back; returns 0 or -EINVAL with message. */
int sb_level_from_json(const json_t *j, sb_level *out, sb_error *e);

#endif
