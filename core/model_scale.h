/* model_scale.h — a model's times scaled on purpose, by key: the one
 * definition behind `validate --scale`, `sbsim --scale` and the speed
 * factors of validate/speed.h (sb_speed_scale_model is prompt=FP,
 * decode=FD).
 *
 * Why: an accuracy check must fail when the model is wrong, so the checks
 * replay their measurements through deliberately wrong models too (a slower
 * decode at batch >= 2, a costlier prefill); and a user asks "what if this
 * server were 20% slower". Both need one set of named changes that every
 * command applies alike.
 *
 * Keys and the fields each scales (all milliseconds, so a factor F > 0
 * multiplies them):
 *   prompt          the prompt side: overhead_ms, overhead_sd_ms,
 *                   overhead_per_token_ms, prefill_base_ms,
 *                   per_prefill_token_ms, per_prefill_attn_ms,
 *                   prefill_per_prompt_ms
 *   prefill_token   per_prefill_token_ms and per_prefill_attn_ms only
 *   decode          every decode_ms table entry, every decode_kv entry,
 *                   per_kv_token_ms
 *   decode_batched  decode_ms entries of batch >= 2 only (the line beyond
 *                   the table is fitted through its entries, so it follows;
 *                   a table of batch 1 alone is left unchanged)
 *   all             prompt and decode together (= --speed-factors F,F)
 * The scheduler's times (admit_delay_ms, release_ms) and the noise's cv are
 * not scaled by any key. Keys that overlap multiply: all=1.2,decode=1.1
 * scales the decode passes by 1.32.
 *
 * Text form: "KEY=F[,KEY=F...]", each key at most once.
 */
#ifndef SB_MODEL_SCALE_H
#define SB_MODEL_SCALE_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"
#include "model.h"

typedef enum sb_scale_key {
	SB_SCALE_ALL = 0,
	SB_SCALE_PROMPT,
	SB_SCALE_PREFILL_TOKEN,
	SB_SCALE_DECODE,
	SB_SCALE_DECODE_BATCHED,
	SB_SCALE_N_KEYS
} sb_scale_key;

/* The factor of each key; 0: the key was not given (so a zeroed struct
 * changes nothing). Given factors are positive and finite. */
typedef struct sb_model_scale {
	double f[SB_SCALE_N_KEYS];
} sb_model_scale;

/* Every key not given. */
void sb_model_scale_init(sb_model_scale *s);

/* Whether any key was given. */
int sb_model_scale_given(const sb_model_scale *s);

/* The key's name as written ("decode_batched"). Borrowed, static. */
const char *sb_model_scale_key_name(sb_scale_key k);

/* Parses "KEY=F[,KEY=F...]" into *s (its keys added to those already
 * given). `what` names the flag in messages ("--scale"). Returns 0, or
 * -EINVAL with a message naming the bad part: an unknown key, an item
 * without '=', F not a positive finite number, a key given twice, an empty
 * item; *s is unchanged then. */
int sb_model_scale_parse(const char *text, sb_model_scale *s, const char *what, sb_error *e);

/* sb_model_scale_parse as an sb_cli_parse_fn (core/cli.h): dest is an
 * sb_model_scale. */
int sb_model_scale_cli(const char *text, void *dest, const char *flag, sb_error *e);

/* Multiplies m's fields by the given keys' factors as listed above. Check
 * the result with sb_model_validate (a huge factor may overflow). */
void sb_model_scale_apply(const sb_model_scale *s, sb_model *m);

/* {"all": 1.2, "decode_batched": 1.3}: the given keys in key order, {} when
 * none (new reference; NULL when out of memory). */
json_t *sb_model_scale_to_json(const sb_model_scale *s);

/* "all=1.2,decode_batched=1.3" (the text form, "%g"), "" when none; cut to
 * len - 1 characters. */
void sb_model_scale_format(const sb_model_scale *s, char *buf, size_t len);

#endif
