/* data.h — the measurements a calibration fits, read once from the results
 * files (collect.c): its closed-loop levels and their successful requests,
 * in typed form. Layer 1 of calibrate/ (data → engine → decode1 → prefill →
 * slotcount → decode → noise → admit → split → provenance → calibrate): it
 * includes nothing else of calibrate/ but the input types (types.h). Not
 * installed; used only inside calibrate/. */
#ifndef SB_CAL_DATA_H
#define SB_CAL_DATA_H

#include <math.h>
#include <stddef.h>

#include "calibrate/types.h"
#include "core/error.h"
#include "core/results.h"
#include "core/stats.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* Relative weight of a median of n values against one value: the median's
 * variance is about (pi/2)·sigma²/n for a normal sample. */
#define MEDIAN_WEIGHT(n) (2.0 * (double)(n) / M_PI)

/* One closed-loop level of one input file, as the fits see it. */
typedef struct cal_level {
	size_t file;        /* index of its input */
	double c;           /* concurrency (whole number >= 1) */
	double P, N;        /* mean prompt tokens (processed by the server) and output tokens */
	long n_ok;          /* successful requests */
	int use_reqs;       /* 1: fitted from per-request records, 0: from its summary */
	size_t rq0, nrq;    /* its requests: cal_data.rqs[rq0 .. rq0+nrq) */
	double ttft, tpot, e2e; /* ms: means of the records, or the summary's p50s */
	double ttft_p99;    /* ms: the summary's TTFT p99 (NaN: none) */
	double out_tok_s;   /* the summary's output tokens/s (NaN: none) */
	double wait;        /* ms: mean queue wait (NaN: unknown) */
	int wait_has_overhead; /* measured waits are TTFT - server prompt_ms */
	int shape_dropped;  /* its prefill broke the expected shape and a
			       re-measurement overruled it (checks.h): left
			       out of the prefill fit */
} cal_level;

/* One successful request. Times t_* in s relative to the level start,
 * durations in ms. */
typedef struct cal_request {
	size_t lv;          /* its level: cal_data.lvs[lv] */
	double P, N;        /* prompt tokens the server processed, output tokens */
	double Pin;         /* prompt tokens sent (P: those the server processed) */
	double ttft, e2e, tpot; /* tpot NaN with fewer than 2 output tokens */
	double t_sent, t_first, t_done;
	double prompt_ms;   /* the server's prefill time (NaN: not reported) */
	double wait;        /* queue wait (NaN: unknown) */
	const double *itl;  /* its ITL gaps, ms (borrowed from the results) */
	size_t n_itl;
} cal_request;

/* Why collect.c left a level out of the fit or fitted it with care (for the
 * fit's notes). */
typedef enum cal_level_remark {
	CAL_REMARK_OPEN_LOOP,    /* a rate level: not used */
	CAL_REMARK_LENGTHS_VARY, /* a summary whose lengths vary: fitted at their means */
} cal_level_remark;

typedef struct cal_remark {
	cal_level_remark kind;
	size_t file;
	double level;            /* the level's concurrency or rate */
} cal_remark;

/* Everything the fits read. Owns lvs, rqs and remarks; in is borrowed. */
typedef struct cal_data {
	const sb_calib_input *in;
	size_t n_in;
	cal_level *lvs;
	size_t n_lv;
	cal_request *rqs;
	size_t n_rq, cap_rq;
	cal_remark *remarks;     /* in the order the levels were read */
	size_t n_remarks;
	long batch_tokens;       /* prompt tokens per engine step (option, targets or 2048) */
} cal_data;

/* Reads the n inputs (borrowed: they must outlive d) into *d, which the
 * caller zeroes first; o gives batch_tokens. Returns 0, -EINVAL with a
 * message naming the bad or missing measurement (mixed models or sources,
 * all requests failed, no level at concurrency 1...) or -ENOMEM. d holds
 * what was read either way: release with cal_data_fini. */
int cal_collect(cal_data *d, const sb_calib_input *in, size_t n, const sb_calib_opts *o,
		sb_error *e);
void cal_data_fini(cal_data *d);

/* Input f's name for messages (borrowed; "(input)" when it has none). */
const char *cal_fname(const cal_data *d, size_t f);
/* The last component of a path (borrowed from p). */
const char *cal_base_name(const char *p);

#endif
