/* decode.h — the decode step time at B >= 2 busy sequences: TPOT at levels
 * with B = min(c, slots), minus the KV term and the prefill work of other
 * requests that landed inside a request's decode phase, fitted as the
 * model's decode table (linear between entries). Layer 6 of calibrate/
 * (after slotcount.h). */
#ifndef SB_CAL_DECODE_H
#define SB_CAL_DECODE_H

#include "calibrate/fit_linear.h"
#include "calibrate/slotcount.h"
#include "core/model.h"

/* What became of a level's TPOT. */
typedef enum cal_point_use {
	CAL_POINT_CHECK_ONLY,       /* one slot: decode_ms(1) comes from concurrency 1 */
	CAL_POINT_USED,
	CAL_POINT_NOT_POSITIVE,     /* the corrected step is <= 0: not used */
	CAL_POINT_TOO_MANY_BATCHES, /* beyond the batch sizes that can be fitted: not used */
} cal_point_use;

/* How the prefill interference was counted. */
typedef enum cal_interference_how {
	CAL_INTERF_RECORDS, /* per request, from the others' first-token times */
	CAL_INTERF_QUEUED,  /* summary of a queued level: half assumed */
	CAL_INTERF_SUMMARY, /* summary: from where TTFT lies between one wave and staggered */
} cal_interference_how;

/* One level's decode point (a level with c >= 2 and a TPOT). */
typedef struct cal_decode_point {
	size_t level;              /* cal_data.lvs index */
	int batch;                 /* B = min(c, the file's slots) */
	cal_point_use use;
	double check_residual_ms;  /* CHECK_ONLY: TPOT minus the concurrency-1 prediction */
	double effective_batch;    /* mean effective batch of its rows */
	double minus_kv_ms, minus_interference_ms, step_ms; /* step = TPOT - both */
	double step_var;           /* variance of step_ms from the level's records
				      (level_mean_var in decode.c); NaN: a summary */
	cal_interference_how how;
	double ttft_wave_ms, ttft_staggered_ms, fraction; /* CAL_INTERF_SUMMARY */
} cal_decode_point;

/* What the fit found (owns points, f and line). */
typedef struct cal_decode {
	cal_decode_point *points;  /* in level order */
	size_t n_points;
	int n_batches;             /* unknown table entries fitted (0: none) */
	int batches[SB_LINFIT_MAXP]; /* their batch sizes, ascending */
	sb_linfit f;               /* the fit of those entries (when n_batches > 0) */
	sb_decode_point table[SB_MODEL_MAX_DECODE]; /* decode_ms(1) first */
	double table_se[SB_MODEL_MAX_DECODE];       /* NaN: none */
	int n_table;
	int below[SB_MODEL_MAX_DECODE]; /* entry i is below entry i-1 by more than 2 se */
	int has_line;              /* line through the table fitted (n_table >= 2) */
	sb_linfit line;            /* decode_ms(B) = base + per_seq * B, reported only */
} cal_decode;

/* Fits the decode table from d's levels with c >= 2 into *out (zeroed by
 * the caller), using g (decode1 and prefill terms set) and the files' slot
 * counts in s. Returns 0, -EINVAL with a message (a failed fit, an entry
 * not positive) or -ENOMEM. Release with cal_decode_fini either way. */
int cal_decode_fit(const cal_data *d, const cal_engine *g, const cal_slots *s, cal_decode *out,
		   sb_error *e);
void cal_decode_fini(cal_decode *r);

#endif
