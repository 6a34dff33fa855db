/* sbsim_trace.h — `sbsim --trace FILE`: a request trace (core/trace.h)
 * replayed through a model, open loop at the trace's times. */
#ifndef SB_APP_SBSIM_TRACE_H
#define SB_APP_SBSIM_TRACE_H

#include "core/error.h"
#include "core/model.h"
#include "core/trace.h"

typedef struct sb_sbsim_trace {
	const char *path;          /* the trace */
	sb_trace_opts topts;       /* window, speed-up, limit */
	unsigned long seed;
	int no_noise;
	const char *json;          /* results file to write, or NULL */
} sb_sbsim_trace;

/* Loads the trace, replays it on m, prints what it found on stdout and
 * writes the results (one open-loop level with its records) to t->json.
 * Returns 0 or a negative errno with a message. */
int sb_sbsim_trace_run(const sb_sbsim_trace *t, const sb_model *m, sb_error *e);

#endif
