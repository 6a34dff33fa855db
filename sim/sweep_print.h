/* sweep_print.h — a sweep as text: sbsim's table of levels and the notes
 * under it (capacity, overload, rejections, the knee). */
#ifndef SB_SWEEP_PRINT_H
#define SB_SWEEP_PRINT_H

#include <stdio.h>

#include "core/model.h"
#include "core/workload.h"
#include "sim.h"
#include "sweep.h"

/* Writes the capacity line, the table (one row per level; "±" columns with
 * replications; goodput only with an SLO), and a line for every overloaded,
 * diverged or rejecting level, then the knee. m, o, w: what sw ran. */
void sb_sweep_print(FILE *out, const sb_sweep *sw, const sb_model *m, const sb_sim_opts *o,
		    const sb_workload *w);

#endif
