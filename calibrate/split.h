/* split.h — how often the server prefills requests that reach it together
 * in separate steps (model.scheduler.split_prob, split_prob_crowded), from
 * per-request records. Layer 9 of calibrate/ (after admit.h); the method
 * is described in split.c. */
#ifndef SB_CAL_SPLIT_H
#define SB_CAL_SPLIT_H

#include "calibrate/engine.h"

/* One class of groups: [0] no larger than the slot count, [1] larger
 * (crowded). */
typedef struct cal_split_class {
	long trials, splits;
	double value;          /* splits / trials; without trials the other class's value */
	double lo, hi;         /* exact (Clopper-Pearson) 95% interval; NaN without trials */
} cal_split_class;

typedef struct cal_split {
	cal_split_class cls[2]; /* [0] split_prob, [1] split_prob_crowded */
} cal_split;

/* Counts the splits in d's closed-loop levels with records (slots: the
 * model's slot count; prefill predictions from g) into *out. Returns 0 or
 * -ENOMEM. */
int cal_split_fit(const cal_data *d, const cal_engine *g, int slots, cal_split *out);

#endif
