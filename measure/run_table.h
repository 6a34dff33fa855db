/* run_table.h — a measured results document as the table `servebench run`
 * prints: the target, the prompt sizing, one row per level (TTFT, TPOT,
 * ITL, E2E percentiles, throughput, Little's law), then goodput, schedule
 * lag and error classes per level. */
#ifndef SB_RUN_TABLE_H
#define SB_RUN_TABLE_H

#include <jansson.h>
#include <stdio.h>

/* res: a results document as sb_run_execute returns it (borrowed). */
void sb_run_print_table(FILE *out, const json_t *res);

#endif
