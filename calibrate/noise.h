/* noise.h — the step noise (kind and cv), the prefill steps' own cv and
 * the overhead's spread, from per-request records (maximum likelihood) or
 * from the TTFT p99 - p50 spreads of level summaries. Layer 7 of
 * calibrate/ (after decode.h). */
#ifndef SB_CAL_NOISE_H
#define SB_CAL_NOISE_H

#include "calibrate/engine.h"
#include "calibrate/fit_noise.h"

/* What the step noise was fitted from. */
typedef enum cal_noise_data {
	CAL_NOISE_TPOT,      /* per-request TPOT / its level's mean at concurrency 1 */
	CAL_NOISE_GAPS,      /* ITL gaps / predicted step (too few requests) */
	CAL_NOISE_SUMMARIES, /* TTFT p99 - p50 of level summaries */
	CAL_NOISE_NO_DATA,   /* nothing: noise-free */
} cal_noise_data;

/* Where prefill_cv came from. */
typedef enum cal_pcv_from {
	CAL_PCV_DECODE_CV,        /* the decode steps' cv (one prompt length) */
	CAL_PCV_TIMINGS,          /* server prompt_ms / predicted prefill (MLE) */
	CAL_PCV_SPREAD_RECORDS,   /* TTFT variance per prompt length (records) */
	CAL_PCV_SPREAD_SUMMARIES, /* TTFT p99 - p50 per prompt length (summaries) */
	CAL_PCV_NO_DATA,
} cal_pcv_from;

/* How overhead_sd_ms was obtained (records). */
typedef enum cal_sd_how {
	CAL_SD_TIMINGS,           /* sd of TTFT - prompt_ms less its growth */
	CAL_SD_SPREAD_INTERCEPT,  /* intercept of the spread fit */
	CAL_SD_RESIDUAL,          /* TTFT residual variance minus the step noise's share */
} cal_sd_how;

/* One summary level's TTFT spread (CAL_NOISE_SUMMARIES). */
typedef struct cal_spread_point {
	size_t level;             /* cal_data.lvs index */
	double ttft_sd_ms;        /* (p99 - p50) / the normal scores' difference */
	double step_ms;           /* its predicted prefill */
} cal_spread_point;

/* What the fit found (owns points). */
typedef struct cal_noise {
	cal_noise_data data;
	sb_noise_kind kind;
	double cv, cv_lo, cv_hi;  /* step cv and its 95% interval (NaN: none) */
	sb_noisefit best, other;  /* records: the chosen kind and the other */
	int have_gaps;            /* records: the ITL gaps were fitted (diagnostic) */
	sb_noisefit gaps;
	double prefill_cv, prefill_cv_lo, prefill_cv_hi;
	cal_pcv_from prefill_cv_from;
	double overhead_sd_ms;
	cal_sd_how sd_how;
	cal_spread_point *points; /* summaries */
	size_t n_points;
} cal_noise;

/* Fits the noise from d with the coefficients of g into *out (zeroed by
 * the caller): from records at concurrency 1 when there are enough, else
 * from the summaries. timings: prefill was fitted from server prompt_ms.
 * Returns 0 or -errno. Release with cal_noise_fini either way. */
int cal_noise_fit(const cal_data *d, const cal_engine *g, int timings, cal_noise *out,
		  sb_error *e);
void cal_noise_fini(cal_noise *n);

#endif
