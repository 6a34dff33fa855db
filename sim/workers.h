/* workers.h — units of work spread over threads, with results that do not
 * depend on how many.
 *
 * sb_workers_run calls fn(ctx, i, e) once for every i in [0, n), on up to
 * `jobs` threads (the caller's among them). Units must not share mutable
 * state: each writes only its own output slot and draws only from its own
 * random stream (the simulator's units: one replication = one
 * sb_sim_run_level call with its own seed), so the results are the same
 * for any jobs. The error returned is that of the lowest-numbered unit that
 * failed (also the same for any jobs); units after a failure may still
 * run.
 */
#ifndef SB_WORKERS_H
#define SB_WORKERS_H

#include "core/error.h"

typedef int (*sb_work_fn)(void *ctx, int i, sb_error *e);

/* Returns 0, or the lowest failing unit's negative errno with its message
 * in e (-ENOMEM when the bookkeeping cannot be allocated). jobs < 1 counts
 * as 1: everything on the caller's thread. When a thread cannot be
 * started, the units run on those that did. */
int sb_workers_run(int n, int jobs, sb_work_fn fn, void *ctx, sb_error *e);

#endif
