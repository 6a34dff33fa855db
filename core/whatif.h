/* whatif.h — the what-if changes one command makes to a model before it
 * simulates: its times scaled by key (model_scale.h), the slot count
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

#include "model.h"
#include "model_scale.h"

/* The choices of --kv-cache in sb_kv_cache order (a CLI choice's index is
 * the enum value). */
#define SB_WHATIF_KV_CHOICES "unified|per-slot"

typedef struct sb_whatif {
	sb_model_scale scale;
	long sim_slots; /* slots simulated whatever the server has; 0: not given */
	int kv_cache;   /* an sb_kv_cache; -1: not given */
} sb_whatif;

/* Nothing changed. */
void sb_whatif_init(sb_whatif *w);

/* Whether anything is changed. */
int sb_whatif_given(const sb_whatif *w);

/* The scale and the KV-cache layout into m. The slot count is left to the
 * caller, which knows the slots a run would otherwise simulate (the
 * server's). */
void sb_whatif_apply(const sb_whatif *w, sb_model *m);

/* {"scale": {...} (sb_model_scale_to_json; {} when none), "sim_slots": N or
 * null, "kv_cache": "unified"/"per-slot" or null} (new reference; NULL when
 * out of memory). */
json_t *sb_whatif_to_json(const sb_whatif *w);

/* "times scaled all=1.2; 1 slot simulated; KV cache per-slot" (the parts
 * given, "nothing" when none); cut to len - 1 characters. */
void sb_whatif_describe(const sb_whatif *w, char *buf, size_t len);

#endif
