/* sweep_json.h — a sweep as a results document (schema
 * servebench.results/1, "source": "simulated"): what `sbsim --json` writes,
 * the shared schema plus the simulated target, a "simulation" object and
 * per-level extras (docs/formats.md). "created" comes from
 * SOURCE_DATE_EPOCH when set (reproducible files).
 */
#ifndef SB_SWEEP_JSON_H
#define SB_SWEEP_JSON_H

#include <jansson.h>

#include "core/model.h"
#include "core/workload.h"
#include "sim.h"
#include "sweep.h"

/* What the document describes besides the sweep; all borrowed. */
typedef struct sb_sweep_doc {
	const sb_model *model;
	const sb_sim_opts *opts;
	const sb_workload *w;
	const char *scenario;   /* scenario name, NULL: none */
	int with_requests;      /* per-request records of the first replication */
} sb_sweep_doc;

/* Returns a new results document, NULL when out of memory. plan (may be
 * NULL) is stolen, even on failure. */
json_t *sb_sweep_to_results(const sb_sweep *sw, const sb_sweep_doc *d, json_t *plan);

#endif
