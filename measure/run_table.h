/* run_table.h — a measured results document as the table `servebench run`
 * prints: the target, the prompt sizing, one row per level (TTFT, TPOT,
 * ITL, E2E percentiles, throughput, Little's law), then goodput, schedule
 * lag and error classes per level. */
#ifndef SB_RUN_TABLE_H
#define SB_RUN_TABLE_H

#include <stdio.h>

#include "core/results.h"

/* res: a measured run read back (sb_results_from_json of what
 * sb_run_execute returned; borrowed). */
void sb_run_print_table(FILE *out, const sb_results *res);

#endif
