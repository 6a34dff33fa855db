/* slotcount.h — the model's slot count and each input's: --slots, the
 * files' declared target.slots, else inferred from their levels (slots.h).
 * Layer 5 of calibrate/ (after prefill.h: the inference compares TTFT
 * with the one-wave prediction). */
#ifndef SB_CAL_SLOTCOUNT_H
#define SB_CAL_SLOTCOUNT_H

#include <jansson.h>

#include "calibrate/engine.h"
#include "calibrate/slots.h"

/* Where a slot count came from. */
typedef enum cal_slots_from {
	CAL_SLOTS_DECLARED,     /* the file's target.slots */
	CAL_SLOTS_OPTION,       /* --slots */
	CAL_SLOTS_NOT_MEASURED, /* no level with 2+ clients: takes the other inputs' count */
	CAL_SLOTS_INFERRED,     /* from its levels (sb_slots_infer) */
} cal_slots_from;

/* One input's slot count. */
typedef struct cal_file_slots {
	int slots;
	cal_slots_from from;
	long declared;          /* target.slots, -1: none */
	sb_slot_guess guess;    /* what its levels suggest */
	json_t *levels;         /* the inference's per-level estimates (owned) */
	int option_disagrees;   /* --slots differs from a high/medium-confidence guess */
	int declared_disagrees; /* target.slots outside the range the levels allow */
} cal_file_slots;

/* The slot counts (owns files). */
typedef struct cal_slots {
	int slots;              /* the model's */
	cal_slots_from from;    /* OPTION, INFERRED or DECLARED */
	const char *confidence; /* of the guess that decided it (static), NULL: none */
	char why[400];
	int unknown;            /* no sweep: 1 assumed */
	cal_file_slots *files;  /* per input */
	size_t n_files;
} cal_slots;

/* The slot counts of d's inputs and the model's into *out (zeroed by the
 * caller), with the predictions of g. Returns 0, -EINVAL when the inputs
 * disagree and no --slots (o->slots) chooses, or -ENOMEM. Release with
 * cal_slots_fini either way. */
int cal_slots_resolve(const cal_data *d, const cal_engine *g, const sb_calib_opts *o,
		      cal_slots *out, sb_error *e);
void cal_slots_fini(cal_slots *s);

#endif
