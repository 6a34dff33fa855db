/* provenance.h — the model's "fit" object: every fitting step's results
 * (their structs) turned into JSON and prose, once, here. The object's
 * keys, numbers and sentences are a contract (app/cmd_calibrate.c's report,
 * tests and scripts read them). Layer 10 of calibrate/ (after split.h):
 * it reads every step's results and computes nothing. */
#ifndef SB_CAL_PROVENANCE_H
#define SB_CAL_PROVENANCE_H

#include <jansson.h>

#include "calibrate/admit.h"
#include "calibrate/cache.h"
#include "calibrate/decode.h"
#include "calibrate/decode1.h"
#include "calibrate/groups.h"
#include "calibrate/noise.h"
#include "calibrate/pinned.h"
#include "calibrate/prefill.h"
#include "calibrate/slotcount.h"
#include "calibrate/split.h"
#include "calibrate/release.h"

/* The results of one calibration's steps (all borrowed). */
typedef struct cal_results {
	const cal_data *data;
	const cal_engine *engine;   /* the coefficients as the model takes them */
	const cal_decode1 *decode1;
	const cal_prefill *prefill;
	const cal_slots *slots;
	const cal_decode *decode;
	const cal_pinned *pinned;
	const cal_noise *noise;
	const cal_admit *admit;
	const cal_split *split;
	const cal_release *release;
	const cal_groups *groups;   /* prompts prefilled together */
	const cal_checks *checks;   /* shape checks of the prompt sweep and groups */
	const cal_cache *cache;     /* the prompt cache (shared-prefix runs) */
} cal_results;

/* The "fit" object for r: a new reference, or NULL when out of memory. */
json_t *cal_provenance_render(const cal_results *r);

#endif
