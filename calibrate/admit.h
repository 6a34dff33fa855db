/* admit.h — the admission delay of queued requests (model.scheduler.
 * admit_delay_ms), from per-request records of levels above the slot
 * count. Layer 8 of calibrate/ (after noise.h, whose overhead spread sets
 * the tolerance). */
#ifndef SB_CAL_ADMIT_H
#define SB_CAL_ADMIT_H

#include "calibrate/slotcount.h"

/* What the fit found. */
typedef struct cal_admit {
	int identified;        /* 3 or more queued launches bracketed the delay */
	size_t n;              /* launches bracketed */
	size_t agreeing;       /* of them, those sharing the chosen range */
	double lo_ms, hi_ms;   /* that range (NaN: not identified) */
	double value_ms;       /* its middle; 0 when not identified */
	size_t queued_levels;  /* levels above their file's slot count */
} cal_admit;

/* Fits the admission delay from d's queued levels (slot counts from s,
 * overhead from g, jitter tolerance 3 overhead_sd_ms) into *out. Returns 0
 * or -ENOMEM. */
int cal_admit_fit(const cal_data *d, const cal_engine *g, const cal_slots *s,
		  double overhead_sd_ms, cal_admit *out);

#endif
