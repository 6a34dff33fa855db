/* pinned.h — decode passes measured with requests pinned to slots.
 *
 * llama.cpp with -np N keeps a KV-cache stream per slot and computes a step
 * as one pass per run of consecutive busy slots (model.h, kv_cache), so a
 * level's TPOT mixes passes of several sizes unless the slots are known.
 * `calibrate --url` therefore measures closed-loop levels whose requests are
 * pinned to slots 0..B-1 (results' target.pin_stride 1): every step is one
 * pass of B sequences, and TPOT = decode_ms(B) + decode_kv(B) * (the B
 * contexts summed). At two context lengths that gives both per B. A level
 * pinned to slots 0, 2 (stride 2) tells the layout: per-slot, it costs two
 * passes of one; unified, one pass of two.
 *
 * Files with target.pin_stride > 0 are read here only (collect.c leaves
 * them to this step). Layer 7 of calibrate/ (after decode.h). */
#ifndef SB_CAL_PINNED_H
#define SB_CAL_PINNED_H

#include "calibrate/data.h"
#include "calibrate/engine.h"
#include "core/model.h"

/* One pinned level: its requests' TPOT (the server's decode time per token
 * when it reports one, else the client's). */
typedef struct cal_pin_level {
	size_t file;
	int stride, batch;  /* slots 0, stride, ..., (batch-1)*stride */
	double ctx;         /* tokens of context of the batch (its requests'
			       prompt + output/2, times batch) */
	double tpot_ms;     /* median over its requests */
	long n;             /* requests */
	long waves;         /* waves of them sent together (independent points) */
} cal_pin_level;

/* A decode batch size's fit. */
typedef struct cal_pin_entry {
	int batch;
	double ms, ms_se;   /* decode_ms(batch), its standard error */
	double kv, kv_se;   /* decode_kv(batch); kv_se NaN when not fitted */
	double ms_kv_cov;   /* covariance of ms and kv from their line; NaN when
			       kv was not fitted */
	int kv_fitted;      /* contexts far enough apart to fit kv */
	long n;             /* requests behind it */
	long dof;           /* degrees of freedom of ms_se (waves less the
			       terms fitted) */
	int below;          /* ms is below the previous entry by more than 2 se */
	int remeasured;     /* measured at more than one time (the plan's recheck) */
} cal_pin_entry;

typedef struct cal_pinned {
	cal_pin_level *lv;  /* owned */
	size_t n_lv;
	cal_pin_entry tab[SB_MODEL_MAX_DECODE]; /* batch ascending, from 2 */
	int n_tab;
	/* the layout, from a stride-2 pair when measured */
	int has_layout;
	double strided_ms, per_slot_ms, unified_ms; /* measured, and the two predictions */
	sb_kv_cache layout;
} cal_pinned;

/* Fits *out (zeroed by the caller) from d's pinned inputs with decode_ms(1)
 * and its context cost from g. Finds nothing (n_tab 0) without pinned
 * inputs. Returns 0 or -ENOMEM; release with cal_pinned_fini either way. */
int cal_pinned_fit(const cal_data *d, const cal_engine *g, cal_pinned *out, sb_error *e);
void cal_pinned_fini(cal_pinned *p);

#endif
