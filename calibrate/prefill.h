/* prefill.h — prefill cost and client-side overhead from the concurrency-1
 * levels: TTFT (or, with server timings, the server's prompt_ms) against
 * the prompt length P, with the P(P-1)/2 term kept only when an F-test
 * supports it. Layer 4 of calibrate/ (after decode1.h, whose decode_ms(1)
 * it subtracts). */
#ifndef SB_CAL_PREFILL_H
#define SB_CAL_PREFILL_H

#include "calibrate/engine.h"
#include "calibrate/fit_linear.h"

/* What became of the P(P-1)/2 term. */
typedef enum cal_attn_decision {
	CAL_ATTN_UNTESTED,        /* fewer than 3 prompt lengths or 4 points */
	CAL_ATTN_KEPT,            /* p < 0.05 and its interval above 0 */
	CAL_ATTN_NOT_POSITIVE,    /* dropped: coefficient <= 0 */
	CAL_ATTN_NOT_SIGNIFICANT, /* dropped: p >= 0.05 or interval reaches 0 */
} cal_attn_decision;

/* How overhead_ms was obtained. */
typedef enum cal_overhead_how {
	CAL_OVH_TIMINGS_MEAN,     /* mean of TTFT - prompt_ms */
	CAL_OVH_TIMINGS_LINE,     /* intercept of TTFT - prompt_ms against prompt tokens */
	CAL_OVH_INTERCEPT,        /* no timings: TTFT intercept minus prefill_base = decode_ms(1) */
	CAL_OVH_INTERCEPT_NEGATIVE, /* no timings, intercept < decode_ms(1): 0, prefill_base the intercept */
} cal_overhead_how;

/* The line through TTFT - prompt_ms against prompt tokens (timings only). */
typedef enum cal_overhead_slope {
	CAL_SLOPE_UNTESTED,       /* fewer than 4 points, one length, or the fit failed */
	CAL_SLOPE_KEPT,           /* positive within its interval, intercept >= 0 */
	CAL_SLOPE_DROPPED,        /* set to 0 */
} cal_overhead_slope;

/* A coefficient as reported: value and 95% interval (NaN: none). */
typedef struct cal_coef_value {
	double value, lo, hi;
} cal_coef_value;

/* What the fit found (owns lin, quad, lvi and P). */
typedef struct cal_prefill {
	int timings;              /* 1: fitted from server prompt_ms (every point had it) */
	size_t n, distinct;       /* points and distinct prompt lengths (10% apart) */
	sb_linfit lin, quad;      /* without / with the P(P-1)/2 term (quad: when tested) */
	cal_attn_decision attn;
	double F, p_value;        /* the F-test (NaN: untested) */
	size_t *lvi;              /* per point: its level */
	double *P;                /* per point: its prompt tokens */
	int ppt_zeroed;           /* per_prefill_token not positive but negligible: set to 0 */
	double ppt_fitted;        /* the slope as fitted (before zeroing) */
	double ppt_fall_ms;       /* -slope x the span of prompt lengths */
	cal_coef_value prefill_base; /* as reported (timings: before clamping at 0) */
	int prefill_base_clamped; /* timings: came out negative, set to 0 */
	cal_overhead_how overhead_how;
	cal_coef_value overhead;  /* as reported (timings: before clamping at 0) */
	int overhead_clamped;     /* timings: came out negative, set to 0 */
	cal_overhead_slope slope_state;
	cal_coef_value overhead_slope; /* ms per prompt token sent (timings) */
	double overhead_slope_se, overhead_slope_cov; /* SLOPE_KEPT: the slope's
				     standard error and its covariance with the
				     intercept (overhead_ms); NaN otherwise */
} cal_prefill;

/* The fit whose coefficients the model takes (quad when the term is kept). */
const sb_linfit *cal_prefill_chosen(const cal_prefill *p);

/* Fits prefill and overhead from d's concurrency-1 levels into *out
 * (zeroed by the caller), using and completing g (decode_1_ms must be set):
 * sets prefill_base_ms, prefill_ms_per_token, prefill_attn_ms, overhead_ms,
 * overhead_se and overhead_ms_per_token. Returns 0, -EINVAL with a message
 * (no TTFT at concurrency 1, one prompt length only, TTFT falling with the
 * prompt, a failed fit) or -ENOMEM. Release *out with cal_prefill_fini
 * either way. */
int cal_prefill_fit(const cal_data *d, cal_engine *g, cal_prefill *out, sb_error *e);
void cal_prefill_fini(cal_prefill *p);

#endif
