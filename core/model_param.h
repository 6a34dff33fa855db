/* model_param.h — a model coefficient by name: the one mapping between the
 * names in a model file's "fit.covariance" (docs/formats.md) and the fields
 * of sb_model, used by calibrate (which writes the names) and by sbsim's
 * parameter draws (which set the values).
 *
 * Names: "decode_ms[B]" and "decode_kv[B]" (the table entry at batch B,
 * which must exist), "per_kv_token", "per_prefill_token",
 * "per_prefill_attn", "prefill_base", "overhead_ms",
 * "overhead_per_prompt_token", "admit_delay_ms", and for a vllm engine
 * (core/model.h) "base" and "per_seq" of its decode line (the table
 * {1: base + per_seq, 2: base + 2 per_seq}; setting one keeps the other).
 * All are ms (per token
 * where the name says so) and valid when >= 0; decode_ms entries must be
 * > 0. "form_decode" (model.h: the relative error of decode_ms beyond the
 * table per step of its last spacing) has no unit and either sign.
 */
#ifndef SB_MODEL_PARAM_H
#define SB_MODEL_PARAM_H

#include "error.h"
#include "model.h"

/* The longest name, with its NUL. */
#define SB_MODEL_PARAM_NAME_MAX 48

/* *v = the coefficient `name` of m. Returns 0, or -EINVAL naming `name`
 * when it names no coefficient of m. */
int sb_model_param_get(const sb_model *m, const char *name, double *v, sb_error *e);
/* Sets the coefficient `name` of m to v (not checked: see
 * sb_model_param_floor). Returns 0 or -EINVAL as sb_model_param_get. */
int sb_model_param_set(sb_model *m, const char *name, double v, sb_error *e);
/* The least valid value of the coefficient `name`: 0, for decode_ms
 * entries a small positive floor (SB_MODEL_PARAM_DECODE_FLOOR_MS), for
 * form_decode -INFINITY. */
double sb_model_param_floor(const char *name);

#define SB_MODEL_PARAM_DECODE_FLOOR_MS 1e-3

#endif
