/* types.h — what a calibration is given: its inputs and options. Shared by
 * the facade (calibrate.h) and the fitting steps (data.h and above), so that
 * no step includes the facade: the includes inside calibrate/ point one way,
 * from calibrate.h down through provenance.h to data.h and this file. */
#ifndef SB_CALIBRATE_TYPES_H
#define SB_CALIBRATE_TYPES_H

#include "core/results.h"

typedef struct sb_calib_input {
	const char *name;          /* file name for messages and provenance (borrowed) */
	const sb_results *res;     /* borrowed */
} sb_calib_input;

typedef struct sb_calib_opts {
	int slots;                 /* model slot count; 0: declared or inferred */
	long batch_tokens;         /* 0: from the targets, else 2048 */
	const char *name;          /* model name; NULL: from target.model */
	long ctx_per_slot;         /* 0: the targets' ctx_per_slot (else unlimited) */
	double kv_bytes_per_token; /* 0: the targets' kv_bytes_per_token (else unknown) */
} sb_calib_opts;

#endif
