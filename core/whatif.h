/* whatif.h — the what-if changes one command makes to a model before it
 * simulates: its times scaled by key (model_scale.h), coefficients set by
 * name (model_param.h: "what if form_decode were 0.33"), the slot count
 * simulated, the KV-cache layout (model.h's kv_cache).
 *
 * Why one bundle: `validate` and `sbsim` take the same flags (--scale,
 * --kv-cache; validate also --sim-slots), and their reports and JSON say
 * what was changed in one form ("what_if", docs/formats.md), so a
 * prediction from a deliberately changed model is never mistaken for the
 * model's own.
 */
#ifndef SB_WHATIF_H
#define SB_WHATIF_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"
#include "model.h"
#include "model_param.h"
#include "model_scale.h"

/* The choices of --kv-cache in sb_kv_cache order (a CLI choice's index is
 * the enum value). */
#define SB_WHATIF_KV_CHOICES "unified|per-slot"
/* --prompt-cache's, in sb_prompt_cache order. */
#define SB_WHATIF_PCACHE_CHOICES "none|slot|shared|ram"

/* The most coefficients one --set names. */
#define SB_WHATIF_MAX_SETS 8

typedef struct sb_whatif_set {
	char name[SB_MODEL_PARAM_NAME_MAX];
	double value;
} sb_whatif_set;

typedef struct sb_whatif {
	sb_model_scale scale;
	sb_whatif_set set[SB_WHATIF_MAX_SETS]; /* applied after the scale */
	int n_set;
	long sim_slots; /* slots simulated whatever the server has; 0: not given */
	int kv_cache;   /* an sb_kv_cache; -1: not given */
	int prompt_cache; /* an sb_prompt_cache; -1: not given */
} sb_whatif;

/* Nothing changed. */
void sb_whatif_init(sb_whatif *w);

/* Whether anything is changed. */
int sb_whatif_given(const sb_whatif *w);

/* --set NAME=V[,...] (an sb_cli function): coefficients by their
 * model_param.h names, each a finite number, none twice. Whether m has the
 * name (decode_ms[B] needs the entry) is known only when applied. */
int sb_whatif_set_cli(const char *text, void *dest, const char *flag, sb_error *e);

/* The scale, then the coefficients set, the KV-cache layout and the prompt
 * cache into m.
 * The slot count is left to the caller, which knows the slots a run would
 * otherwise simulate (the server's). Returns 0, or -EINVAL naming a --set
 * name m does not have or a value below its floor (m then partly
 * changed: the caller stops). */
int sb_whatif_apply(const sb_whatif *w, sb_model *m, sb_error *e);

/* {"scale": {...} (sb_model_scale_to_json; {} when none), "set": {NAME:
 * V, ...} ({} when none), "sim_slots": N or null, "kv_cache":
 * "unified"/"per-slot" or null, and "prompt_cache" when given} (new
 * reference; NULL when out of memory). */
json_t *sb_whatif_to_json(const sb_whatif *w);

/* "times scaled all=1.2; set form_decode=0.33; 1 slot simulated; KV cache
 * per-slot" (the parts given, "nothing" when none); cut to len - 1
 * characters. */
void sb_whatif_describe(const sb_whatif *w, char *buf, size_t len);

#endif
