/* decode1.h — the decode step at one sequence: TPOT at concurrency 1
 * against the context, decode_ms(1) + per_kv_token * (prompt + output/2).
 * Layer 3 of calibrate/ (after engine.h). */
#ifndef SB_CAL_DECODE1_H
#define SB_CAL_DECODE1_H

#include "calibrate/engine.h"
#include "calibrate/fit_linear.h"

/* What the fit found (owns f, lvi and x). */
typedef struct cal_decode1 {
	sb_linfit f;            /* coef[0] decode_ms(1), coef[1] per_kv_token when with_kv */
	int with_kv;            /* 1: the slope was fitted and kept */
	double dropped_slope;   /* the negative slope that was dropped; NaN: none */
	double dropped_cov[2][2]; /* the two-term fit's covariance (NaN: none):
				     per_kv_token stays 0, with this spread and
				     its correlation with decode_ms(1)
				     (covariance.h) */
	int contexts_apart;     /* the contexts spanned a factor 1.5 (a slope was identifiable) */
	size_t *lvi;            /* per point of f: its level (cal_data.lvs) */
	double *x;              /* per point of f: its context, prompt + output/2 tokens */
} cal_decode1;

/* Fits TPOT at concurrency 1 from d into *out (zeroed by the caller) and
 * sets g->decode_1_ms, decode_1_se and kv_ms_per_token. Returns 0,
 * -EINVAL with a message (no TPOT at concurrency 1, decode_ms(1) not
 * positive, a failed fit) or -ENOMEM. Release *out with
 * cal_decode1_fini either way. */
int cal_decode1_fit(const cal_data *d, cal_engine *g, cal_decode1 *out, sb_error *e);
void cal_decode1_fini(cal_decode1 *r);

#endif
