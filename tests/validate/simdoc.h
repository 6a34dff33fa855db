/* simdoc.h — test helper: a "measured" results document made by the
 * simulator itself (per-request records of sb_sim_run_level), so the
 * comparison can be checked against a known truth. */
#ifndef SB_TEST_SIMDOC_H
#define SB_TEST_SIMDOC_H

#include <jansson.h>

#include "core/model.h"
#include "core/route.h"
#include "core/workload.h"

/* Simulates every level of w (its mode; rates are req/s) on m with the given
 * seed and returns a new results document with "source": "measured" and one
 * record per counted request. NULL on failure (message printed). */
json_t *simdoc_make(const sb_model *m, const sb_workload *w, unsigned long seed);

/* The same for a simulated fleet of `replicas` copies of m behind route,
 * without noise: target.replicas (each m's slots) and target.route as
 * `servebench run --url A --url B --route R` writes them, records tagged
 * with their replica. */
json_t *simdoc_make_fleet(const sb_model *m, const sb_workload *w, unsigned long seed,
			  int replicas, sb_route route);

#endif
