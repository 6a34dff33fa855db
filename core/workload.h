/* workload.h — what load to offer: shared by `servebench run` (measure/)
 * and `sbsim` (sim/), and read from/written to the "workload" object of
 * results files and scenario files (its fields and defaults:
 * docs/formats.md, "Workload object").
 */
#ifndef SB_WORKLOAD_H
#define SB_WORKLOAD_H

#include <jansson.h>

#include "dist.h"
#include "error.h"
#include "level.h"

typedef enum sb_arrival {
	SB_ARRIVAL_POISSON = 0,
	SB_ARRIVAL_CONSTANT,
	SB_ARRIVAL_GAMMA,
} sb_arrival;

#define SB_WORKLOAD_MAX_LEVELS 64
/* Turns of a conversation when a command asks for conversations without
 * saying how many. */
#define SB_WORKLOAD_TURNS 4

typedef struct sb_workload {
	sb_mode mode;
	double levels[SB_WORKLOAD_MAX_LEVELS];
	int n_levels;
	sb_arrival arrival;
	double arrival_cv;
	sb_dist input_len, output_len, think_s;
	long requests;
	double duration_s;
	long warmup;
	unsigned long seed;
	sb_slo slo;
	/* shared prefixes: every prompt starts with one of prefix_groups
	 * prefixes of prefix_len tokens, drawn uniformly, before its own
	 * input_len tokens (0: none; simulated only, servebench run refuses) */
	long prefix_len, prefix_groups;
	/* conversations (turns.a > 0 or any other kind): each client (closed
	 * loop) or each arrival (open loop: conversations start at the
	 * level's rate) is a conversation of `turns` requests, each sent
	 * think_s after the last one's answer, its prompt the whole history
	 * so far (prompts and answers) and then input_len new tokens.
	 * Default: DET 0, none. */
	sb_dist turns;
} sb_workload;

/* Whether w is a conversation workload (turns set). */
int sb_workload_is_conversation(const sb_workload *w);

/* The defaults above (closed loop, levels {1}, 256 in / 128 out, 64 requests,
 * warm-up 2, seed 1, no SLO, percentile 99). */
void sb_workload_init(sb_workload *w);
/* Overlays the fields present in j onto w; unknown keys are an error (a typo
 * must not be silently ignored). `where` prefixes messages (e.g. a file
 * name). Returns 0 or -EINVAL. */
int sb_workload_from_json(const json_t *j, sb_workload *w, const char *where,
			  sb_error *e);
/* The same, ignoring keys it does not know (for results files, whose
 * workload object carries extra fields such as the API used). */
int sb_workload_from_json_lenient(const json_t *j, sb_workload *w,
				  const char *where, sb_error *e);
/* New JSON object with every field. */
json_t *sb_workload_to_json(const sb_workload *w);
/* Checks consistency (levels > 0, lengths >= 1 ...). */
int sb_workload_validate(const sb_workload *w, sb_error *e);
/* Sets w's mode and levels from the n values of a level list (as
 * sb_parse_double_list reads "1,2,4"): at most SB_WORKLOAD_MAX_LEVELS, and
 * whole numbers of clients in closed loop. `what` names the flag in
 * messages. Returns 0 or -EINVAL with a message (w unchanged). */
int sb_workload_set_levels(sb_workload *w, sb_mode mode, const double *v, size_t n,
			   const char *what, sb_error *e);
const char *sb_arrival_name(sb_arrival a);
int sb_arrival_parse(const char *s, sb_arrival *a, sb_error *e);
/* Next inter-arrival gap in seconds for an open-loop level of rate λ. */
double sb_workload_gap_s(const sb_workload *w, double rate, const gsl_rng *r);
/* A token length drawn from d, rounded, at least 1. */
long sb_workload_len(const sb_dist *d, const gsl_rng *r);

#endif
